"""What the Spark benchmark measures (bench/spark.py): the CPU seconds of the machine and of
each process of this tree from ``/proc``, one timed run, the query shapes, and everything
measured under one master setting."""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MASTERS = ("local[1]", "local[2]")


_TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class CpuSnapshot:
    """Cumulative CPU seconds: the whole machine (busy), and each process of this tree."""

    busy: float
    procs: dict[int, tuple[str, float]]  # pid -> (kind: driver/jvm/workers, CPU seconds)


def _system_busy() -> float:
    """Busy CPU seconds of the whole machine since boot (all cores)."""
    with open("/proc/stat") as f:
        parts = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = parts[:8]
    return (user + nice + system + irq + softirq + steal) / _TICK


def cpu_snapshot(root: int | None = None) -> CpuSnapshot:
    """Sample /proc: machine busy time, and the CPU time of ``root`` and its descendants.

    Each process counts its own time plus that of children it reaped. Spark's daemon ignores
    SIGCHLD, so a Python worker that exits takes its time with it: :func:`cpu_delta` counts
    the processes alive at the end of an interval.
    """
    root = os.getpid() if root is None else root
    procs: dict[int, tuple[int, str, float]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                raw = f.read()
        except OSError:
            continue
        comm = raw[raw.index("(") + 1 : raw.rindex(")")]
        rest = raw.rsplit(")", 1)[1].split()
        cpu = sum(int(x) for x in rest[11:15]) / _TICK  # utime stime cutime cstime
        procs[int(name)] = (int(rest[1]), comm, cpu)
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    tree: dict[int, tuple[str, float]] = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid not in procs:
            continue
        _, comm, cpu = procs[pid]
        kind = "driver" if pid == root else "jvm" if comm.startswith("java") else "workers"
        tree[pid] = (kind, cpu)
        todo.extend(children.get(pid, ()))
    return CpuSnapshot(_system_busy(), tree)


def cpu_delta(a: CpuSnapshot, b: CpuSnapshot) -> dict[str, float]:
    """CPU seconds between two snapshots: per kind of process, and ``others`` (rest of machine)."""
    out = {"driver": 0.0, "jvm": 0.0, "workers": 0.0}
    for pid, (kind, cpu) in b.procs.items():
        before = a.procs.get(pid)
        out[kind] += max(0.0, cpu - (before[1] if before else 0.0))
    ours = sum(out.values())
    out["others"] = max(0.0, (b.busy - a.busy) - ours)
    return out


@dataclass
class Sample:
    """One timed run: wall seconds (DataFrame build + action), CPU seconds by kind."""

    wall: float
    build: float
    driver: float
    jvm: float
    workers: float
    others: float  # CPU seconds used on the machine outside this process tree
    result: Any = None

    @property
    def ours(self) -> float:
        """CPU seconds of this process tree."""
        return self.driver + self.jvm + self.workers


def timed(fn: Callable[[], tuple[float, Any]]) -> Sample:
    """Run ``fn`` (returning (build seconds, result)) and sample wall and CPU time around it."""
    gc.collect()
    a = cpu_snapshot()
    t0 = time.perf_counter()
    build, result = fn()
    wall = time.perf_counter() - t0
    d = cpu_delta(a, cpu_snapshot())
    return Sample(wall, build, d["driver"], d["jvm"], d["workers"], d["others"], result)


@dataclass(frozen=True)
class Query:
    """A query shape: ``count`` or ``aggregate``, over the ``full`` or ``narrow`` schema."""

    kind: str
    schema: str

    @property
    def label(self) -> str:
        """E.g. ``aggregate, full schema``."""
        return f"{self.kind}, {self.schema} schema"


QUERIES = tuple(Query(k, s) for s in ("full", "narrow") for k in ("count", "aggregate"))


@dataclass
class MasterResult:
    """Everything measured under one master setting."""

    master: str
    conf: dict[str, str]
    effective: dict[str, str]
    partitions: dict[str, int]
    warmup: dict[tuple[str, Query], Sample] = field(default_factory=dict)
    samples: dict[tuple[str, Query], list[Sample]] = field(default_factory=dict)
    probe: list[list[tuple]] = field(default_factory=list)
    traces: dict[tuple[str, Query], dict[str, float]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def best(self, source: str, q: Query) -> Sample:
        """The fastest timed run."""
        return min(self.samples[(source, q)], key=lambda s: s.wall)
