"""A registered JSON Schema checked as JSON Schema's own validator (the ``jsonschema`` package)
checks a schema before use, but for the ``regex`` format (see :func:`check_schema`)."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

log = logging.getLogger("kafkalog")


def check_schema(doc: Any) -> None:
    """Raise ``ValueError`` when ``doc`` (a parsed JSON Schema) is not valid under the
    metaschema of its ``$schema`` dialect (draft-07 when it names none or one the validator
    does not know: the Schema Registry's default), as JSON Schema's own validator (the
    ``jsonschema`` package) checks a schema before use: keywords of the wrong type
    (``"properties": []``, ``"$ref": 5``, ``"type": "strin"``) are refused there."""
    import jsonschema
    from jsonschema.validators import validator_for

    if not isinstance(doc, (dict, bool)):
        # a schema is an object or a boolean (JSON Schema draft-06 on; the Schema Registry's
        # JsonSchema.rawSchema reads true and false as TrueSchema and FalseSchema and refuses
        # anything else as "Invalid JSON Schema"); validator_for looks for "$schema" in the
        # document and raised a builtin TypeError for null or a number
        raise ValueError(
            f"not a valid JSON Schema: a schema is an object or a boolean, not {_kind(doc)}"
        )
    if isinstance(doc, dict) and "$schema" in doc and not isinstance(doc["$schema"], str):
        raise ValueError(f"$schema is not a string: {json.dumps(doc['$schema'])[:60]}")
    cls = validator_for(doc, default=jsonschema.Draft7Validator)
    # the metaschema's "regex" format (pattern, patternProperties) is ECMA-262's dialect, which
    # jsonschema checks with Python's re: \p{L}, (?<name>...)\k<name>, \cA, \u{...} are valid
    # there and refused by re. kafkalog reads values by their types, never by a pattern: one
    # that re cannot compile is left unchecked, with a warning, instead of refusing the schema
    unchecked: list[str] = []

    def regex(instance: object) -> bool:
        if isinstance(instance, str):
            try:
                re.compile(instance)
            except (re.error, RecursionError, OverflowError):
                unchecked.append(instance)
        return True

    checker = jsonschema.FormatChecker(())
    checker.checkers = {**cls.FORMAT_CHECKER.checkers, "regex": (regex, ())}
    try:
        cls.check_schema(doc, format_checker=checker)
    except jsonschema.exceptions.SchemaError as e:
        where = "/".join(str(p) for p in e.absolute_path)
        raise ValueError(
            f"not a valid JSON Schema: {e.message[:200]}" + (f" (at {where})" if where else "")
        ) from None
    except RecursionError:
        raise ValueError("not a valid JSON Schema: nested too deep") from None
    if unchecked:
        shown = ", ".join(json.dumps(p)[:80] for p in unchecked[:3])
        log.warning(
            "a JSON Schema's pattern%s %s %s not checked (ECMA-262 syntax that Python's re does "
            "not read; values are read by their types, not by patterns)",
            "s" if len(unchecked) > 1 else "",
            shown + (f" and {len(unchecked) - 3} more" if len(unchecked) > 3 else ""),
            "are" if len(unchecked) > 1 else "is",
        )


def _kind(doc: Any) -> str:
    """What a parsed JSON document is, in JSON's words (``null``, ``a number``, ...)."""
    if doc is None:
        return "null"
    if isinstance(doc, (int, float)):
        return f"a number ({json.dumps(doc)[:40]})"
    if isinstance(doc, str):
        return "a string"
    if isinstance(doc, list):
        return "an array"
    return type(doc).__name__
