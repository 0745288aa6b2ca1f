"""Reads run by tests/test_cluster.py on a Spark cluster of separate executor processes.

Run as ``python tests/cluster_job.py SPEC.json``; prints one JSON document on stdout. Spark can
host one SparkContext per JVM and the test session already has a ``local[2]`` one, so the
cluster session lives in this subprocess.

SPEC keys:

* ``master``: e.g. ``local-cluster[2,1,1024]`` (a master and two workers inside the driver JVM,
  each worker starting an executor JVM of its own, whose Python workers run the decoder);
* ``work_dir``: a scratch directory. local-cluster workers write executor logs to
  ``$SPARK_HOME/work``; SPARK_HOME becomes a directory of links to pyspark's files under
  ``work_dir``, so those logs land there and not in the installed package;
* ``conf``: extra Spark settings (``spark.executorEnv.PYTHONPATH`` and so on);
* ``reads``: ``{name: {"paths": [...], "options": {...}}}``.

Each read is collected with a Python UDF column ``who``, evaluated in the task that read the row:
``executor id|executor JVM pid|Python worker pid|Spark partition id|JIT modules loaded|kafkalog
path``, the executor id taken from the ``--executor-id`` argument of the JVM that started the
Python worker (``driver`` when there is none, as in ``local[N]``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def private_spark_home(work_dir: Path) -> Path:
    """A SPARK_HOME of links to the pip-installed pyspark, whose ``work/`` is our own."""
    import pyspark

    source = Path(pyspark.__file__).resolve().parent
    home = work_dir / "spark-home"
    home.mkdir(parents=True, exist_ok=True)
    for entry in source.iterdir():
        link = home / entry.name
        if entry.name != "work" and not link.exists():
            link.symlink_to(entry)
    return home


def who() -> str:
    """Where this Python worker runs: see the module docstring."""
    from pyspark import TaskContext

    import kafkalog_source

    pid = os.getpid()
    executor, jvm, p = "driver", None, pid
    for _ in range(16):
        try:
            with open(f"/proc/{p}/stat", "rb") as f:
                p = int(f.read().rsplit(b")", 1)[1].split()[1])  # the parent's pid
            with open(f"/proc/{p}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            break
        if os.path.basename(argv[0]) == b"java":
            jvm = p
            if b"--executor-id" in argv:
                executor = argv[argv.index(b"--executor-id") + 1].decode()
            break
        if p <= 1:
            break
    task = TaskContext.get()
    part = task.partitionId() if task is not None else -1
    jit = ",".join(m for m in ("numba", "llvmlite") if m in sys.modules) or "-"
    where = os.path.dirname(os.path.dirname(os.path.abspath(kafkalog_source.__file__)))
    return f"{executor}|{jvm}|{pid}|{part}|{jit}|{where}"


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds used so far by ``root`` and every process below it (Linux /proc; else 0)."""
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    children: dict[int, list[int]] = {}
    stats: dict[int, list[bytes]] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry)] = fields
            children.setdefault(int(fields[1]), []).append(int(entry))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        fields = stats.get(pid)
        if fields is not None:  # utime, stime, cutime, cstime: fields 14-17 of /proc/pid/stat
            total += sum(int(x) for x in fields[11:15])
        todo.extend(children.get(pid, []))
    return total / ticks


def plain(value: Any) -> Any:
    """A collected value as JSON: bytes as hex, rows as lists."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def main(spec_path: str) -> None:
    """Start the cluster session, run every read, print the results as JSON."""
    spec = json.loads(Path(spec_path).read_text())
    work_dir = Path(spec["work_dir"])
    os.environ["SPARK_HOME"] = str(private_spark_home(work_dir))
    sys.path.insert(0, str(ROOT))

    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    from kafkalog_source.spark.session import local_session

    t0 = time.monotonic()
    spark = local_session("kafkalog-cluster-test", master=spec["master"], extra_conf=spec["conf"])
    timings = {"session": time.monotonic() - t0, "session_cpu": tree_cpu_seconds(os.getpid())}
    jvm = spark.sparkContext._jvm
    out: dict[str, Any] = {
        "master": spark.sparkContext.master,
        "driver_python_pid": os.getpid(),
        "driver_jvm_pid": int(jvm.java.lang.ProcessHandle.current().pid()),
        "reads": {},
        "timings": timings,
    }
    who_udf = F.udf(who, StringType(), useArrow=False).asNondeterministic()
    columns = [
        "topic",
        "partition",
        "offset",
        F.unix_millis("timestamp").alias("ts"),
        "key",
        "value",
        "headers",
        who_udf().alias("who"),
    ]
    for name, read in spec["reads"].items():
        t = time.monotonic()
        df = spark.read.format("kafkalog").options(**read["options"]).load(read["paths"])
        out["reads"][name] = [plain(list(r)) for r in df.select(*columns).collect()]
        timings[name] = time.monotonic() - t
        timings[f"{name}_cpu"] = tree_cpu_seconds(os.getpid())
    timings["cpu_before_stop"] = tree_cpu_seconds(os.getpid())
    t = time.monotonic()
    spark.stop()
    timings["stop"] = time.monotonic() - t
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
