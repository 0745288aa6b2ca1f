"""The Spark benchmark's report (bench/spark.py): the tables per master with ratios against the
ceiling and Parquet measured in the same run, the scaling between masters, the effective
settings, the Markdown summary and the machine it ran on."""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
from pathlib import Path

import pyarrow as pa
from spark_data import Dataset, MiB
from spark_measure import MASTERS, QUERIES, MasterResult

TARGET_VS_CEILING = 0.9  # kafkalog throughput >= 0.9x the ceiling's
TARGET_SCALING = 1.7  # local[2] / local[1] throughput on one large segment


def verdict(value: float, target: float) -> str:
    """'ok' or 'MISS' for a higher-is-better value."""
    return "ok" if value >= target else "MISS"


def print_table(headers: list[str], rows: list[list[str]]) -> None:
    """Print an aligned plain-text table (first column left, the rest right)."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        """One aligned row."""
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    print(line(headers))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(line(r))


def report_master(ds: Dataset, res: MasterResult, sources: tuple[str, ...]) -> None:
    """Seconds per query, ratios, and where the CPU went, for one master."""
    print(
        f"\n{res.master}: best of {len(next(iter(res.samples.values())))} (seconds, DataFrame "
        "build + action); x = kafkalog throughput / other's; CPU columns are CPU seconds of the "
        "best run (JVM / Python workers) and cores used by other processes on the machine"
    )
    headers = ["query", *(f"{s} s" for s in sources), "Mrows/s"]
    if "ceiling" in sources:
        headers += ["x ceiling", f">={TARGET_VS_CEILING:g}"]
    if "parquet" in sources:
        headers += ["x Parquet"]
    headers += [f"{s} CPU jvm/py" for s in sources if s != "parquet"] + ["others cores"]
    rows = []
    for q in QUERIES:
        best = {s: res.best(s, q) for s in sources}
        k = best["kafkalog"]
        row = [
            q.label,
            *(f"{best[s].wall:.2f}" for s in sources),
            f"{ds.records / k.wall / 1e6:.2f}",
        ]
        if "ceiling" in sources:
            ratio = best["ceiling"].wall / k.wall
            row += [f"{ratio:.2f}", verdict(ratio, TARGET_VS_CEILING)]
        if "parquet" in sources:
            row += [f"{best['parquet'].wall / k.wall:.2f}"]
        row += [f"{best[s].jvm:.1f}/{best[s].workers:.1f}" for s in sources if s != "parquet"]
        others = sum(b.others for b in best.values()) / sum(b.wall for b in best.values())
        row += [f"{others:.2f}"]
        rows.append(row)
    print_table(headers, rows)
    warm = ", ".join(f"{s} {res.warmup[(s, QUERIES[0])].wall:.1f}s" for s in sources)
    print(f"  first (warm-up) run of '{QUERIES[0].label}': {warm}")
    builds = ", ".join(
        f"{s} {min(x.build for x in res.samples[(s, q)]) * 1e3:.0f} ms"
        for s in sources
        for q in QUERIES[:1]
    )
    print(f"  DataFrame build (load(), schema resolution), included above: {builds}")
    pids = [{r[0] for r in rows} for rows in res.probe]
    reused = len(pids) == 2 and pids[0] == pids[1]
    loaded = all(r[2] for rows in res.probe for r in rows)
    ages = [r[1] for rows in res.probe for r in rows]
    print(
        f"  Python workers: spark.python.worker.reuse={res.effective['spark.python.worker.reuse']};"
        f" probe saw pids {sorted(pids[0]) if pids else '-'} in both runs: {reused}; "
        f"kafkalog already imported there: {loaded}; worker age "
        f"{min(ages, default=0):.0f}-{max(ages, default=0):.0f}s"
    )
    if res.traces:
        print(
            "  worker-side trace (one more run, each task wrapped): produce = time inside the "
            "reader's next() (decode), consume = time Spark's worker held each batch (write to the "
            "JVM, blocked while the JVM converts); sums over tasks"
        )
        headers = ["query", "source", "wall s", "produce s", "consume s", "task CPU s", "batches"]
        rows = []
        for (src, q), t in res.traces.items():
            rows.append(
                [
                    q.label,
                    src,
                    f"{t['query_wall']:.2f}",
                    f"{t['produce']:.2f}",
                    f"{t['consume']:.2f}",
                    f"{t['cpu']:.2f}",
                    str(int(t["batches"])),
                ]
            )
        print_table(headers, rows)
    for w in res.warnings:
        print(f"  WARNING: {w}")


def report_scaling(results: list[MasterResult], sources: tuple[str, ...]) -> None:
    """local[2] / local[1] throughput for each source and query."""
    by = {r.master: r for r in results}
    if not all(m in by for m in MASTERS):
        return
    one, two = by[MASTERS[0]], by[MASTERS[1]]
    print(f"\nScaling {MASTERS[1]} / {MASTERS[0]} (throughput ratio; target for kafkalog >= 1.7)")
    headers = ["query", *(f"{s}" for s in sources), f"kafkalog >={TARGET_SCALING:g}"]
    rows = []
    for q in QUERIES:
        ratios = {s: one.best(s, q).wall / two.best(s, q).wall for s in sources}
        rows.append(
            [
                q.label,
                *(f"{ratios[s]:.2f}" for s in sources),
                verdict(ratios["kafkalog"], TARGET_SCALING),
            ]
        )
    print_table(headers, rows)
    for r in results:
        cores = {s: one_cores(r, s) for s in sources}
        print(
            f"  cores used by this process tree per run at {r.master} (CPU s / wall s, mean over "
            "queries): " + ", ".join(f"{s} {c:.2f}" for s, c in cores.items())
        )


def one_cores(res: MasterResult, source: str) -> float:
    """Mean cores used by this process tree in the best runs of ``source``."""
    vals = [res.best(source, q).ours / res.best(source, q).wall for q in QUERIES]
    return sum(vals) / len(vals)


def report_settings(ds: Dataset, results: list[MasterResult]) -> None:
    """The Spark settings and kafkalog options used."""
    print(
        "\nSpark settings (conf/spark-defaults.conf and spark-local.conf + this benchmark's extra_conf):"
    )
    conf = results[0].conf
    for k in sorted(conf):
        print(f"  {k} = {conf[k]}")
    print(
        "  effective: "
        + "; ".join(f"{k}={v}" for k, v in results[0].effective.items() if k != "spark.master")
    )
    mpb = ds.options.get("maxPartitionBytes")
    print(
        "kafkalog options: "
        + (
            f"maxPartitionBytes={mpb} (set by the benchmark: the default 128 MiB gives fewer "
            "than --partitions splits on this segment)"
            if mpb
            else "none (the default maxPartitionBytes, 128 MiB, gives enough splits)"
        )
    )


def markdown(
    ds: Dataset,
    results: list[MasterResult],
    args: argparse.Namespace,
    load: str,
    sources: tuple[str, ...],
) -> str:
    """The results as a Markdown table (plus the settings), ready for the README."""
    by = {r.master: r for r in results}
    head = "| query | master | " + " | ".join(f"{s} s" for s in sources)
    sep = "|---|---|" + "---:|" * len(sources)
    if "ceiling" in sources:
        head += " | × ceiling"
        sep += "---:|"
    if "parquet" in sources:
        head += " | × Parquet"
        sep += "---:|"
    head += " |"
    out = [
        f"One {ds.size / MiB:.0f} MiB segment (shape A: 16 B key + 100 B value, v2, uncompressed, "
        f"16 KiB batches; {ds.records:,} records; "
        + ("with a broker-style `.index`" if ds.use_index else "no `.index`")
        + f"), {len(ds.splits)} splits; best of "
        f"{args.repeat} (seconds, DataFrame build + action). × = kafkalog's throughput over the "
        f"other's (target ≥ {TARGET_VS_CEILING:g}× the ceiling).",
        "",
        head,
        sep,
    ]
    for q in QUERIES:
        for m in MASTERS:
            if m not in by:
                continue
            best = {s: by[m].best(s, q) for s in sources}
            k = best["kafkalog"].wall
            line = f"| {q.label} | {m} | " + " | ".join(f"{best[s].wall:.2f}" for s in sources)
            if "ceiling" in sources:
                line += f" | {best['ceiling'].wall / k:.2f}"
            if "parquet" in sources:
                line += f" | {best['parquet'].wall / k:.2f}"
            out.append(line + " |")
    if all(m in by for m in MASTERS):
        out += [
            "",
            f"| query | kafkalog {MASTERS[1]}/{MASTERS[0]} | "
            + " | ".join(f"{s} {MASTERS[1]}/{MASTERS[0]}" for s in sources if s != "kafkalog")
            + " |",
            "|---|---:|" + "---:|" * (len(sources) - 1),
        ]
        for q in QUERIES:
            r = {
                s: by[MASTERS[0]].best(s, q).wall / by[MASTERS[1]].best(s, q).wall for s in sources
            }
            out.append(
                f"| {q.label} | {r['kafkalog']:.2f} | "
                + " | ".join(f"{r[s]:.2f}" for s in sources if s != "kafkalog")
                + " |"
            )
        out += ["", f"Target: local[2]/local[1] ≥ {TARGET_SCALING:g} for kafkalog."]
    conf = results[0].conf
    keep = [
        k
        for k in sorted(conf)
        if not k.startswith(
            (
                "spark.driver.extraJavaOptions",
                "spark.ui",
                "spark.driver.host",
                "spark.driver.bindAddress",
            )
        )
    ]
    out += [
        "",
        "Spark settings: "
        + ", ".join(f"`{k}={conf[k]}`" for k in keep)
        + f", `spark.python.worker.reuse={results[0].effective['spark.python.worker.reuse']}`"
        + f", `spark.driver.memory={results[0].effective['spark.driver.memory']}`"
        + ", `spark.python.udf.pipelined.enabled="
        + f"{results[0].effective['spark.python.udf.pipelined.enabled']}`"
        + (
            "; kafkalog " + ", ".join(f"`{k}={v}`" for k, v in ds.options.items())
            if ds.options
            else "; kafkalog defaults (maxPartitionBytes 128 MiB)"
        )
        + ".",
        f"Machine: {load}.",
    ]
    return "\n".join(out)


def machine() -> str:
    """CPU model, cores, versions."""
    import pyspark

    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    return (
        f"{cpu}, {os.cpu_count()} cores; Python {platform.python_version()}, pyspark "
        f"{pyspark.__version__}, pyarrow {pa.__version__}, "
        f"{java.splitlines()[0] if java else 'java ?'}"
    )


def load_text(results: list[MasterResult], start: tuple[float, ...]) -> str:
    """Load averages and the CPU used by other processes during the timed runs."""
    end = os.getloadavg()
    parts = []
    for r in results:
        runs = [x for xs in r.samples.values() for x in xs]
        others = sum(x.others for x in runs) / max(1e-9, sum(x.wall for x in runs))
        parts.append(f"{others:.2f} cores busy with other work during {r.master} runs")
    return (
        "load average (1 min) "
        + f"{start[0]:.2f} at start, {end[0]:.2f} at end; "
        + "; ".join(parts)
    )
