"""``kafkalog report``: the report's data (:mod:`.gather`) as one self-contained HTML page.

The charts are Vega-Lite specifications drawn in the browser by Vega, Vega-Lite and
Vega-Embed, whose JavaScript comes from the ``vl-convert-python`` package (its
``javascript_bundle()``: one script with no imports) and is inlined in the page with the specs'
data, the styles and no web font: the page fetches nothing, and opens offline. Why Vega-Lite
(against Plotly and matplotlib SVG, measured on the samples and a damaged archive): see
``docs/guides/report.md``.

Everything the page shows is in the data; the tables show at most :data:`MAX_ROWS` rows each
(the JSON file of ``--json`` holds them all, up to the gatherer's own caps).
"""

from __future__ import annotations

import html
import json
from datetime import UTC, datetime
from typing import Any

from . import gather

MAX_ROWS = 500  # rows of one table on the page
MAX_SERIES = 12  # topics drawn as their own line; the rest are summed as "other topics"
INSTALL_HINT = (
    "kafkalog report draws its charts with Vega-Lite, whose JavaScript comes from the "
    "vl-convert-python package: pip install 'kafkalog[report]' (or pip install "
    "vl-convert-python)"
)


class MissingRenderer(ImportError):
    """The optional plotting dependency is not installed (see :data:`INSTALL_HINT`)."""


def javascript() -> str:
    """Vega, Vega-Lite and Vega-Embed as one script (from vl-convert-python).

    vl-convert bundles the script on each call (a few seconds); the bundle is kept in the user's
    cache directory (``$XDG_CACHE_HOME/kafkalog``, else ``~/.cache/kafkalog``) under the
    package's version, and made again when the cache cannot be read or written."""
    import os
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        import vl_convert
    except ImportError as exc:
        raise MissingRenderer(INSTALL_HINT) from exc
    try:
        tag = dist_version("vl-convert-python")
    except PackageNotFoundError:  # pragma: no cover (a build without metadata)
        tag = "unknown"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    cached = os.path.join(base, "kafkalog", f"vega-bundle-vl-convert-{tag}.js")
    try:
        with open(cached, encoding="utf-8") as f:
            text = f.read()
        if text.rstrip().endswith("window.vegaLite=__default1;"):
            return text
    except OSError:
        pass
    text = vl_convert.javascript_bundle()
    try:
        os.makedirs(os.path.dirname(cached), exist_ok=True)
        tmp = f"{cached}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, cached)
    except OSError:
        pass
    return text


# ------------------------------------------------------------------------------- helpers


def _ts(ms: int | None) -> str:
    if ms is None:
        return "–"
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return str(ms)


def _n(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.3g}"
    return _e(v)  # a string from the archive (a table cell is HTML)


def _bytes(n: int | None) -> str:
    if n is None:
        return "–"
    v = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(v) < 1024 or unit == "TiB":
            return f"{n:,} B" if unit == "B" else f"{v:.1f} {unit} ({n:,} B)"
        v /= 1024
    return f"{n:,} B"  # pragma: no cover


def _e(v: Any) -> str:
    return html.escape(str(v), quote=True)


def _table(
    headers: list[str], rows: list[list[Any]], cls: str = "", total: int | None = None
) -> str:
    """An HTML table of at most MAX_ROWS of ``rows`` (cells already formatted as text or
    HTML-safe): the rows the JSON lists; ``total`` counts those the gatherer counted without
    listing them too. A table cut says how many rows it shows, and where the others are."""
    out = [f'<table class="{cls}"><thead><tr>']
    out += [f"<th>{_e(h)}</th>" for h in headers]
    out.append("</tr></thead><tbody>")
    for r in rows[:MAX_ROWS]:
        out.append("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>")
    out.append("</tbody></table>")
    n = max(total if total is not None else 0, len(rows))
    shown = min(len(rows), MAX_ROWS)
    if n > shown:
        more = [f"{shown:,} of {n:,} rows shown"]
        if len(rows) > shown:
            more.append(f"the JSON (--json) lists {len(rows):,}")
        if n > len(rows):
            more.append(f"{n - len(rows):,} are counted, not listed")
        out.append(f'<p class="more">{"; ".join(more)}.</p>')
    if not rows:
        out.append('<p class="none">none</p>')
    return "".join(out)


def _path(path: str | None) -> str:
    """A file as its partition directory and name, the full path in its tooltip."""
    if not path:
        return "–"
    short = "/".join(path.rstrip("/").split("/")[-2:])
    return f"<span class='path' title='{_e(path)}'>{_e(short)}</span>"


def _label(p: dict[str, Any]) -> str:
    return str(p.get("label") or p.get("directory"))


