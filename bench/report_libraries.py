"""Which plotting library draws ``kafkalog report``'s page: page size and time to drawn.

The same report data (the samples, and a copy of some damaged, see tests/report_support.py) is
drawn three ways, each page self-contained (no network):

* **Vega-Lite** (what the report uses): the specs of :mod:`kafkalog_source.cli.archive_report.render` with
  Vega + Vega-Lite + Vega-Embed inlined from vl-convert-python's ``javascript_bundle()``;
* **Plotly**: the same charts as ``plotly.graph_objects`` figures, ``plotly.min.js`` inlined once;
* **matplotlib**: the same charts as inline SVG (drawn in Python; no script in the page).

For each: the page's bytes, the Python time to make it (gathering excluded: the same for all),
and, in headless Chromium (tests/browser_support.py), the time from the start of the page's load
to the charts drawn (median of ``--repeat`` loads). Needs ``pip install plotly matplotlib`` and
a Chromium besides the report extra.

    .venv/bin/python bench/report_libraries.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def charts(data: dict[str, Any]) -> dict[str, dict[str, Any] | None]:
    """The page's chart specs (Vega-Lite), whose data the other libraries draw too."""
    from kafkalog_source.cli.archive_report import render

    return {
        "timeline": render.timeline_spec(data),
        "time": render.time_coverage_spec(data),
        "records": render.series_spec(data, "records"),
        "bytes": render.series_spec(data, "bytes"),
        "sizes": render.histogram_spec(data["batch_sizes"], "batch size", render._size),
        "ratio": render.histogram_spec(data["compression"], "ratio", lambda x: f"{x:g}"),
    }


def _done_script() -> str:
    return (
        "<script>window.kafkalogDoneAt=performance.now();window.kafkalogRenderMs=0;"
        "document.body.setAttribute('data-rendered','yes');</script>"
    )


def plotly_page(data: dict[str, Any]) -> str:
    """The charts with Plotly, plotly.min.js inlined."""
    import plotly.graph_objects as go
    from plotly.offline import get_plotlyjs

    figs = []
    for name, spec in charts(data).items():
        if spec is None:
            continue
        vals = spec["data"]["values"]
        fig = go.Figure()
        if name == "timeline":
            for kind in dict.fromkeys(v["kind"] for v in vals):
                vs = [v for v in vals if v["kind"] == kind]
                fig.add_bar(
                    y=[v["lane"] for v in vs],
                    x=[v["x2"] - v["x"] for v in vs],
                    base=[v["x"] for v in vs],
                    orientation="h",
                    name=kind,
                    hovertext=[f"{v['offsets']} {v['detail']}" for v in vs],
                )
        elif name == "time":
            for v in vals:
                fig.add_scatter(
                    x=[v["a"], v["b"]], y=[v["lane"]] * 2, mode="lines+markers", showlegend=False
                )
            fig.update_xaxes(type="date")
        elif name in ("records", "bytes"):
            for topic in dict.fromkeys(v["topic"] for v in vals):
                vs = [v for v in vals if v["topic"] == topic]
                fig.add_scatter(
                    x=[v["t"] for v in vs], y=[v["n"] for v in vs], name=topic, line_shape="hv"
                )
            fig.update_xaxes(type="date")
        else:
            for codec in dict.fromkeys(v["codec"] for v in vals):
                vs = [v for v in vals if v["codec"] == codec]
                fig.add_bar(x=[v["bin"] for v in vs], y=[v["batches"] for v in vs], name=codec)
            fig.update_layout(barmode="stack")
        fig.update_layout(height=300, margin={"l": 40, "r": 10, "t": 10, "b": 40})
        figs.append(fig.to_html(full_html=False, include_plotlyjs=False))
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>"
        f"<script>{get_plotlyjs()}</script>" + "".join(figs) + _done_script() + "</body></html>"
    )


def matplotlib_page(data: dict[str, Any]) -> str:
    """The charts with matplotlib, as inline SVG."""
    import matplotlib

    matplotlib.use("svg")
    import matplotlib.pyplot as plt

    out = []
    for name, spec in charts(data).items():
        if spec is None:
            continue
        vals = spec["data"]["values"]
        fig, ax = plt.subplots(figsize=(12, 3))
        if name == "timeline":
            for v in vals:
                ax.barh(v["lane"], v["x2"] - v["x"], left=v["x"])
        elif name == "time":
            for v in vals:
                ax.plot([v["a"], v["b"]], [v["lane"]] * 2, marker="o")
        elif name in ("records", "bytes"):
            for topic in dict.fromkeys(v["topic"] for v in vals):
                vs = [v for v in vals if v["topic"] == topic]
                ax.step([v["t"] for v in vs], [v["n"] for v in vs], where="post", label=topic)
        else:
            bins = list(dict.fromkeys(v["bin"] for v in vals))
            bottom = dict.fromkeys(bins, 0)
            for codec in dict.fromkeys(v["codec"] for v in vals):
                vs = {v["bin"]: v["batches"] for v in vals if v["codec"] == codec}
                ax.bar(bins, [vs.get(b, 0) for b in bins], bottom=[bottom[b] for b in bins])
                for b in bins:
                    bottom[b] += vs.get(b, 0)
        buf = io.StringIO()
        fig.savefig(buf, format="svg")
        plt.close(fig)
        out.append(buf.getvalue().split("?>", 1)[-1])
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>"
        + "".join(out)
        + _done_script()
        + "</body></html>"
    )


def main() -> None:
    """Print page size and times per library and archive."""
    from browser_support import find_chromium, load_page
    from report_support import damaged_archive

    from kafkalog_source.cli.archive_report.gather import gather
    from kafkalog_source.cli.archive_report.render import javascript, render_html

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    chromium = find_chromium()
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        damaged = tmpdir / "damaged"
        damaged.mkdir()
        damaged_archive(damaged)
        archives = {"samples": str(ROOT / "sample_segments"), "damaged": str(damaged)}
        javascript()  # fill the bundle's cache: its making is not the page's cost
        print(f"{'archive':8} {'library':10} {'page KiB':>9} {'python ms':>10} {'browser ms':>11}")
        for label, path in archives.items():
            data = gather([path], [], quiet=True).data
            makers = {
                "vega-lite": lambda d: render_html(d, javascript()),
                "plotly": plotly_page,
                "matplotlib": matplotlib_page,
            }
            for lib, make in makers.items():
                t = time.perf_counter()
                page = make(data)
                py_ms = (time.perf_counter() - t) * 1000
                f = tmpdir / f"{label}-{lib}.html"
                f.write_text(page)
                loads = []
                if chromium:
                    for _ in range(args.repeat):
                        r = load_page(chromium, f)
                        assert r.rendered == "yes" and not r.errors, (lib, r.errors)
                        loads.append(r.load_ms)
                ms = f"{statistics.median(loads):11.0f}" if loads else "  (no browser)"
                print(f"{label:8} {lib:10} {len(page.encode()) / 1024:9.0f} {py_ms:10.0f} {ms}")


if __name__ == "__main__":
    main()
