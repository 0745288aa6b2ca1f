"""``kafkalog query --engine duckdb``: the query in DuckDB, in this process, over Arrow streams.

Each view (:mod:`.sqlview`: ``kafkalog``, and one per internal topic's interpretation) is a
:func:`kafkalog_source.open_reader` stream with the columns its read options produce, as in
Spark. DuckDB pulls record batches from it, so memory stays bounded on archives larger than RAM
(unless the query itself keeps everything, e.g. a sort of every row).

Only the views the query uses are read, and only the columns it uses are decoded: the SQL is
first planned (``EXPLAIN``) once per view, with that view an empty Arrow table of its schema and
the others empty native tables (so the plan's Arrow scans are that view's), and the scans'
projections name the columns; the others are null columns that DuckDB never reads. A stream can
be read once, so a query that scans a view more than once (a self-join) gets it as an in-memory
table instead. Timestamps are shown in UTC, as the Spark engine's session does.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pyarrow as pa

from ..stats import ReadStats
from .common import CommandError
from .sqlview import VIEW, View, unknown_view_hint

_ANY = "__kafkalog_any_column"  # first column of the planning table: what count(*) scans

# DuckDB error classes that mean "this SQL is wrong" (exit 2); anything else is exit 1.
_USAGE_ERRORS = (
    "ParserException",
    "BinderException",
    "CatalogException",
    "NotImplementedException",
    "SyntaxException",
)


def _empty(schema: pa.Schema) -> pa.Table:
    """A table of ``schema`` with no rows and no batches. ``Schema.empty_table()`` builds its
    empty columns with ``pa.array``, which imports pandas (0.2-0.4 s of every query's start)."""
    return pa.Table.from_batches([], schema=schema)


def import_duckdb() -> Any:
    """The duckdb module, or a usage error saying how to get it."""
    try:
        import duckdb
    except ImportError:
        raise CommandError(
            "the DuckDB engine needs the duckdb package (pip install duckdb), or use --engine spark"
        ) from None
    return duckdb


def run_query(
    views: list[View], sql: str, max_rows: int, progress: bool, stats: ReadStats | None = None
) -> pa.Table:
    """Run ``sql`` over ``views``; return at most ``max_rows + 1`` rows as an Arrow table.
    ``stats`` gets the accounting of every view read (one sum)."""
    duckdb = import_duckdb()
    from ..options import parse_options
    from ..reader import prepare

    # each view's schemas are loaded once: its columns' types and its decoding come from them
    prepared = {v.name: prepare(parse_options(v.options, paths=v.paths)) for v in views}
    schemas = {name: p.schema for name, p in prepared.items()}
    names = [v.name for v in views]
    sql = quote_offset_column(duckdb, sql)
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.execute(f"SET enable_progress_bar = {'true' if progress else 'false'}")
        plans = {v.name: _plan_scans(duckdb, con, sql, schemas, v.name, names) for v in views}
        captured: dict[str, BaseException] = {}
        for v in views:
            full = schemas[v.name]
            scans = plans[v.name]
            if scans is None:  # a plan this cannot read: every column, read once
                scans = [set(full.names)]
            if not scans:
                continue  # a view the query does not scan (or SELECT 1): not read at all
            used = [n for n in full.names if any(n in s for s in scans)]
            if not used:  # count(*) alone: rows, no values; a constant column is the cheapest
                used = ["partition" if "partition" in full.names else full.names[0]]
            reader = prepared[v.name].open(columns=used, stats=stats)
            stream = _full_width(reader, full, captured)
            if len(scans) > 1:  # a stream is read once; this query reads the view several times
                con.register(v.name, stream.read_all())
            else:
                con.register(v.name, stream)
        return _fetch(duckdb, con, sql, max_rows, captured, names)
    finally:
        con.close()


def run_table_query(files: Any, sql: str, max_rows: int) -> pa.Table:
    """Run ``sql`` over the view ``kafkalog`` of a lake table's current data files
    (:class:`kafkalog_source.lake.files.TableFiles`): DuckDB reads the Parquet files itself (a
    table in a store: through a pyarrow dataset of them); at most ``max_rows + 1`` rows."""
    duckdb = import_duckdb()
    sql = quote_offset_column(duckdb, sql)
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.execute("SET enable_progress_bar = false")
        view = files.view_sql()
        if files.dataset is not None:
            con.register("__kafkalog_files", files.dataset)
            con.execute(
                f'CREATE VIEW "{VIEW}" AS SELECT {files.select_list()} FROM __kafkalog_files'
            )
        elif view is None:  # a table without data files: its columns, no rows
            con.register(VIEW, _empty(files.schema))
        else:
            con.execute(f'CREATE VIEW "{VIEW}" AS {view}')
        return _fetch(duckdb, con, sql, max_rows, None, [VIEW])
    finally:
        con.close()


def quote_offset_column(duckdb: Any, sql: str) -> str:
    """``sql`` with each bare ``offset`` that names the column written ``"offset"``.

    DuckDB reserves ``offset`` (``LIMIT n OFFSET m``); Spark SQL takes it as a column name, and
    it is the column Kafka queries use most. A keyword token ``offset`` is the clause when a
    number, a parameter or ``(`` follows it, and the column otherwise (``min(offset)``,
    ``WHERE offset > 5``, ``ORDER BY offset``). Strings, comments and quoted identifiers are
    tokens of their own and never change.
    """
    try:
        tokens = duckdb.tokenize(sql)
    except Exception:  # not tokenizable: DuckDB's parser reports it
        return sql
    kinds = duckdb.token_type
    out = []
    last = 0
    for i, (pos, kind) in enumerate(tokens):
        end = tokens[i + 1][0] if i + 1 < len(tokens) else len(sql)
        text = sql[pos:end].rstrip()
        if kind != kinds.keyword or text.lower() != "offset":
            continue
        nxt = next((t for t in tokens[i + 1 :] if t[1] != kinds.comment), None)
        if nxt is not None:
            after = sql[nxt[0] : nxt[0] + 1]
            if nxt[1] == kinds.numeric_const or after in ("(", "?", "$"):
                continue  # the OFFSET clause
        out.append(sql[last:pos])
        out.append('"offset"')
        last = pos + len(text)
    out.append(sql[last:])
    return "".join(out)


def _plan_scans(
    duckdb: Any,
    con: Any,
    sql: str,
    schemas: dict[str, pa.Schema],
    view: str,
    names: list[str],
) -> list[set[str]] | None:
    """The columns of each scan of ``view`` in DuckDB's plan of ``sql`` (usage errors raised;
    None: a plan this cannot read). ``view`` is an empty Arrow table there, the other views
    empty native tables, so every Arrow scan of the plan is one of ``view``."""
    planning = pa.schema([pa.field(_ANY, pa.int8()), *schemas[view]])
    con.register(view, _empty(planning))
    others = [n for n in names if n != view]
    try:
        for n in others:
            con.register("__kafkalog_planning", _empty(pa.schema(schemas[n])))
            con.execute(f'CREATE TEMP TABLE "{n}" AS SELECT * FROM __kafkalog_planning')
            # one row of nulls: a table known to be empty could let the optimizer drop a join
            # and with it the scans of the view planned
            con.execute(f'INSERT INTO "{n}" DEFAULT VALUES')
            con.unregister("__kafkalog_planning")
        try:
            rows = con.execute("EXPLAIN (FORMAT JSON) " + sql).fetchall()
        except duckdb.Error as e:
            try:  # a DuckDB without JSON plans still reports an error in the SQL here
                con.execute("EXPLAIN " + sql).fetchall()
            except duckdb.Error:
                raise _sql_error(e, names) from None
            return None
    finally:
        con.unregister(view)
        for n in others:
            con.execute(f'DROP TABLE IF EXISTS "{n}"')
    scans: list[set[str]] = []
    for _, text in rows:
        try:
            plan = json.loads(text)
        except ValueError:
            return None  # not a plan we can read
        _collect_scans(plan, scans, set(schemas[view].names))
    return scans


def _collect_scans(node: Any, out: list[set[str]], every: set[str]) -> None:
    """Append the projected column names of every Arrow scan in a JSON plan (``every`` column
    when a scan's projection cannot be read)."""
    if isinstance(node, list):
        for item in node:
            _collect_scans(item, out, every)
        return
    if not isinstance(node, dict):
        return
    if "ARROW_SCAN" in str(node.get("name", "")).upper():
        info = node.get("extra_info")
        proj = info.get("Projections") if isinstance(info, dict) else None
        if isinstance(proj, (str, list)):
            names = [proj] if isinstance(proj, str) else proj
            # a struct's field is projected as "column.field": the column is what is read
            out.append({_top_column(n, every) for n in names} - {_ANY})
        else:
            out.append(set(every))
    for value in node.values():
        if isinstance(value, (list, dict)):
            _collect_scans(value, out, every)


def _top_column(name: str, every: set[str]) -> str:
    """The view's column a projection names (``value_decoded.price`` reads ``value_decoded``)."""
    if name in every or "." not in name:
        return name
    return name.split(".", 1)[0]


def _full_width(
    reader: pa.RecordBatchReader, full: pa.Schema, captured: dict[str, BaseException]
) -> pa.RecordBatchReader:
    """``reader``'s batches with every column of ``full``: the ones not decoded are null.

    An error raised while decoding is kept in ``captured`` (DuckDB reports it as its own
    error, as text), so the command can report kafkalog's error and exit code."""
    have = set(reader.schema.names)
    nulls: dict[tuple[int, str], pa.Array] = {}  # most batches have the same length: build once

    def null_column(n: int, f: pa.Field) -> pa.Array:
        key = (n, f.name)
        if key not in nulls:
            if len(nulls) > 64:
                nulls.clear()
            nulls[key] = pa.nulls(n, f.type)
        return nulls[key]

    def batches() -> Any:
        try:
            for batch in reader:
                n = batch.num_rows
                cols = [batch.column(f.name) if f.name in have else null_column(n, f) for f in full]
                yield pa.RecordBatch.from_arrays(cols, schema=full)
        except BaseException as e:
            captured["error"] = e
            raise

    return pa.RecordBatchReader.from_batches(full, batches())


def _fetch(
    duckdb: Any,
    con: Any,
    sql: str,
    max_rows: int,
    captured: dict[str, BaseException] | None,
    names: list[str] | None = None,
) -> pa.Table:
    """Run ``sql``; the first ``max_rows + 1`` rows of its result as an Arrow table."""
    try:
        rel = con.sql(sql)
        if rel is None:  # a statement without a result (SET, CREATE, COPY ... TO)
            return pa.table({})
        limited = rel.limit(max_rows + 1)
        fetch = getattr(limited, "to_arrow_table", None) or limited.fetch_arrow_table
        return fetch()
    except duckdb.Error as e:
        if captured and "error" in captured:
            raise captured["error"] from None
        raise _sql_error(e, names) from None


_MISSING_TABLE = re.compile(r"Table with name (?P<name>\S+) does not exist")


def _sql_error(e: Exception, names: list[str] | None = None) -> Exception:
    """A DuckDB error as a one-line command error: usage (exit 2) for bad SQL, else exit 1. A
    table that does not exist gets the name of the view there is (DuckDB's own "Did you mean"
    line may name one of its catalog tables)."""
    text = str(e).strip()
    first = text.splitlines()[0] if text else type(e).__name__
    missing = _MISSING_TABLE.search(first) if type(e).__name__ == "CatalogException" else None
    if missing is not None:
        first = f"{first} {unknown_view_hint(missing.group('name'), names)}"
    if type(e).__name__ in _USAGE_ERRORS:
        return CommandError(f"DuckDB: {first}")
    return RuntimeError(f"DuckDB: {first}")