# ------------------------------------------------------------------------------- charts


def timeline_spec(data: dict[str, Any]) -> dict[str, Any] | None:
    """Offset coverage per partition: each run of segments as a bar, each gap in red, on a scale
    of the partition's own offsets (0% its first offset, 100% its last: partitions differ by
    orders of magnitude); the tooltips give the offsets."""
    parts = [p for p in data["partitions"] if p["first_offset"] is not None or p["directory"]]
    gaps_by: dict[str, list[dict[str, Any]]] = {}
    for gp in data["gaps"]:
        gaps_by.setdefault(gp["directory"] or "", []).append(gp)
    parts.sort(
        key=lambda p: (not gaps_by.get(p["directory"]), p["topic"] or "", p["partition"] or 0)
    )
    parts = parts[: gather.MAX_LANES]
    values = []
    for p in parts:
        lane = _label(p)
        lo = [p["first_offset"]] if p["first_offset"] is not None else []
        hi = [p["last_offset"]] if p["last_offset"] is not None else []
        for gp in gaps_by.get(p["directory"], []):
            lo += [x for x in (gp["first_offset"], gp["last_offset"]) if x is not None]
            hi += [x for x in (gp["first_offset"], gp["last_offset"]) if x is not None]
        if not lo:
            continue
        a, b = min(lo), max(hi)
        span = max(b - a, 1)

        def pct(x: int, a: int = a, span: int = span) -> float:
            return round(100.0 * (x - a) / span, 4)

        for r in _drawn_runs(p["runs"], pct):
            values.append(
                {
                    "lane": lane,
                    "kind": "records",
                    "x": pct(r["first_offset"]),
                    "x2": max(pct(r["last_offset"]), pct(r["first_offset"]) + 0.3),
                    "offsets": f"{r['first_offset']:,}..{r['last_offset']:,}",
                    "detail": f"{r['segments']} segment(s), {r['bytes']:,} bytes"
                    + (
                        f", {r['runs']:,} runs with holes too small to draw"
                        if r["runs"] > 1
                        else ""
                    ),
                }
            )
        for gp in gaps_by.get(p["directory"], []):
            f, t = gp["first_offset"], gp["last_offset"]
            if f is None and t is None:
                f = t = p["last_offset"] if p["last_offset"] is not None else a
            f = f if f is not None else t
            t = t if t is not None else f
            x = pct(f)
            values.append(
                {
                    "lane": lane,
                    "kind": gp["title"],
                    "x": x,
                    "x2": max(pct(t), x + 0.6),
                    "offsets": f"{f:,}..{t:,}",
                    "detail": f"{gp['path']}"
                    + (f" byte {gp['position']:,}" if gp["position"] is not None else "")
                    + f": {gp['reason']}",
                }
            )
    if not values:
        return None
    lanes = list(dict.fromkeys(v["lane"] for v in values))
    kinds = ["records", *sorted({v["kind"] for v in values} - {"records"})]
    palette = ["#4c78a8", "#e45756", "#f58518", "#b279a2", "#9d755d", "#54a24b", "#eeca3b"]
    return {
        "width": "container",
        "height": 16 * len(lanes),
        "data": {"values": values},
        "mark": {"type": "bar", "cornerRadius": 1},
        "encoding": {
            "y": {"field": "lane", "type": "nominal", "sort": lanes, "title": None},
            "x": {
                "field": "x",
                "type": "quantitative",
                "scale": {"domain": [0, 100.6]},
                "title": "offset, % of the partition's first..last offset",
            },
            "x2": {"field": "x2"},
            "color": {
                "field": "kind",
                "type": "nominal",
                "scale": {"domain": kinds, "range": palette[: len(kinds)]},
                "legend": {"orient": "top", "title": None},
            },
            "tooltip": [
                {"field": "lane", "title": "partition"},
                {"field": "kind"},
                {"field": "offsets"},
                {"field": "detail"},
            ],
        },
    }


MIN_HOLE_PCT = 0.1  # a hole between runs narrower than this (% of the lane) is not drawn


def _drawn_runs(runs: list[dict[str, Any]], pct: Any) -> list[dict[str, Any]]:
    """A partition's runs of offsets as drawn: runs whose hole between them is narrower than
    :data:`MIN_HOLE_PCT` of the lane (a pixel or less) are drawn as one bar, which says so; a
    compacted partition of 100,000 segments draws at most about 1,000 bars, not one a run."""
    out: list[dict[str, Any]] = []
    for r in runs:
        last = out[-1] if out else None
        if last is not None and pct(r["first_offset"]) - pct(last["last_offset"]) < MIN_HOLE_PCT:
            last["last_offset"] = max(last["last_offset"], r["last_offset"])
            last["segments"] += r["segments"]
            last["bytes"] += r["bytes"]
            last["runs"] += 1
        else:
            out.append({**r, "runs": 1})
    return out


