"""The decode benchmark's report (bench/decode.py): the machine it ran on, the tables of
throughput, ratios against the peers measured in the same run and verdicts against the
targets, startup and RSS, and the Markdown summary."""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from decode_cases import MB, REPO, STARTUP_CASE, STARTUP_MIB, MiB, Result

# targets (see the project brief); None = no target for this kind of case
TARGET_AIO_ITER = 2.5  # v2 uncompressed: ours >= 2.5x aiokafka iterate
TARGET_AIO_ARROW = 12.0  # v2 uncompressed: ours >= 12x aiokafka -> Arrow
TARGET_OVERHEAD = 1.6  # compressed: ours <= 1.6x decompress-only (aim 1.3)
AIM_OVERHEAD = 1.3
TARGET_WARM_S = 1.0
TARGET_RSS_MIB = 128.0


def _kernel_build() -> str:
    """The kernels this tree decodes with: its C extension's build, or numba (older trees)."""
    try:
        from kafkalog_source.kernel.compiled import BUILD

        return f"C extension ({BUILD})"
    except ImportError:
        import numba

        return f"numba {numba.__version__}"


def machine_facts() -> dict[str, str]:
    """CPU model, cores, Python and library versions, load, and the library's git state."""
    import aiokafka
    import kafka
    import numpy
    import pyarrow

    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "kafkalog_source"],
            cwd=REPO,
            capture_output=True,
            text=True,
        ).stdout.strip()
        git = f"{head}{' + uncommitted changes in kafkalog_source/' if dirty else ''}"
    except OSError:
        git = "?"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return {
        "CPU": cpu,
        "cores": str(os.cpu_count()),
        "Python": platform.python_version(),
        "kernels": _kernel_build(),
        "pyarrow": pyarrow.__version__,
        "numpy": numpy.__version__,
        "aiokafka": aiokafka.__version__,
        "kafka-python": kafka.__version__,
        "OS": platform.platform(),
        "load average (1/5/15 min)": load,
        "kafkalog git": git,
    }


def sig(x: float | None, digits: int = 3) -> str:
    """Format ``x`` with about ``digits`` significant digits ('-' when missing)."""
    if x is None or x != x:
        return "-"
    if x == 0:
        return "0"
    mag = len(str(int(abs(x)))) if abs(x) >= 1 else 0
    return f"{x:.{max(0, digits - mag)}f}"


def verdict(value: float | None, target: float | None, higher_is_better: bool) -> str:
    """'ok' or 'MISS' against a target; empty when there is no target."""
    if value is None or target is None or value != value:
        return ""
    good = value >= target if higher_is_better else value <= target
    return "ok" if good else "MISS"


def targets_for(r: Result) -> tuple[float | None, float | None, float | None]:
    """(aiokafka iterate, aiokafka->Arrow, compressed overhead) targets for this case."""
    if r.case.v2_plain:
        return TARGET_AIO_ITER, TARGET_AIO_ARROW, None
    if r.case.compressed:
        return None, None, TARGET_OVERHEAD
    return None, None, None


def print_table(headers: list[str], rows: list[list[str]], right: set[int]) -> None:
    """Print an aligned plain-text table."""
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        """One aligned row."""
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    print(line(headers))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(line(row))


