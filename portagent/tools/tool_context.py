"""``ToolContext``: what a handler may ask to receive about the call it serves, on every provider.

A handler declares a parameter annotated ``ToolContext`` (any name) and the gateway passes one on each
call (ADR 0004)::

    from portagent.tools.tool_context import ToolContext

    def add_to_cart(sku: str, ctx: ToolContext) -> dict:
        cart = ctx.state.setdefault("cart", [])
        cart.append(sku)
        return {"items": len(cart), "run": ctx.run_id}

``state`` is one mapping per session (every agent of the run, and each tool call in it, see the same
mapping); it lives as long as the run's session in this process — a run resumed after an approval pause
starts with an empty one. It is the portable form of ADK's ``tool_context.state`` and of the object an
openai-agents ``RunContextWrapper`` carries (``migration/shims.py`` adapts imported functions to it).
"""

from __future__ import annotations

import threading
import typing
import weakref
from dataclasses import dataclass, field
from typing import Any

from portagent.contracts.policy import ApprovalCard


class SessionState(dict[str, Any]):
    """The per-session state mapping (a plain dict underneath)."""


_STATES: dict[int, SessionState] = {}
_STATES_LOCK = threading.Lock()


def session_state(owner: object) -> SessionState:
    """The state mapping of the session that ``owner`` stands for — an object every gateway of one
    session shares (the run's ``RunBudget``): created empty the first time, dropped with ``owner``. Keyed
    by identity, not by run id, so two runs that happen to share an id (fixed test ids, a replay) never
    share state."""
    key = id(owner)
    with _STATES_LOCK:
        state = _STATES.get(key)
        if state is not None:
            return state
        state = SessionState()
        _STATES[key] = state
    # Registered outside the lock: making the finalizer allocates, and an allocation may run the garbage
    # collector, whose finalizers of earlier owners call ``_drop`` on this thread.
    weakref.finalize(owner, _drop, key)
    return state


def _drop(key: int) -> None:
    """Forget a dead owner's state. Runs from the garbage collector, on whatever thread allocated when it
    ran — also one inside ``session_state``'s lock — so it takes no lock: one ``dict.pop`` is atomic, and a
    dead owner's id is not anyone else's until it is freed, after this runs. (It took the lock: a run
    deadlocked building its gateway when a collection fell inside the lock.)"""
    _STATES.pop(key, None)


@dataclass(frozen=True)
class ToolContext:
    """One tool call's identity and its session's state, given to a handler that asks for it."""

    run_id: str
    """The run this call belongs to."""
    agent: str
    """The agent whose tool this is."""
    call_id: str
    """portagent's id of this call (``call_<n>``), the one in the trace."""
    provider: str
    """``openai``, ``claude``, ``adk`` (or ``local`` / ``mcp`` outside an agent run)."""
    tool: str
    """The tool's name."""
    arguments: dict[str, Any] = field(default_factory=dict)
    """This call's arguments (as the handler receives them)."""
    state: dict[str, Any] = field(default_factory=dict)
    """Per-session state: read and write it; every call of the session sees the same mapping."""
    approval: ApprovalCard | None = None
    """The decided approval card that authorised this call (``None`` when none was needed)."""
    scope: str = ""
    """The run scope (namespace of the effect ledger and approval cards)."""
    actor: str = "user"
    env: str = "dev"
    idempotency_key: str | None = None
    """The call's idempotency key, for tools that have one."""
    context: dict[str, Any] = field(default_factory=dict)
    """A copy of the run's context (``RunRequest.context``: confidence, evidence, workspace …)."""


def tool_context_param(fn: Any) -> str | None:
    """The name of ``fn``'s parameter annotated ``ToolContext`` (or ``ToolContext | None``), if any.

    Annotations are evaluated (``typing.get_type_hints``) so that string annotations resolve to the real
    class; only when they cannot be evaluated is the written annotation compared by name."""
    import inspect

    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None
    target = fn if inspect.isroutine(fn) else getattr(fn, "__call__", fn)  # noqa: B004
    try:
        hints = typing.get_type_hints(target)
    except Exception:
        hints = {}
    for name, p in params.items():
        hint = hints.get(name, p.annotation)
        if _is_tool_context(hint):
            return name
    return None


def _is_tool_context(hint: Any) -> bool:
    if hint is ToolContext:
        return True
    if isinstance(hint, str):  # an annotation that could not be evaluated
        return hint.replace(" ", "") in {
            "ToolContext",
            "portagent.tools.tool_context.ToolContext",
            "ToolContext|None",
            "Optional[ToolContext]",
        }
    return any(arg is ToolContext for arg in typing.get_args(hint))