def time_coverage_spec(data: dict[str, Any]) -> dict[str, Any] | None:
    """First to last timestamp of each partition on one time axis: the axis of the series (the
    bulk of the archive's time; a record stamped decades away is drawn at its edge, and the
    tooltip gives its timestamp)."""
    s = data.get("series") or {}
    lo, hi = s.get("drawn_ms") or (None, None)
    if hi is not None:
        hi += s["unit_ms"]

    def clip(ms: int) -> int:
        return ms if lo is None or hi is None else min(max(ms, lo), hi)

    values = [
        {
            "lane": _label(p),
            "a": clip(p["first_timestamp_ms"]),
            "b": clip(max(p["last_timestamp_ms"], p["first_timestamp_ms"])),
            "from": _ts(p["first_timestamp_ms"]),
            "to": _ts(p["last_timestamp_ms"]),
            "clipped": clip(p["first_timestamp_ms"]) != p["first_timestamp_ms"]
            or clip(p["last_timestamp_ms"]) != p["last_timestamp_ms"],
        }
        for p in data["partitions"]
        if p["first_timestamp_ms"] is not None and p["last_timestamp_ms"] is not None
    ][: gather.MAX_LANES]
    if not values:
        return None
    return {
        "width": "container",
        "height": 16 * len({v["lane"] for v in values}),
        "data": {"values": values},
        # a rule with round caps: a partition written within a second is still a dot
        "mark": {"type": "rule", "color": "#72b7b2", "strokeWidth": 9, "strokeCap": "round"},
        "encoding": {
            "y": {"field": "lane", "type": "nominal", "title": None},
            "x": {"field": "a", "type": "temporal", "title": "time (UTC)", "timeUnit": None},
            "x2": {"field": "b"},
            "tooltip": [
                {"field": "lane", "title": "partition"},
                {"field": "from"},
                {"field": "to"},
            ],
        },
    }


def series_spec(data: dict[str, Any], what: str) -> dict[str, Any] | None:
    """Records or bytes per unit of time, per topic (the biggest topics; the rest summed)."""
    s = data["series"]
    col = 1 if what == "records" else 2
    totals = {t: sum(r[col] for r in rows) for t, rows in s["topics"].items()}
    top = [t for t, _ in sorted(totals.items(), key=lambda kv: -kv[1])[:MAX_SERIES]]
    agg: dict[tuple[str, int], int] = {}
    for t, rows in s["topics"].items():
        name = t if t in top else "other topics"
        for r in rows:
            if r[col]:
                agg[(name, r[0])] = agg.get((name, r[0]), 0) + r[col]
    if not agg:
        return None
    lo, hi = s.get("drawn_ms") or (None, None)
    drawn = {k: n for k, n in agg.items() if lo is None or lo <= k[1] <= hi}
    # the buckets without data are zeros: a line between two busy hours a week apart would
    # draw a week of traffic that was not there. The line is drawn step-after (a point holds
    # until the next), so one zero after each busy bucket whose next bucket is idle is enough
    # (at most twice the busy buckets, however long the idle spans)
    unit = s["unit_ms"]
    for t, ms in list(drawn):
        drawn.setdefault((t, ms + unit), 0)
    values = [
        {"topic": t, "t": ms, "n": n}
        for (t, ms), n in sorted(drawn.items(), key=lambda kv: kv[0][1])
    ]
    return {
        "width": "container",
        "height": 220,
        "data": {"values": values},
        "mark": {"type": "line", "interpolate": "step-after"},
        "encoding": {
            "x": {"field": "t", "type": "temporal", "title": f"time (UTC), per {s['unit']}"},
            "y": {"field": "n", "type": "quantitative", "title": f"{what} per {s['unit']}"},
            "color": {"field": "topic", "type": "nominal", "legend": {"orient": "right"}},
            "tooltip": [
                {"field": "topic"},
                {"field": "t", "type": "temporal", "format": "%Y-%m-%d %H:%M", "title": "from"},
                {"field": "n", "type": "quantitative", "format": ",", "title": what},
            ],
        },
    }


def _bin_label(edges: list[float], i: int, fmt: Any) -> str:
    if i == 0:
        return f"< {fmt(edges[0])}"
    if i >= len(edges):
        return f"≥ {fmt(edges[-1])}"
    return f"{fmt(edges[i - 1])}–{fmt(edges[i])}"


def _size(b: float) -> str:
    b = int(b)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if b < 1024:
            return f"{b} {unit}"
        b //= 1024
    return f"{b} TiB"