def report(results: list[Result], kp_mib: float, clock: str) -> None:
    """Print the throughput and ratio tables."""
    print(
        f"\nThroughput by {clock} time (M rec/s = 10^6 records/s; MB/s = 10^6 bytes of segment "
        "input per second)"
    )
    headers = [
        "case",
        "MiB",
        "records",
        "ours Mrec/s",
        "ours MB/s",
        "narrow Mrec/s",
        "narrow MB/s",
        "aio iter Mrec/s",
        "aio->Arrow Mrec/s",
        "kafka-py* Mrec/s",
        "decomp-only MB/s",
    ]
    rows = []
    for r in results:
        size = r.seg.size
        rows.append(
            [
                r.case.name,
                f"{size / MiB:.0f}",
                str(r.seg.records),
                sig(r.ours_rps / 1e6),
                sig(size / r.ours / MB),
                sig(r.rate(r.narrow) / 1e6),
                sig(size / r.narrow / MB),
                sig(r.rate(r.aio_iter) / 1e6),
                sig(r.rate(r.aio_arrow) / 1e6),
                sig(r.kp_rps / 1e6),
                sig(size / r.decompress / MB) if r.decompress else "-",
            ]
        )
    print_table(headers, rows, set(range(1, len(headers))))
    print(
        f"* kafka-python is measured on the first ~{kp_mib:g} MiB of whole batches of each file "
        "and reported per record (and per byte of that prefix)."
    )

    print(
        "\nRatios (speed-ups of ours, full schema; overhead = our decode time / decompress-only"
        " time)"
    )
    headers = [
        "case",
        "vs aio iter",
        "target",
        "vs aio->Arrow",
        "target",
        "vs kafka-py",
        "narrow gain",
        "no-CRC vs aio iter",
        "ours / file copy",
        "compressed overhead",
        "target",
    ]
    rows = []
    for r in results:
        t_it, t_arrow, t_over = targets_for(r)
        over = r.overhead
        rows.append(
            [
                r.case.name,
                f"{r.vs_aio_iter:.2f}x",
                f">={t_it:g}x {verdict(r.vs_aio_iter, t_it, True)}" if t_it else "",
                f"{r.vs_aio_arrow:.1f}x",
                f">={t_arrow:g}x {verdict(r.vs_aio_arrow, t_arrow, True)}" if t_arrow else "",
                f"{r.vs_kp:.0f}x",
                f"{r.ours / r.narrow:.2f}x",
                f"{r.aio_iter / r.nocrc:.2f}x" if r.nocrc == r.nocrc else "-",
                f"{r.ours / r.copy:.1f}" if r.copy == r.copy else "-",
                f"{over:.2f}" if over is not None else "-",
                f"<={t_over:g} (aim {AIM_OVERHEAD:g}) {verdict(over, t_over, False)}"
                if t_over
                else "",
            ]
        )
    print_table(headers, rows, {1, 3, 5, 6, 7, 8, 9})
    for r in results:
        for w in r.warnings:
            print(f"WARNING {r.case.name}: {w}")


def report_startup(st: dict[str, Any]) -> None:
    """Print the cold/warm start figures."""
    cold, warm = st["cold"], st["warm"]
    print(f"\nStart-up, fresh process, time to first RecordBatch of {st['file']}:")
    print(
        f"  cold (fresh process, empty caches): {cold['first_batch_s']:.2f}s in-process "
        f"(imports {cold['import_s']:.2f}s, process CPU {cold['cpu_s']:.2f}s), "
        f"{st['cold_wall']:.2f}s wall incl. interpreter; "
        f"{st['cache_entries']} kernel cache index files written"
    )
    print(
        f"  warm (that cache, best of {st['warm_runs']}): {warm['first_batch_s']:.2f}s in-process "
        f"(imports {warm['import_s']:.2f}s, process CPU {warm['cpu_s']:.2f}s), "
        f"{st['warm_wall']:.2f}s wall  "
        f"[target <= {TARGET_WARM_S:g}s: "
        f"{verdict(warm['first_batch_s'], TARGET_WARM_S, False)}]"
    )


def report_rss(rss: list[dict[str, Any]]) -> None:
    """Print the peak RSS growth figures."""
    for m in rss:
        print(
            f"\nPeak RSS streaming {m['case']} ({m['file_mib']:.0f} MiB, {m['rows']} rows): "
            f"peak {m['imported_mib']:.0f} MiB after imports, {m['before_mib']:.0f} MiB after a "
            f"1 MiB warm-up, {m['after_mib']:.0f} MiB after streaming: growth "
            f"{m['growth_mib']:.0f} MiB "
            f"[target <= {TARGET_RSS_MIB:g} MiB: "
            f"{verdict(m['growth_mib'], TARGET_RSS_MIB, False)}]; "
            f"largest batch {m['biggest_batch_mib']:.0f} MiB; {m['wall']:.1f}s"
        )
        if m["rows"] != m["expected_rows"]:
            print(f"WARNING: streamed {m['rows']} rows, expected {m['expected_rows']}")


