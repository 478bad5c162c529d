"""JSON Schema questions answered without ``jsonschema`` when the answer is plain.

``jsonschema`` (with ``attrs`` and ``referencing``) takes ~80 ms to import, and it builds a validator object
for every subschema it descends into: checking two arguments against a small object schema cost more than
the rest of the gateway's checks together, and ``portagent validate`` of a folder paid the import for
schemas that use only the common keywords. Each function here answers only when the answer is certain for
the keywords it knows, and says False ("ask jsonschema") otherwise, never the opposite answer:

- ``plainly_valid(schema, value)``: True only when ``value`` certainly matches ``schema``;
- ``plainly_invalid(schema, value)``: True only when it certainly does not;
- ``plainly_well_formed(schema)``: True only when the 2020-12 metaschema certainly accepts ``schema`` (and
  it is plain JSON); what is wrong with one it doubts is ``contracts.schema_faults``.

Anything else (an unknown keyword, ``$ref``, a doubtful value) goes to ``jsonschema``, whose answers are
the ones reported. Property tests hold each function to ``jsonschema`` on random schemas and values
(``tests/contracts/test_schema_plain.py``, ``tests/tools/test_schema_shortcut.py``).
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any, TypeGuard

_NOTES = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "format",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)
"""Keywords that assert nothing (``format`` is an annotation: validators_for says so)."""
_CHECKED = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "minItems",
        "maxItems",
    }
)

_KNOWN = _CHECKED | _NOTES
_TYPES = frozenset({"string", "integer", "number", "boolean", "object", "array", "null"})
"""Draft 2020-12's type names."""


def _is_type(value: Any, name: Any) -> bool:
    """Draft 2020-12's types: booleans are not numbers, and an integral float is an integer."""
    if name == "string":
        return isinstance(value, str)
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    if isinstance(value, bool):
        return False
    if name == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, int | float)
    return False


def _plain_scalar(value: Any) -> bool:
    """A value whose equality jsonschema and Python agree on (``enum`` / ``const``): a string, or None."""
    return value is None or isinstance(value, str)


def _plain(schema: Any, depth: int) -> bool:
    """A schema object of the keywords above only (and not nested absurdly deep)."""
    return isinstance(schema, dict) and depth <= 32 and _KNOWN.issuperset(schema)


def plainly_valid(schema: Any, value: Any, _depth: int = 0) -> bool:
    """True only when ``value`` certainly matches ``schema`` and the schema uses only the common keywords
    (``type``, ``properties``, ``required``, ``additionalProperties``, ``items``, string ``enum`` / ``const``,
    lengths, ``pattern``, bounds). False means "ask jsonschema", not "invalid"."""
    if schema is True:
        return True
    if not _plain(schema, _depth):
        return False
    t = schema.get("type")
    if t is not None:
        names = t if isinstance(t, list) else [t]
        if not any(_is_type(value, n) for n in names):
            return False
    if "enum" in schema:
        options = schema["enum"]
        if not (
            isinstance(options, list) and _plain_scalar(value) and all(_plain_scalar(o) for o in options)
        ):
            return False
        if value not in options:
            return False
    if "const" in schema and not (
        _plain_scalar(value) and _plain_scalar(schema["const"]) and value == schema["const"]
    ):
        return False
    if isinstance(value, str):
        if len(value) > schema.get("maxLength", len(value)) or len(value) < schema.get("minLength", 0):
            return False
        pattern = schema.get("pattern")
        if pattern is not None and not (isinstance(pattern, str) and _search(pattern, value)):
            return False
    elif isinstance(value, int | float) and not isinstance(value, bool):
        low, high = schema.get("minimum"), schema.get("maximum")
        if (low is not None and not (_number(low) and value >= low)) or (
            high is not None and not (_number(high) and value <= high)
        ):
            return False
    elif isinstance(value, dict):
        props = schema.get("properties", {})
        required = schema.get("required", [])
        extra = schema.get("additionalProperties", True)
        if not (isinstance(props, dict) and isinstance(required, list) and extra in (True, False)):
            return False
        if any(r not in value for r in required):
            return False
        for k, v in value.items():
            sub = props.get(k)
            if sub is None:
                if extra is False:
                    return False
                continue
            if not plainly_valid(sub, v, _depth + 1):
                return False
    elif isinstance(value, list):
        items = schema.get("items", True)
        if len(value) > schema.get("maxItems", len(value)) or len(value) < schema.get("minItems", 0):
            return False
        if items is not True and not all(plainly_valid(items, v, _depth + 1) for v in value):
            return False
    return True


def _number(bound: Any) -> bool:
    return isinstance(bound, int | float) and not isinstance(bound, bool)


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except (re.error, RecursionError):
        return None


def _search(pattern: str, text: str) -> bool:
    """jsonschema's own ``pattern`` test (``re.search``); a pattern Python cannot compile is left to it."""
    compiled = _compiled(pattern)
    return compiled is not None and compiled.search(text) is not None


# -- certainly invalid ------------------------------------------------------------------------------------