def histogram_spec(hist: dict[str, Any], title: str, fmt: Any) -> dict[str, Any] | None:
    """A stacked bar chart of fixed bins per codec (empty outer bins left out)."""
    edges = hist["edges"]
    counts = hist["counts"]
    used = [i for i in range(len(edges) + 1) if any(c[i] for c in counts.values())]
    if not used:
        return None
    labels = [_bin_label(edges, i, fmt) for i in range(used[0], used[-1] + 1)]
    values = [
        {"bin": _bin_label(edges, i, fmt), "codec": codec, "batches": c[i]}
        for codec, c in sorted(counts.items())
        for i in range(used[0], used[-1] + 1)
        if c[i]
    ]
    return {
        "width": "container",
        "height": 200,
        "data": {"values": values},
        "mark": "bar",
        "encoding": {
            "x": {"field": "bin", "type": "ordinal", "sort": labels, "title": title},
            "y": {"field": "batches", "type": "quantitative", "stack": True, "title": "batches"},
            "color": {"field": "codec", "type": "nominal"},
            "tooltip": [{"field": "codec"}, {"field": "bin"}, {"field": "batches", "format": ","}],
        },
    }


def lag_spec(data: dict[str, Any]) -> dict[str, Any] | None:
    """Lag at the moment of the archive, per group and partition."""
    cg = data.get("consumer_groups") or {}
    values = [
        {"group": g["group"], "partition": f"{o['topic']}-{o['partition']}", "lag": o["lag"]}
        for g in cg.get("groups", [])
        for o in g["offsets"]
        if o["lag"] is not None
    ][:2000]
    if not values:
        return None
    return {
        "width": "container",
        "height": 14 * len(values),
        "data": {"values": values},
        "mark": "bar",
        "encoding": {
            "y": {"field": "partition", "type": "nominal", "title": None},
            "x": {"field": "lag", "type": "quantitative", "title": "lag (offsets) at archive time"},
            "color": {"field": "group", "type": "nominal", "legend": {"orient": "top"}},
            "yOffset": {"field": "group"},
            "tooltip": [
                {"field": "group"},
                {"field": "partition"},
                {"field": "lag", "format": ","},
            ],
        },
    }


def config_spec(data: dict[str, Any]) -> dict[str, Any] | None:
    """Configuration changes over time, one row per resource."""
    cm = data.get("cluster_metadata") or {}
    values = [
        {
            "t": c["timestamp_ms"],
            "resource": f"{c['resource_type']} {c['resource']}",
            "change": f"{c['name']} = {c['value']}",
        }
        for c in cm.get("config_changes", [])
        if c["timestamp_ms"] is not None
    ][:2000]
    if not values:
        return None
    return {
        "width": "container",
        "height": 18 * len({v["resource"] for v in values}),
        "data": {"values": values},
        "mark": {"type": "point", "filled": True, "size": 60},
        "encoding": {
            "x": {"field": "t", "type": "temporal", "title": "time (UTC)"},
            "y": {"field": "resource", "type": "nominal", "title": None},
            "tooltip": [
                {"field": "t", "type": "temporal", "format": "%Y-%m-%d %H:%M:%S", "title": "at"},
                {"field": "resource"},
                {"field": "change"},
            ],
        },
    }


# ------------------------------------------------------------------------------- page

CSS = """
:root{--fg:#1d2330;--muted:#5b6473;--line:#dde2ea;--bad:#c62828;--warn:#b26a00;--ok:#2e7d32}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
color:var(--fg);margin:0;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:16px 28px}
header h1{margin:0 0 4px;font-size:20px}
header .sub{color:#c9d1dc;font-size:13px;word-break:break-all}
main{padding:12px 28px 40px;max-width:1400px}
section{background:#fff;border:1px solid var(--line);border-radius:6px;margin:14px 0;padding:12px 18px}
h2{font-size:16px;margin:4px 0 10px}
h3{font-size:14px;margin:14px 0 6px;color:var(--muted)}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{border:1px solid var(--line);border-radius:5px;padding:8px 12px;min-width:130px}
.card .v{font-size:18px;font-weight:600}
.card .k{color:var(--muted);font-size:12px}
.card.bad{border-color:var(--bad)} .card.bad .v{color:var(--bad)}
.status{display:inline-block;padding:2px 10px;border-radius:10px;font-weight:600;font-size:13px}
.status.ok{background:#e8f5e9;color:var(--ok)} .status.bad{background:#ffebee;color:var(--bad)}
table{border-collapse:collapse;width:100%;font-size:12.5px;margin:4px 0}
th,td{border-bottom:1px solid var(--line);padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f0f2f5;font-weight:600}
td.num,th.num{text-align:right}
tr.gap td{background:#fff5f5}
.chart{width:100%;min-height:40px}
.more,.none,.note{color:var(--muted);font-size:12px}
.notes li{color:var(--warn)}
.warn{border-left:3px solid var(--warn);padding:2px 10px;margin:6px 0;color:var(--warn)}
code,.path{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;word-break:break-all}
details summary{cursor:pointer;color:var(--muted)}
.problems li.error{color:var(--bad)} .problems li.warning{color:var(--warn)}
"""