def markdown(
    results: list[Result],
    startup: dict[str, Any] | None,
    rss: list[dict[str, Any]],
    facts: dict[str, str],
    args: argparse.Namespace,
) -> str:
    """The results as Markdown, ready for the README."""
    out = [
        f"Segments of ~{args.size_mib:g} MiB, 16 KiB batches; best of {args.repeat} by "
        f"{args.clock} time. "
        "Rates in 10^6 records/s; MB/s of segment input. kafka-python measured on the first "
        f"~{args.kp_mib:g} MiB. Speed-ups are ours (full schema) over the other reader; "
        "overhead = ours / decompress-only.",
        "",
        "| case | ours Mrec/s | ours MB/s | narrow Mrec/s | aiokafka iter Mrec/s "
        "| aiokafka→Arrow Mrec/s | kafka-python Mrec/s | × aiokafka iter | × aiokafka→Arrow "
        "| × kafka-python | × aiokafka iter, no CRC | ÷ file copy | compressed overhead |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        t_it, t_arrow, t_over = targets_for(r)
        mark = {"ok": " ✓", "MISS": " ✗", "": ""}
        over = r.overhead
        out.append(
            f"| {r.case.name} | {sig(r.ours_rps / 1e6)} | {sig(r.seg.size / r.ours / MB)} "
            f"| {sig(r.rate(r.narrow) / 1e6)} | {sig(r.rate(r.aio_iter) / 1e6)} "
            f"| {sig(r.rate(r.aio_arrow) / 1e6)} | {sig(r.kp_rps / 1e6)} "
            f"| {r.vs_aio_iter:.2f}{mark[verdict(r.vs_aio_iter, t_it, True)]} "
            f"| {r.vs_aio_arrow:.1f}{mark[verdict(r.vs_aio_arrow, t_arrow, True)]} "
            f"| {r.vs_kp:.0f} "
            f"| {f'{r.aio_iter / r.nocrc:.2f}' if r.nocrc == r.nocrc else '–'} "
            f"| {f'{r.ours / r.copy:.1f}' if r.copy == r.copy else '–'} "
            f"| {f'{over:.2f}' if over is not None else '–'}{mark[verdict(over, t_over, False)]} |"
        )
    out.append("")
    out.append(
        f"Targets: v2 uncompressed ≥ {TARGET_AIO_ITER:g}× aiokafka iterate and "
        f"≥ {TARGET_AIO_ARROW:g}× aiokafka→Arrow; compressed overhead ≤ {TARGET_OVERHEAD:g} "
        f"(aim {AIM_OVERHEAD:g}); warm start ≤ {TARGET_WARM_S:g} s; RSS growth ≤ "
        f"{TARGET_RSS_MIB:g} MiB."
    )
    if startup:
        out.append("")
        out.append(
            f"Time to first batch in a fresh process ({STARTUP_CASE}, {STARTUP_MIB:g} MiB): "
            f"cold (fresh process, empty caches) {startup['cold']['first_batch_s']:.2f} s, "
            f"warm {startup['warm']['first_batch_s']:.2f} s."
        )
    for m in rss:
        out.append("")
        out.append(
            f"Peak RSS growth streaming a {m['file_mib']:.0f} MiB {m['case']} segment: "
            f"{m['growth_mib']:.0f} MiB."
        )
    out.append("")
    out.append("Machine: " + "; ".join(f"{k} {v}" for k, v in facts.items()) + ".")
    return "\n".join(out)