def plainly_invalid(schema: Any, value: Any, _depth: int = 0) -> bool:
    """True only when ``value`` certainly fails ``schema`` (one of the common keywords it knows fails for
    sure). False means "ask jsonschema", not "valid". Each keyword of a schema made only of these keywords
    asserts on its own, so one certain failure is the schema's failure."""
    if schema is False:
        return True
    if not _plain(schema, _depth):
        return False
    t = schema.get("type")
    if t is not None:
        names = t if isinstance(t, list) else [t]
        known = bool(names) and all(isinstance(n, str) and n in _TYPES for n in names)
        if known and not any(_is_type(value, n) for n in names):
            return True
    if "enum" in schema:
        options = schema["enum"]
        if (
            isinstance(options, list)
            and _plain_scalar(value)
            and all(_plain_scalar(o) for o in options)
            and value not in options
        ):
            return True
    const = schema.get("const", value)
    if _plain_scalar(value) and _plain_scalar(const) and value != const:
        return True
    if isinstance(value, str):
        low, high = schema.get("minLength"), schema.get("maxLength")
        if (_count(low) and len(value) < low) or (_count(high) and len(value) > high):
            return True
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and _compiled(pattern) is not None and not _search(pattern, value):
            return True
    elif isinstance(value, int | float) and not isinstance(value, bool):
        low, high = schema.get("minimum"), schema.get("maximum")
        if (_finite(low) and value < low) or (_finite(high) and value > high):
            return True
    elif isinstance(value, dict):
        props = schema.get("properties", {})
        required = schema.get("required", [])
        extra = schema.get("additionalProperties", True)
        if not isinstance(props, dict):
            return False
        if isinstance(required, list) and any(isinstance(r, str) and r not in value for r in required):
            return True
        for k, v in value.items():
            sub = props.get(k, extra)
            if plainly_invalid(sub, v, _depth + 1):
                return True
    elif isinstance(value, list):
        low, high = schema.get("minItems"), schema.get("maxItems")
        if (_count(low) and len(value) < low) or (_count(high) and len(value) > high):
            return True
        items = schema.get("items", True)
        if any(plainly_invalid(items, v, _depth + 1) for v in value):
            return True
    return False


# -- certainly a well-formed schema ------------------------------------------------------------------------

_TEXT_KEYS = frozenset({"title", "description", "$comment", "format"})
_ANY_KEYS = frozenset({"default", "const"})
_FLAG_KEYS = frozenset({"deprecated", "readOnly", "writeOnly", "uniqueItems"})
_COUNT_KEYS = frozenset({"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"})
_BOUND_KEYS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_SUB_KEYS = frozenset({"additionalProperties", "items", "not"})
_LIST_KEYS = frozenset({"anyOf", "allOf", "oneOf"})


def plainly_well_formed(schema: Any, _depth: int = 0) -> bool:
    """True only when Draft 2020-12's metaschema certainly accepts ``schema`` (what
    ``Draft202012Validator.check_schema`` checks, ``pattern`` compiled as its ``regex`` format does).
    False means "ask jsonschema", which says what is wrong."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict) or _depth > 32:
        return False
    for key, v in schema.items():
        if key in _TEXT_KEYS:
            ok = isinstance(v, str)
        elif key in _ANY_KEYS:
            ok = _json_data(v)
        elif key in _FLAG_KEYS:
            ok = isinstance(v, bool)
        elif key in _COUNT_KEYS:
            ok = _count(v)
        elif key in _BOUND_KEYS:
            ok = _finite(v)
        elif key == "multipleOf":
            ok = _finite(v) and v > 0
        elif key == "type":
            names = v if isinstance(v, list) else [v]
            ok = (
                bool(names)
                and all(isinstance(n, str) and n in _TYPES for n in names)
                and len(set(names)) == len(names)
            )
        elif key == "properties":
            ok = isinstance(v, dict) and all(
                isinstance(k, str) and plainly_well_formed(sub, _depth + 1) for k, sub in v.items()
            )
        elif key == "required":
            ok = isinstance(v, list) and all(isinstance(r, str) for r in v) and len(set(v)) == len(v)
        elif key == "enum" or key == "examples":
            ok = isinstance(v, list) and _json_data(v)
        elif key == "pattern":
            ok = isinstance(v, str) and _compiled(v) is not None
        elif key in _SUB_KEYS:
            ok = plainly_well_formed(v, _depth + 1)
        elif key in _LIST_KEYS:
            ok = isinstance(v, list) and bool(v) and all(plainly_well_formed(s, _depth + 1) for s in v)
        else:
            return False
        if not ok:
            return False
    return True


def _json_data(value: Any, _depth: int = 0) -> bool:
    """Plain JSON data, not too deep (``_not_plain_json`` says what else it is)."""
    if isinstance(value, str | bool | int) or value is None:
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if _depth > 16:
        return False
    if isinstance(value, list):
        return all(_json_data(v, _depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_data(v, _depth + 1) for k, v in value.items())
    return False


def _count(v: Any) -> TypeGuard[int]:
    """A non-negative integer (the metaschema's ``nonNegativeInteger``; an integral float is left to it)."""
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _finite(v: Any) -> TypeGuard[float]:
    """A number that is not NaN or infinite (an integer always is: ``math.isfinite`` of a 400-digit one
    overflows)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return False
    return isinstance(v, int) or math.isfinite(v)
