"""Observations: what a tool call gives back to the model — structured, never free text.

``Observation.to_model()`` is the JSON-able dict sent to the model (and recorded as the
``tool.result`` output). Success: ``{"ok": true, **output}`` when the handler returned an object
(its own ``ok`` key is dropped), else ``{"ok": true, "output": value}``; plus ``effect_id``,
``duplicate`` and ``partial_result`` when they apply. Failure:
``{"ok": false, "error": <catalogue code>, "message", "details", "next_allowed"}``.

Handlers signal a domain error by returning ``{"ok": false, "error": "not_found", ...}`` or by
raising :class:`ToolFailure`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, get_args

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
