"""JSON Schema checks and output limits used by the gateway.

Validators are compiled once per (tool, schema) and cached: the gateway must add well under a
millisecond to a read tool. Draft 2020-12, ``format`` not asserted (annotations only, as the draft
says by default); ``jsonschema`` already refuses booleans for ``integer``/``number``.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError

from portagent.contracts._base import canonical_json
from portagent.contracts.tool import ToolBudgets

_VALIDATORS: dict[str, Draft202012Validator] = {}
_LOCK = threading.Lock()


class BadSchemaError(Exception):
    """A tool's own schema is not valid JSON Schema (``portagent validate`` would have said so)."""


def validator_for(schema: dict[str, Any], key: str | None = None) -> Draft202012Validator:
    """A compiled validator, cached by ``key`` (e.g. ``tool@version:input:schema_hash``)."""
    k = key or canonical_json(schema)
    v = _VALIDATORS.get(k)
    if v is not None:
        return v
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as e:
        raise BadSchemaError(f"invalid JSON Schema: {e.message}") from e
    v = Draft202012Validator(schema)
    with _LOCK:
        _VALIDATORS[k] = v
    return v


def _path(err: ValidationError) -> str:
    return ".".join(str(p) for p in err.absolute_path)


def _detail(err: ValidationError) -> dict[str, Any]:
    path = _path(err)
    required = err.validator_value  # a list for "required" (the schema was checked when compiled)
    if err.validator == "required" and isinstance(err.instance, dict) and isinstance(required, list):
        missing = [p for p in required if p not in err.instance and repr(p) in err.message]
        if missing:
            path = f"{path}.{missing[0]}" if path else str(missing[0])
    return {"path": path, "message": err.message, "rule": str(err.validator)}


def schema_errors(validator: Draft202012Validator, instance: Any) -> list[dict[str, Any]]:
    """Every error (not just the first), each with its dotted ``path``, ``message`` and ``rule``."""
    if plainly_valid(validator.schema, instance):
        return []
    errors = sorted(validator.iter_errors(instance), key=lambda e: (_path(e), str(e.validator)))
    return [_detail(e) for e in errors]


# -- a shortcut for the usual tool schema ---------------------------------------------------------------
# jsonschema builds a validator object for every subschema it descends into: checking two arguments against
# a small object schema cost more than the rest of the gateway's checks together. Most tool schemas use only
# the keywords below; for those, ``plainly_valid`` answers "valid" itself. It never answers "invalid": any
# doubt (an error, a keyword it does not know) goes to jsonschema, whose errors are the ones reported.

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


def plainly_valid(schema: Any, value: Any, _depth: int = 0) -> bool:
    """True only when ``value`` certainly matches ``schema`` and the schema uses only the common keywords
    (``type``, ``properties``, ``required``, ``additionalProperties``, ``items``, string ``enum`` / ``const``,
    lengths, ``pattern``, bounds). False means "ask jsonschema", not "invalid"."""
    if schema is True:
        return True
    if not isinstance(schema, dict) or _depth > 32:
        return False
    for key in schema:
        if key not in _CHECKED and key not in _NOTES:
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


# -- output limits -------------------------------------------------------------------------------------

_ROW_KEYS = ("rows", "items")


def _size(value: Any) -> int:
    text = canonical_json(value)
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _cut_str(text: str, max_bytes: int) -> str:
    raw = text.encode("utf-8")[: max(0, max_bytes)]
    return raw.decode("utf-8", errors="ignore")


def _fit_prefix(items: list[Any], fits: Any) -> list[Any]:
    lo, hi = 0, len(items)
    while lo < hi:  # largest n with fits(items[:n])
        mid = (lo + hi + 1) // 2
        if fits(items[:mid]):
            lo = mid
        else:
            hi = mid - 1
    return items[:lo]


def _shrink(value: Any, max_bytes: int) -> Any:
    if _size(value) <= max_bytes:
        return value
    if isinstance(value, str):
        cut = _cut_str(value, max_bytes - 2)
        while cut and _size(cut) > max_bytes:
            cut = cut[:-1]
        return cut
    if isinstance(value, list):
        return _fit_prefix(value, lambda xs: _size(xs) <= max_bytes)
    if isinstance(value, dict):
        out = dict(value)
        for key in sorted(out, key=lambda k: _size(out[k]), reverse=True):
            if _size(out) <= max_bytes:
                break
            field = out[key]
            if isinstance(field, str | list | dict):
                others = _size({k: v for k, v in out.items() if k != key}) + len(canonical_json(key)) + 4
                out[key] = _shrink(field, max(0, max_bytes - others))
        if _size(out) <= max_bytes:
            return out
    text = canonical_json(value)
    return {"truncated_preview": _shrink(text, max(0, max_bytes - len('{"truncated_preview": ""}')))}


def over_max_rows(value: Any, budgets: ToolBudgets) -> bool:
    """Whether ``max_rows`` cuts ``value`` (a list, or a dict's ``rows`` / ``items`` list)."""
    limit = budgets.max_rows
    if limit is None:
        return False
    if isinstance(value, list):
        return len(value) > limit
    if isinstance(value, dict):
        for key in _ROW_KEYS:
            rows = value.get(key)
            if isinstance(rows, list) and len(rows) > limit:
                return True
    return False


def limit_output(
    value: Any, budgets: ToolBudgets, size: int | None = None
) -> tuple[Any, dict[str, Any] | None]:
    """Apply ``max_rows`` then ``max_output_bytes``. Returns the (possibly cut) value and, when
    anything was cut, the facts to report beside it (``partial_result``). ``size``: the byte length of
    ``value``'s canonical JSON when the caller has it already (it is not serialised again)."""
    facts: dict[str, Any] = {}
    if budgets.max_rows is not None:
        if isinstance(value, list) and len(value) > budgets.max_rows:
            facts.update(rows_total=len(value), rows_returned=budgets.max_rows)
            value = value[: budgets.max_rows]
        elif isinstance(value, dict):
            for key in _ROW_KEYS:
                rows = value.get(key)
                if isinstance(rows, list) and len(rows) > budgets.max_rows:
                    facts.update(rows_total=len(rows), rows_returned=budgets.max_rows)
                    value = {**value, key: rows[: budgets.max_rows]}
                    break
    if size is None or facts:  # rows were cut: the size given is the uncut value's
        size = _size(value)
    if size > budgets.max_output_bytes:
        value = _shrink(value, budgets.max_output_bytes)
        facts.update(output_bytes=size, max_output_bytes=budgets.max_output_bytes)
    return value, (facts or None)