SCRIPT = """
(function(){
  var t0 = performance.now();
  var specs = JSON.parse(document.getElementById('kafkalog-specs').textContent);
  var jobs = Object.keys(specs).map(function(id){
    return vegaEmbed('#' + id, specs[id], {actions: false, renderer: 'svg'});
  });
  Promise.all(jobs).then(function(){
    window.kafkalogRenderMs = performance.now() - t0;  // drawing the charts
    window.kafkalogDoneAt = performance.now();  // from the start of the page's load
    document.body.setAttribute('data-rendered', 'yes');
  }, function(err){
    console.error('kafkalog report: a chart failed: ' + err);
    document.body.setAttribute('data-rendered', 'failed');
  });
})();
"""


def _incomplete(section: dict[str, Any], what: str, shown: str) -> str:
    """A warning that an internal topic has gaps or losses: its records in them are not seen."""
    lost = section.get("incomplete") or []
    if not lost:
        return ""
    items = "".join(
        f"<li>{_e(g['where'])}: {_e(g['kind'])} ({_path(g['path'])})</li>" for g in lost[:50]
    )
    return (
        f"<div class='warn'><p>This topic has gaps or losses: {what} in them are not seen, so "
        f"{shown} below are as of the records the archive holds, and may be older than the "
        f"archive.</p><ul>{items}</ul></div>"
    )


def _cards(items: list[tuple[str, Any, bool]]) -> str:
    return (
        '<div class="cards">'
        + "".join(
            f'<div class="card{" bad" if bad else ""}"><div class="v">{_e(v)}</div>'
            f'<div class="k">{_e(k)}</div></div>'
            for k, v, bad in items
        )
        + "</div>"
    )


def _chart(specs: dict[str, Any], cid: str, spec: dict[str, Any] | None, empty: str) -> str:
    if spec is None:
        return f'<p class="none">{_e(empty)}</p>'
    specs[cid] = spec
    return f'<div class="chart" id="{cid}"></div>'


