"""Observations: what a tool call gives back to the model — structured, never free text.

``Observation.to_model()`` is the JSON-able dict sent to the model (and recorded as the
``tool.result`` output). Success: ``{"ok": true, **output}`` when the handler returned an object
(its own ``ok`` key is dropped), else ``{"ok": true, "output": value}``; plus ``effect_id``,
``duplicate`` and ``partial_result`` when they apply. Failure:
``{"ok": false, "error": <catalogue code>, "message", "details", "next_allowed"}``.

Handlers signal a domain error by returning ``{"ok": false, "error": "not_found", ...}`` or by
raising :class:`ToolFailure`.

What a handler returns is made JSON by ONE encoder, :func:`to_jsonable`, before anything else sees
it (output schema, limits, the ledger, the trace, every adapter): pydantic models, dataclasses, enums,
datetimes, ``bytes`` (base64), sets (sorted), tuples, UUIDs, decimals and paths get their JSON form;
a cycle, a value nested too deeply or too large, or an object with no JSON form raises
:class:`NotSerializable`, which the gateway turns into an ``output_not_serializable`` observation.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import enum
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import PurePath
from typing import Any, get_args

from pydantic import BaseModel

from portagent.contracts._base import canonical_json
from portagent.contracts.tool import ErrorCode

ERROR_CODES: frozenset[str] = frozenset(get_args(ErrorCode))

NEXT_ALLOWED: dict[str, list[str]] = {
    "unknown_tool": ["use_a_listed_tool"],
    "validation_error": ["fix_arguments", "ask_user_for_missing_data"],
    "precondition_failed": ["ask_user", "re_read_state"],
    "permission_denied": ["use_read_only_tool", "ask_user"],
    "approval_required": ["wait_for_approval", "use_read_only_tool"],
    "approval_rejected": ["revise_plan", "ask_user"],
    "budget_exhausted": ["stop_with_evidence"],
    "not_found": ["ask_for_correct_id", "explain_and_stop"],
    "rate_limited": ["wait", "reduce_calls"],
    "timeout": ["retry_later_if_idempotent", "stop_with_evidence"],
    "partial_result": ["state_uncertainty"],
    "conflict": ["re_read_state", "re_plan"],
    "duplicate": ["use_recorded_outcome"],
    "handler_error": ["report_error", "stop_with_evidence"],
    "output_not_serializable": ["report_error", "stop_with_evidence"],
}
"""What the model may sensibly do next, per error code (the design source's ``next_allowed``)."""


class ToolFailure(Exception):
    """Raised by a handler to report a catalogue error (``not_found``, ``rate_limited`` …).

    ``details`` may carry ``retry_after_s`` for ``rate_limited``.
    """

    def __init__(self, code: str, message: str = "", details: Any = None) -> None:
        super().__init__(message or code)
        self.code = code if code in ERROR_CODES else "handler_error"
        self.message = message or code
        self.details = details
        if code not in ERROR_CODES:
            self.details = {"unknown_error_code": code, **(details if isinstance(details, dict) else {})}


@dataclass(frozen=True)
class Observation:
    """The structured result of one tool call."""

    ok: bool
    error: str | None = None
    message: str = ""
    details: Any = None
    next_allowed: list[str] | None = None
    output: Any = None
    effect_id: str | None = None
    duplicate: bool = False
    partial: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    """Additional top-level fields for the model (e.g. ``approval_id``, truncation facts)."""
    model_text: str | None = field(default=None, init=False, compare=False, repr=False)
    """``to_model()`` as the JSON text the model is sent, when it was written while the handler's output was
    sized (``with_model_text``): the output is serialised once per call, not once for its size and once
    more for the model. Not an init field: ``dataclasses.replace`` (an ``effect_id`` added) drops it."""

    def with_model_text(self, text: str) -> Observation:
        """This observation with ``model_text`` set (``text`` must be what ``to_model()`` serialises to)."""
        object.__setattr__(self, "model_text", text)
        return self

    @classmethod
    def success(cls, output: Any, **kw: Any) -> Observation:
        return cls(ok=True, output=output, **kw)

    @classmethod
    def failure(cls, code: str, message: str = "", details: Any = None, **kw: Any) -> Observation:
        assert code in ERROR_CODES, code
        kw.setdefault("next_allowed", list(NEXT_ALLOWED.get(code, [])))
        return cls(ok=False, error=code, message=message, details=details, **kw)

    def to_model(self) -> dict[str, Any]:
        """The JSON-able dict returned to the model."""
        out: dict[str, Any]
        if self.ok:
            if isinstance(self.output, dict):
                out = {"ok": True, **{k: v for k, v in self.output.items() if k != "ok"}}
            else:
                out = {"ok": True, "output": self.output}
            if self.effect_id is not None:
                out["effect_id"] = self.effect_id
            if self.duplicate:
                out["duplicate"] = True
            if self.partial:
                out["partial_result"] = True
            out.update(self.extra)
            return out
        out = {"ok": False, "error": self.error}
        if self.message:
            out["message"] = self.message
        if self.details is not None:
            out["details"] = self.details
        if self.next_allowed:
            out["next_allowed"] = list(self.next_allowed)
        out.update(self.extra)
        return out


def from_handler_value(value: Any) -> Observation:
    """Turn what a handler returned into an Observation.

    ``{"ok": false, "error": code, ...}`` is a domain error (an unknown code becomes
    ``handler_error``); anything else is a successful output.
    """
    if isinstance(value, dict) and value.get("ok") is False:
        code = value.get("error")
        message = str(value.get("message", "") or "")
        rest = {
            k: v for k, v in value.items() if k not in ("ok", "error", "message", "details", "next_allowed")
        }
        details = value.get("details", rest or None)
        next_allowed = value.get("next_allowed")
        if code not in ERROR_CODES:
            return Observation.failure(
                "handler_error",
                f"handler returned an unknown error code {code!r}",
                {"returned": value},
            )
        return Observation.failure(
            str(code), message, details, **({"next_allowed": list(next_allowed)} if next_allowed else {})
        )
    return Observation.success(value)


def success_text(output: Any) -> tuple[str, int] | None:
    """For a successful call without extra fields (``Observation.success(output)``): the JSON text its
    ``to_model()`` is sent as (sorted keys, non-ASCII kept: ``canonical_json``), and the byte length of
    ``output``'s own canonical JSON, which the size limit reads — both from one serialisation. None when
    the two cannot be told apart from one text (a dict whose ``ok`` is there but not ``true``).

    A dict output is sent as itself with ``"ok": true`` among its sorted keys (``", "`` and ``": "``
    separators: that entry and its separator are 12 bytes, 10 when it is the only one); any other output
    as ``{"ok": true, "output": <its JSON>}``."""
    if type(output) is dict:
        ok = output.get("ok", _ABSENT)
        if ok is _ABSENT:
            text = canonical_json({"ok": True, **output})
            return text, utf8_len(text) - (12 if output else 10)
        if ok is True:
            text = canonical_json(output)
            return text, utf8_len(text)
        return None
    inner = canonical_json(output)
    return '{"ok": true, "output": ' + inner + "}", utf8_len(inner)


_ABSENT = object()


def utf8_len(text: str) -> int:
    """Bytes of ``text`` in UTF-8 (ASCII text, the usual JSON, is not encoded to count it)."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


# -- the one JSON encoder ----------------------------------------------------------------------------

MAX_DEPTH = 200
"""Deepest nesting an output may have (a deeper one is ``output_not_serializable``)."""
MAX_NODES = 1_000_000
"""Most values (containers and scalars) an output may hold."""
MAX_INT_DIGITS = 4300
"""Longest integer JSON will carry (Python's own ``int`` → text limit)."""


class NotSerializable(Exception):
    """A handler's output has no JSON form: ``reason`` says why, ``path`` where (``$.items.3``)."""

    def __init__(self, reason: str, path: str, type_name: str | None = None) -> None:
        super().__init__(f"{reason} at {path}")
        self.reason = reason
        self.path = path
        self.type_name = type_name

    def details(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reason": self.reason, "path": self.path}
        if self.type_name:
            out["type"] = self.type_name
        return out


def to_jsonable(value: Any) -> Any:
    """``value`` as plain JSON data (dict, list, str, int, float, bool, None). A value that already is
    comes back equal (same keys in the same order), so its JSON bytes do not change."""
    return _Encoder().encode(value, "$", 0)


def _key(k: Any, path: str) -> str:
    if isinstance(k, str):
        return k
    if k is None or isinstance(k, bool | int | float):
        return json.dumps(k)  # what json.dumps does to such keys
    if isinstance(k, enum.Enum):
        return _key(k.value, path)
    if isinstance(k, dt.date | dt.time | uuid.UUID | Decimal | PurePath):
        return k.isoformat() if isinstance(k, dt.date | dt.time) else str(k)
    raise NotSerializable(f"a key of type {type(k).__name__} has no JSON form", path, type(k).__name__)


_PLAIN = frozenset({str, bool, float, type(None)})
_INT_BITS = MAX_INT_DIGITS * 3.32


class _Encoder:
    def __init__(self) -> None:
        self.nodes = 0
        self.active: set[int] = set()

    def encode(self, v: Any, path: str, depth: int) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise NotSerializable(f"output holds more than {MAX_NODES} values", path)
        if depth > MAX_DEPTH:
            raise NotSerializable(f"output is nested more than {MAX_DEPTH} levels deep", path)
        if v is None or isinstance(v, str | bool | float):
            return v
        if isinstance(v, enum.Enum):  # before int: an IntEnum is an int
            return self.encode(v.value, path, depth)
        if isinstance(v, int):
            if v.bit_length() > _INT_BITS:
                raise NotSerializable(f"an integer longer than {MAX_INT_DIGITS} digits", path, "int")
            return int(v)
        if isinstance(v, bytes | bytearray | memoryview):
            return base64.b64encode(bytes(v)).decode("ascii")
        if isinstance(v, dt.datetime | dt.date | dt.time):
            return v.isoformat()
        if isinstance(v, dt.timedelta):
            return v.total_seconds()
        if isinstance(v, uuid.UUID | Decimal | PurePath):
            return str(v)
        if isinstance(v, dict | list | tuple | set | frozenset | Mapping) or _is_model(v):
            ident = id(v)
            if ident in self.active:
                raise NotSerializable("the output refers to itself (a cycle)", path, type(v).__name__)
            self.active.add(ident)
            try:
                return self._container(v, path, depth)
            finally:
                self.active.discard(ident)
        raise NotSerializable(
            f"an object of type {type(v).__name__} has no JSON form", path, type(v).__name__
        )

    def _container(self, v: Any, path: str, depth: int) -> Any:
        # A child that ``encode`` would give back as it is — a str, bool, float, None or short enough int
        # (exact types), within the depth and node limits — is counted here and not visited: outputs are
        # mostly these, and a call per value was most of this walk's cost. Anything else (and any limit
        # reached) goes through ``encode``, which also names the path of what it refuses.
        child = depth + 1
        shallow = child <= MAX_DEPTH
        if isinstance(v, dict | Mapping):
            out: dict[str, Any] = {}
            for k, x in v.items():
                key = k if type(k) is str else _key(k, path)
                kind = type(x)
                if (
                    shallow
                    and (kind in _PLAIN or (kind is int and x.bit_length() <= _INT_BITS))
                    and self.nodes < MAX_NODES
                ):
                    self.nodes += 1
                    out[key] = x
                else:
                    out[key] = self.encode(x, f"{path}.{k}", child)
            return out
        if isinstance(v, list | tuple):
            items: list[Any] = []
            for i, x in enumerate(v):
                kind = type(x)
                if (
                    shallow
                    and (kind in _PLAIN or (kind is int and x.bit_length() <= _INT_BITS))
                    and self.nodes < MAX_NODES
                ):
                    self.nodes += 1
                    items.append(x)
                else:
                    items.append(self.encode(x, f"{path}.{i}", child))
            return items
        if isinstance(v, set | frozenset):
            items = [self.encode(x, f"{path}.<item>", depth + 1) for x in v]
            return sorted(items, key=lambda x: json.dumps(x, sort_keys=True, ensure_ascii=False))
        if dataclasses.is_dataclass(v):
            return {
                f.name: self.encode(getattr(v, f.name), f"{path}.{f.name}", depth + 1)
                for f in dataclasses.fields(v)
            }
        try:  # a pydantic model: its own JSON form (aliases, serializers), then checked like the rest
            dumped = v.model_dump(mode="json")
        except Exception as e:
            raise NotSerializable(
                f"{type(v).__name__}.model_dump failed: {type(e).__name__}", path, type(v).__name__
            ) from None
        return self.encode(dumped, path, depth)


def _is_model(v: Any) -> bool:
    return (dataclasses.is_dataclass(v) and not isinstance(v, type)) or isinstance(v, BaseModel)


def not_serializable(tool: str, e: NotSerializable) -> Observation:
    """The observation for an output the encoder refused."""
    return Observation.failure(
        "output_not_serializable", f"{tool} returned output that cannot be sent as JSON: {e}", e.details()
    )


def jsonable_or_text(value: Any) -> Any:
    """``to_jsonable(value)``, or its ``repr`` (cut to 2,000 characters) when it has no JSON form —
    for handler-supplied details of an error, which must never turn one error into another."""
    try:
        return to_jsonable(value)
    except NotSerializable:
        try:
            return repr(value)[:2000]
        except Exception:  # a __repr__ that raises
            return f"<{type(value).__name__}>"
