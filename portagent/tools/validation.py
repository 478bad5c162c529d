"""JSON Schema checks and output limits used by the gateway.

Validators are compiled once per (tool, schema) and cached: the gateway must add well under a
millisecond to a read tool. Draft 2020-12, ``format`` not asserted (annotations only, as the draft
says by default); ``jsonschema`` already refuses booleans for ``integer``/``number``.
"""

from __future__ import annotations

import threading
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from portagent.contracts._base import canonical_json
from portagent.contracts.schema_faults import schema_problem
from portagent.contracts.schema_plain import plainly_valid
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
    fault = schema_problem(schema)  # (the metaschema check costs more than the rest of a call)
    if fault is not None:
        raise BadSchemaError(f"invalid JSON Schema: {fault.message}")
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
    try:
        errors = sorted(validator.iter_errors(instance), key=lambda e: (_path(e), str(e.validator)))
    except Exception as e:  # a schema jsonschema cannot evaluate answers the call, never escapes
        # ``schema_problem`` refuses the schemas known to do this (a ``$ref`` pointing nowhere) where schemas
        # are checked; anything it misses must still end as the call's answer, or a provider run fails, a
        # trace loses its tool.result, and an MCP client gets "Internal server error".
        return [
            {
                "path": "",
                "message": f"the schema cannot be evaluated: {type(e).__name__}: {e}",
                "rule": "schema",
            }
        ]
    return [_detail(e) for e in errors]


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