def json_in_script(value: Any) -> str:
    """``value`` as JSON text that cannot end or change the ``<script>`` element holding it:
    every ``<``, ``>`` and ``&`` written as its JSON escape (``\\u003c``...), so a string such
    as ``</script>`` or ``<!--<script>`` (a file, group or configuration value of the archive)
    stays a string; ``JSON.parse`` of the element's text gives ``value`` back."""
    text = json.dumps(value, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def script_text(script: str) -> str:
    """The Vega bundle as the text of a ``<script>`` element: a ``</script`` in it (in any
    case) written ``<\\/script`` (it can only be in a string or a comment); a ``<!--`` in it
    (which would make the HTML parser look for a nested script's end) is refused."""
    import re

    if "<!--" in script:
        raise ValueError("the Vega bundle holds '<!--': it cannot be inlined in a <script>")
    return re.sub(r"</(script)", r"<\\/\1", script, flags=re.IGNORECASE)


def _redpanda_rows(rp: dict[str, Any] | None) -> list[list[str]]:
    """The overview's rows of a Redpanda archive's own facts (none for Kafka's)."""
    if not rp:
        return []
    types = ", ".join(f"{k} {n:,}" for k, n in rp["batch_types"].items()) or "–"
    offsets = "raft offsets (redpanda=raw)" if rp["mode"] == "raw" else "Kafka offsets"
    return [
        ["Redpanda batch types", _e(types)],
        [
            "Redpanda batches without Kafka offsets",
            _e(f"{rp['batches_without_kafka_offsets']:,} (left out of the Kafka view)"),
        ],
        [
            "Redpanda's own partitions",
            _e(
                f"{rp['internal_partitions_skipped']:,} skipped (kafka_internal, redpanda; "
                "-o redpanda=raw reads them)"
            ),
        ],
        ["offsets shown", _e(offsets)],
    ]


def render_html(data: dict[str, Any], script: str | None = None) -> str:
    """The page for the report's ``data``; ``script`` is the Vega bundle (default: from
    vl-convert-python, :func:`javascript`)."""
    script = javascript() if script is None else script
    o = data["overview"]
    v = data["verify"]
    specs: dict[str, Any] = {}
    ok = data["verify"]["exit_code"] == 0
    status = (
        '<span class="status ok">verify: OK</span>'
        if ok
        else f'<span class="status bad">verify: {v["errors"]:,} error(s), '
        f"{v['warnings']:,} warning(s), exit 1</span>"
    )
    parts: list[str] = []
    # ---- overview
    codecs = ", ".join(f"{k} {n:,}" for k, n in o["codecs"].items()) or "–"
    magics = ", ".join(f"v{k} {n:,}" for k, n in o["magics"].items()) or "–"
    parts.append(
        "<section id='overview'><h2>Overview</h2>"
        + _cards(
            [
                ("system", o["system"], False),
                ("topics", _n(o["topics"]), False),
                ("partitions", _n(o["partitions"]), False),
                ("segments", _n(o["segments"]), False),
                ("bytes", _bytes(o["bytes"]), False),
                ("batches", _n(o["batches"]), False),
                ("records", _n(o["records"]), False),
                ("control records", _n(o["control_records"]), False),
                ("gaps and losses", _n(o["gaps"]), bool(o["gaps"])),
                ("missing offsets", _n(o["missing_offsets"]), bool(o["missing_offsets"])),
                ("damaged batches", _n(o["malformed_batches"]), bool(o["malformed_batches"])),
                (
                    "replica disagreements",
                    _n(o["replica_disagreements"]),
                    bool(o["replica_disagreements"]),
                ),
                ("errors", _n(o["errors"]), bool(o["errors"])),
                ("warnings", _n(o["warnings"]), False),
            ]
        )
        + _table(
            ["", ""],
            [
                ["first timestamp", _e(_ts(o["first_timestamp_ms"]))],
                ["last timestamp", _e(_ts(o["last_timestamp_ms"]))],
                ["message formats (batches)", _e(magics)],
                ["codecs (data batches)", _e(codecs)],
                ["internal topics", _e(", ".join(o["internal_topics"]) or "none")],
                *_redpanda_rows(o.get("redpanda")),
                [
                    "topics",
                    _e(
                        ", ".join(o["topic_names"][:200])
                        + (" …" if len(o["topic_names"]) > 200 else "")
                    ),
                ],
            ],
            "kv",
        )
        + (
            "<ul class='notes'>" + "".join(f"<li>{_e(n)}</li>" for n in data["notes"]) + "</ul>"
            if data["notes"]
            else ""
        )
        + "</section>"
    )
    # ---- gaps and losses
    gap_rows = [
        [
            _e(gp["title"]),
            _e(gp.get("label") or "–"),
            _path(gp["path"]),
            _n(gp["position"]),
            _e(
                f"{gp['first_offset']:,}..{gp['last_offset']:,}"
                if gp["first_offset"] is not None and gp["last_offset"] is not None
                else "–"
            ),
            _n(gp["offsets"]),
            _n(gp["bytes"]),
            _e(gp["reason"]),
        ]
        for gp in data["gaps"]
    ]
    problems = v["problems"]
    parts.append(
        "<section id='gaps'><h2>Gaps and losses</h2>"
        "<p class='note'>What the reader found missing or could not read (verify's evidence): "
        "offsets missing, damaged batches, cut or zero-filled tails, unreadable or vanished "
        "files, each with its file and byte.</p>"
        + _table(
            ["what", "partition", "file", "byte", "offsets", "count", "bytes", "reason"],
            gap_rows,
            "gaps",
            total=o["gaps"],
        )
        + (
            f"<details{' open' if len(problems) <= 30 else ''}><summary>verify's "
            f"{len(problems):,} problem line(s)</summary><ul class='problems'>"
            + "".join(
                f"<li class='{'error' if ': error: ' in p else 'warning'}'><code>{_e(p)}</code></li>"
                for p in problems[:MAX_ROWS]
            )
            + "</ul></details>"
            if problems
            else "<p class='none'>verify found no problem.</p>"
        )
        + "</section>"
    )
    # ---- timelines
    time = time_coverage_spec(data)
    clipped = sum(1 for x in time["data"]["values"] if x["clipped"]) if time else 0
    parts.append(
        "<section id='timeline'><h2>Timeline per partition</h2><h3>Offsets (gaps and losses in "
        "colour; hover for offsets, files and bytes)</h3>"
        + _chart(specs, "chart-timeline", timeline_spec(data), "no offsets to draw")
        + "<h3>Time coverage (first to last timestamp)</h3>"
        + _chart(specs, "chart-time", time, "no timestamps (v0 messages only)")
        + (
            f"<p class='note'>{clipped:,} partition(s) hold records stamped far outside the "
            "bulk of the archive: drawn to the edge of the axis; their first and last "
            "timestamps are in the tooltips and the partitions' table.</p>"
            if clipped
            else ""
        )
        + "</section>"
    )
    # ---- series
    s = data["series"]
    untimed = sum(u["records"] for u in s["untimed"].values())
    outside = s.get("outside_drawn") or {}
    far = ""
    if outside.get("records") or outside.get("bytes"):
        far = (
            f"<p class='note'>{outside['records']:,} records and {outside['bytes']:,} bytes "
            f"stamped far outside the bulk of the archive ({_e(_ts(s['drawn_ms'][0]))} to "
            f"{_e(_ts(s['drawn_ms'][1]))}) are not drawn; they are in the JSON.</p>"
        )
    parts.append(
        f"<section id='series'><h2>Records and bytes per {_e(s['unit'])}, per topic</h2>"
        + _chart(specs, "chart-records", series_spec(data, "records"), "no timestamped records")
        + _chart(specs, "chart-bytes", series_spec(data, "bytes"), "no timestamped batches")
        + far
        + (
            f"<p class='note'>{untimed:,} records carry no timestamp (v0) and are not drawn.</p>"
            if untimed
            else ""
        )
        + "</section>"
    )
    # ---- sizes and compression
    comp = data["compression"]
    parts.append(
        "<section id='batches'><h2>Batch sizes and compression</h2>"
        + _chart(
            specs,
            "chart-sizes",
            histogram_spec(data["batch_sizes"], "batch size", _size),
            "no batches",
        )
        + "<h3>Compression ratio: key + value bytes of a batch's records per byte of the batch "
        "in the file</h3>"
        + _chart(
            specs, "chart-ratio", histogram_spec(comp, "ratio", lambda x: f"{x:g}"), "no batches"
        )
        + _table(
            ["codec", "batches", "bytes in files", "key + value bytes", "ratio"],
            [
                [
                    _e(c),
                    _n(x["batches"]),
                    _n(x["stored_bytes"]),
                    _n(x["key_value_bytes"]),
                    _n(x["ratio"]),
                ]
                for c, x in comp["codecs"].items()
            ],
        )
        + "</section>"
    )
    # ---- producers and transactions
    pr = data["producers"]
    tx = data["transactions"]
    parts.append(
        "<section id='producers'><h2>Producers and transactions</h2>"
        + _cards(
            [
                ("producer ids", _n(pr["count"]), False),
                ("transactional producers", _n(pr["transactional"]), False),
                ("committed transactions", _n(tx["committed"]), False),
                ("aborted transactions", _n(tx["aborted"]), False),
                ("open transactions", _n(tx["open"]), bool(tx["open"])),
            ]
        )
        + "<h3>Producers with the most records</h3>"
        + _table(
            [
                "producer id",
                "epoch",
                "transactional",
                "batches",
                "records",
                "partitions",
                "first",
                "last",
            ],
            [
                [
                    _n(p["producer_id"]),
                    _n(p["epoch"]),
                    _n(p["transactional"]),
                    _n(p["batches"]),
                    _n(p["records"]),
                    _n(p["partitions"]),
                    _e(_ts(p["first_timestamp_ms"])),
                    _e(_ts(p["last_timestamp_ms"])),
                ]
                for p in pr["listed"]
            ],
            total=pr["count"],
        )
        + "<h3>Open transactions (no marker in the archive)</h3>"
        + _table(
            ["partition", "producer id", "first offset", "file", "byte"],
            [
                [
                    _e(f"{t['topic']}-{t['partition']}"),
                    _n(t["producer_id"]),
                    _n(t["first_offset"]),
                    _path(t["path"]),
                    _n(t["position"]),
                ]
                for t in tx["open_listed"]
            ],
            total=tx["open"],
        )
        + "</section>"
    )
    # ---- consumer groups
    cg = data.get("consumer_groups")
    if cg is not None:
        rows = []
        for g in cg["groups"]:
            members = "; ".join(
                f"{m['client_id']} {m['client_host']} ({len(m['assigned'])} partitions)"
                for m in g.get("members") or []
            )
            rows.append(
                [
                    _e(g["group"]),
                    _e(g.get("state", "–")),
                    _n(g.get("generation")),
                    _e(g.get("protocol") or "–"),
                    _e(members or "–"),
                    _n(len(g["offsets"])),
                    _n(g["total_lag"]),
                ]
            )
        offs = [
            [
                _e(g["group"]),
                _e(f"{o['topic']}-{o['partition']}"),
                _n(o["committed_offset"]),
                _e(_ts(o["commit_timestamp_ms"])),
                _n(o["log_end_offset"]),
                _n(o["lag"]),
            ]
            for g in cg["groups"]
            for o in g["offsets"]
        ]
        parts.append(
            "<section id='groups'><h2>Consumer groups (from __consumer_offsets)</h2>"
            + _incomplete(cg, "commits", "the committed offsets and lag")
            + _table(
                [
                    "group",
                    "state",
                    "generation",
                    "protocol",
                    "members (last state)",
                    "partitions",
                    "total lag",
                ],
                rows,
            )
            + "<h3>Lag at the moment of the archive: the log end then − the committed offset</h3>"
            + _chart(specs, "chart-lag", lag_spec(data), "no committed partition is in the archive")
            + _table(
                ["group", "partition", "committed", "committed at", "log end", "lag"],
                offs,
            )
            + "</section>"
        )
    # ---- cluster metadata
    cm = data.get("cluster_metadata")
    if cm is not None:
        parts.append(
            "<section id='metadata'><h2>Cluster metadata (from __cluster_metadata)</h2>"
            + _incomplete(cm, "records", "the brokers, topics and configuration")
            + "<h3>Brokers</h3>"
            + _table(
                [
                    "broker",
                    "endpoints",
                    "rack",
                    "fenced",
                    "controlled shutdown",
                    "registered",
                    "first seen",
                    "last change",
                ],
                [
                    [
                        _n(b["broker_id"]),
                        _e(", ".join(b.get("endpoints") or []) or "–"),
                        _e(b.get("rack") or "–"),
                        _n(b.get("fenced")),
                        _n(b.get("in_controlled_shutdown")),
                        _n(b.get("registered")),
                        _e(_ts(b.get("first_seen_ms"))),
                        _e(_ts(b.get("last_change_ms"))),
                    ]
                    for b in cm["brokers"]
                ],
            )
            + "<h3>Topics</h3>"
            + _table(
                ["topic", "id", "partitions", "created", "removed"],
                [
                    [
                        _e(t["topic"]),
                        f"<code>{_e(t['topic_id'])}</code>",
                        _n(t["partitions"]),
                        _e(_ts(t["created_ms"])),
                        _e(_ts(t["removed_ms"])),
                    ]
                    for t in cm["topics"]
                ],
            )
            + "<h3>Configuration changes over time</h3>"
            + _chart(specs, "chart-config", config_spec(data), "no configuration change")
            + _table(
                ["at", "resource", "name", "value"],
                [
                    [
                        _e(_ts(c["timestamp_ms"])),
                        _e(f"{c['resource_type']} {c['resource']}"),
                        _e(c["name"]),
                        _e("(deleted)" if c["value"] is None else c["value"]),
                    ]
                    for c in cm["config_changes"]
                ],
                total=len(cm["config_changes"]) + cm["config_changes_not_listed"],
            )
            + "<h3>Records by type</h3>"
            + _table(
                ["record type", "records"], [[_e(k), _n(n)] for k, n in cm["record_types"].items()]
            )
            + "</section>"
        )
    # ---- partitions
    parts.append(
        "<section id='partitions'><h2>Partitions</h2>"
        + _table(
            [
                "partition",
                "segments",
                "bytes",
                "batches",
                "records",
                "control",
                "offsets",
                "log end",
                "first",
                "last",
                "errors",
                "warnings",
            ],
            [
                [
                    _e(_label(p)),
                    _n(p["segments"]),
                    _n(p["bytes"]),
                    _n(p["batches"]),
                    _n(p["records"]),
                    _n(p["control_records"]),
                    _e(
                        f"{p['first_offset']:,}..{p['last_offset']:,}"
                        if p["first_offset"] is not None
                        else "–"
                    ),
                    _n(p["log_end_offset"]),
                    _e(_ts(p["first_timestamp_ms"])),
                    _e(_ts(p["last_timestamp_ms"])),
                    _n(p["errors"]),
                    _n(p["warnings"]),
                ]
                for p in data["partitions"]
            ],
        )
        + "</section>"
    )
    title = "kafkalog report: " + ", ".join(data["paths"])
    safe_script = script_text(script)
    specs_json = json_in_script(specs)
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        # nothing is fetched: the policy refuses any request the page would make
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
        "script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; img-src data:; "
        'font-src data:">'
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>kafkalog report {status}</h1><div class='sub'>{_e(', '.join(data['paths']))}"
        f" · generated {_e(_ts(data['generated_at_ms']))} by kafkalog {_e(data['kafkalog_version'])}"
        f" · {_e(data['system'])}</div></header><main>" + "".join(parts) + "</main>"
        f"<script>{safe_script}</script>"
        f"<script type='application/json' id='kafkalog-specs'>{specs_json}</script>"
        f"<script>{SCRIPT}</script></body></html>"
    )
