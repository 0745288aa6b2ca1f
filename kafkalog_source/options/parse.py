"""Parsing: user options (Spark's strings or Python values) into one :class:`~.model.ReadOptions`.

Names are case-insensitive, as Spark's are; each is looked up in the option table
(:mod:`.table`) and its value parsed by its row's parser. ``path``/``paths``,
``schemaRegistry.<setting>`` and ``fs.<store>.<argument>`` are read here too. An unknown name (with
a "did you mean" hint), one of Spark's Kafka options that does not apply to an archive, a
malformed value or options that do not combine raise
:class:`~kafkalog_source.errors.OptionError` naming the option and its reference entry.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from ..errors import OptionError
from ..redact import scrub
from .kafka import refuse_spark_kafka_option
from .model import ReadOptions, StoreOptions
from .stores import check_path, parse_fs_option
from .table import CANONICAL, OPTION_NAMES, SPEC_OF, doc_ref
from .values import Parser


def parse_options(
    options: Mapping[str, Any] | None = None, paths: Any = None, **kwargs: Any
) -> ReadOptions:
    """Parse user options (Spark's strings or Python values) into a :class:`ReadOptions`."""
    merged: dict[str, Any] = {}
    for source in (options or {}), kwargs:
        for k, v in source.items():
            merged[str(k)] = v
    collected_paths: list[str] = []
    fs_args: list[tuple[str, str, Any]] = []
    conf: list[tuple[str, Any]] = []
    values: dict[str, Any] = {}
    seen: dict[str, str] = {}
    for raw_name, value in merged.items():
        lower = raw_name.lower()
        if lower == "path":
            if value is not None and str(value) != "":
                collected_paths.append(str(value))
            continue
        if lower == "paths":
            collected_paths.extend(_parse_paths(value))
            continue
        if lower.startswith("schemaregistry."):
            if value is not None:
                conf.append((raw_name.split(".", 1)[1], value))
                seen[f"sr:{lower}"] = raw_name
            continue
        if lower.startswith("fs."):
            if value is not None:
                fs_args.append(_documented(parse_fs_option, raw_name, value))
                seen[f"fs:{lower}"] = raw_name
            continue
        spec = SPEC_OF.get(lower)
        if spec is None and value is not None:
            refuse_spark_kafka_option(raw_name)
        if spec is None:
            raise OptionError(_unknown_message(raw_name), doc=doc_ref())
        canonical, field_name, parser = CANONICAL[lower], spec.field, spec.parser
        if value is None:
            continue
        if field_name in seen and seen[field_name] != canonical:
            raise OptionError(
                f"options {seen[field_name]!r} and {canonical!r} are the same option",
                doc=doc_ref(canonical),
            )
        seen[field_name] = canonical
        values[field_name] = _documented(parser, canonical, value)
    if paths is not None:
        single = isinstance(paths, (str, bytes, os.PathLike))
        collected_paths.extend(os.fsdecode(p) for p in ([paths] if single else list(paths)))
    for p in collected_paths:
        check_path(p)
    store = {k[6:]: values.pop(k) for k in list(values) if k.startswith("store.")}
    if fs_args or store:
        values["store"] = StoreOptions(args=tuple(sorted(fs_args, key=lambda a: a[:2])), **store)
    if conf:
        values["registry_conf"] = tuple(sorted(conf, key=lambda c: c[0]))
    opts = ReadOptions(paths=tuple(collected_paths), given=tuple(seen.values()), **values)
    _check_combinations(opts)
    return opts


def _documented(parser: Parser, name: str, value: Any) -> Any:
    """``parser(name, value)``, its OptionError pointing to the option's reference entry."""
    try:
        return parser(name, value)
    except OptionError as e:
        if e.doc is not None:
            raise
        raise OptionError(str(e), doc=doc_ref(name)) from None


def _parse_paths(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        s = value.strip()
        if s.startswith("["):
            try:
                out = json.loads(s)
            except json.JSONDecodeError:
                raise OptionError(
                    f"option 'paths': not a JSON list: {scrub(repr(value), ())}"
                ) from None
            return [str(p) for p in out]
        return [s] if s else []
    return [str(p) for p in value]


def _unknown_message(name: str) -> str:
    import difflib

    close = difflib.get_close_matches(name.lower(), list(CANONICAL), n=1, cutoff=0.6)
    hint = f"; did you mean {CANONICAL[close[0]]!r}?" if close else ""
    known = ", ".join(sorted(OPTION_NAMES))
    return f"unknown option {name!r}{hint} (known: {known}, and fs.<store>.<argument>)"


def _check_combinations(o: ReadOptions) -> None:
    starts = [
        n
        for n, v in (
            ("startingOffsets", o.starting_offsets != "earliest"),
            ("startingTimestamp", o.starting_timestamp is not None),
            ("startingOffsetsByTimestamp", o.starting_offsets_by_timestamp is not None),
        )
        if v
    ]
    ends = [
        n
        for n, v in (
            ("endingOffsets", o.ending_offsets != "latest"),
            ("endingTimestamp", o.ending_timestamp is not None),
            ("endingOffsetsByTimestamp", o.ending_offsets_by_timestamp is not None),
        )
        if v
    ]
    # Spark's Kafka source applies one starting rule: the timestamp ones take precedence. We are
    # stricter and reject ambiguous combinations rather than silently ignoring one of them.
    if len(starts) > 1:
        raise OptionError(
            f"options {' and '.join(starts)} both set a start; use only one",
            doc=doc_ref(starts[0]),
        )
    if len(ends) > 1:
        raise OptionError(
            f"options {' and '.join(ends)} both set an end; use only one", doc=doc_ref(ends[0])
        )
    limits = [
        n
        for n, v in (
            ("maxOffsetsPerTrigger", o.max_offsets_per_trigger),
            ("maxBytesPerTrigger", o.max_bytes_per_trigger),
            ("maxFilesPerTrigger", o.max_files_per_trigger),
        )
        if v is not None
    ]
    if len(limits) > 1:  # Spark gives a Python stream one read limit
        raise OptionError(
            f"options {' and '.join(limits)} both limit a micro-batch; use one",
            doc=doc_ref(limits[0]),
        )
    chosen = [
        n
        for n, v in (
            ("assign", o.assign),
            ("subscribe", o.subscribe),
            ("subscribePattern", o.subscribe_pattern),
        )
        if v is not None
    ]
    if len(chosen) > 1:  # Spark's Kafka source: "Only one of the following options can be ..."
        raise OptionError(
            "Only one of the following options can be specified: assign, subscribe, "
            f"subscribePattern (got {' and '.join(chosen)})",
            doc=doc_ref(chosen[0]),
        )
    low, high = o.min_offsets_per_trigger, o.max_offsets_per_trigger
    if low is not None and high is not None and low > high:
        raise OptionError(
            f"The value of minOffsetsPerTrigger({low}) is higher than the "
            f"maxOffsetsPerTrigger({high})",
            doc=doc_ref("minOffsetsPerTrigger"),
        )
    if o.decode != "raw" and (o.value_format != "raw" or o.key_format != "raw"):
        raise OptionError(
            "options 'decode' and 'valueFormat'/'keyFormat' do not combine: decode reads "
            "Kafka's internal topics, whose records are not Schema Registry payloads",
            doc=doc_ref("valueFormat"),
        )
    if o.modified_before is not None and o.modified_after is not None:
        if o.modified_after >= o.modified_before:
            raise OptionError(
                "option 'modifiedAfter' must be earlier than 'modifiedBefore'",
                doc=doc_ref("modifiedAfter"),
            )
