"""The execution half of the gateway: handler invocation with timeout and retries, output checks,
and the effect-ledger protocol for idempotent tools (ADR 0003, ADR 0004).

Nothing here decides permissions; ``ToolGateway.execute`` calls in only for a call that passed every
check of ``prepare``.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from portagent.contracts._base import canonical_json
from portagent.contracts.tool import ToolSpec
from portagent.core.secrets import mask_data, mask_text
from portagent.tools.handlers import HandlerImportError, call_function, call_handler, resolve
from portagent.tools.ledger import EffectLedger, LedgerEntry, owner_alive
from portagent.tools.observations import (
    NotSerializable,
    Observation,
    ToolFailure,
    from_handler_value,
    jsonable_or_text,
    not_serializable,
    success_text,
    to_jsonable,
)
from portagent.tools.policy import MISSING, lookup
from portagent.tools.tool_context import ToolContext, session_state
from portagent.tools.validation import (
    BadSchemaError,
    limit_output,
    over_max_rows,
    schema_errors,
    validator_for,
)

if TYPE_CHECKING:
    from portagent.contracts.policy import ApprovalCard
    from portagent.tools.context import GatewayContext

RETRYABLE = ("timeout", "rate_limited")
_SAFE_EFFECTS = ("read", "compute", "prepare_change")


def is_idempotent(tool: ToolSpec) -> bool:
    """Retries are allowed only for these: harmless effects, or effects guarded by a key."""
    return tool.effect in _SAFE_EFFECTS or tool.idempotency.required


class KeyMissingError(Exception):
    """The idempotency key cannot be built from the arguments."""


def idempotency_key(tool: ToolSpec, args: dict[str, Any], args_hash: str) -> str:
    idem = tool.idempotency
    if idem.key_field:
        value = lookup(args, idem.key_field)
        if value is None or value is MISSING:
            raise KeyMissingError(f"idempotency key field {idem.key_field!r} is missing from the arguments")
        return value if isinstance(value, str) else canonical_json(value)
    if idem.key_template:
        try:
            return idem.key_template.format(**args)
        except (KeyError, IndexError, AttributeError, ValueError) as e:
            raise KeyMissingError(
                f"idempotency key template {idem.key_template!r} cannot be filled: {e}"
            ) from None
    return f"{tool.name}:{args_hash}"


@dataclass
class Attempt:
    """What running the handler gave: the observation, the raw output, the wall time, and whether the
    absence of an effect is *certain* (a refusal) or unknown (timeout, crash)."""

    obs: Observation
    raw: Any = None
    latency_ms: float | None = None
    certain: bool = True
    effect_happened: bool = False


def _text(e: BaseException) -> str:
    """An exception's text, even when its ``__str__`` raises."""
    try:
        return str(e)
    except Exception:
        return f"<{type(e).__name__} with an unprintable message>"


def tool_context_of(
    tool: ToolSpec,
    args: dict[str, Any],
    ctx: GatewayContext,
    call_id: str,
    key: str | None,
    approval: ApprovalCard | None,
) -> ToolContext:
    """The ``ToolContext`` a handler that declares one receives (tools/tool_context.py)."""
    return ToolContext(
        run_id=ctx.run_id,
        agent=ctx.agent,
        call_id=call_id,
        provider=ctx.provider,
        tool=tool.name,
        arguments=dict(args),
        state=ctx.state if ctx.state is not None else session_state(ctx.budget),
        approval=approval,
        scope=ctx.scope,
        actor=ctx.actor,
        env=ctx.env,
        idempotency_key=key,
        context=dict(ctx.context),
    )


def _backoff(attempt: int, details: Any) -> float:
    if isinstance(details, dict):
        hint = details.get("retry_after_s")
        if isinstance(hint, int | float) and not isinstance(hint, bool) and hint >= 0:
            return min(float(hint), 5.0)
    return min(0.01 * float(2**attempt), 1.0)


def success_observation(tool: ToolSpec, raw: Any, **kw: Any) -> Observation:
    """A successful output, cut to the tool's row and byte limits (``partial_result`` when cut). The output
    is serialised once: the text its size is read from is, when nothing is cut and nothing is added
    (``kw``), the observation's JSON for the model too (``Observation.model_text``)."""
    # not when rows are cut: the uncut output may be large, and its text would not be the one sent
    known = None if kw or over_max_rows(raw, tool.budgets) else success_text(raw)
    value, facts = limit_output(raw, tool.budgets, size=known[1] if known is not None else None)
    if facts is None:
        obs = Observation.success(value, **kw)
        return obs.with_model_text(known[0]) if known is not None else obs
    return Observation.success(value, partial=True, extra={"truncated": facts}, **kw)


async def invoke(
    tool: ToolSpec,
    args: dict[str, Any],
    ctx: GatewayContext,
    call_id: str,
    key: str | None = None,
    before_retry: Callable[[], Awaitable[Any]] | None = None,
    approval: ApprovalCard | None = None,
) -> Attempt:
    """Run the handler (retrying timeouts/rate limits for idempotent tools) and check its output.

    ``before_retry`` (ledger-guarded tools with a ``reconcile``) is asked before each retry whether the
    failed attempt's effect landed after all; an output ends the retries as that attempt's result."""
    try:
        resolved = resolve(tool.handler)
    except HandlerImportError as e:
        return Attempt(Observation.failure("handler_error", str(e), {"handler": tool.handler}))
    hctx = ctx.handler_context(call_id, key)
    tctx = tool_context_of(tool, args, ctx, call_id, key, approval) if resolved.tool_context_param else None
    retries = tool.budgets.max_retries if is_idempotent(tool) else 0
    timeout_s = tool.budgets.timeout_ms / 1000.0
    t0 = ctx.clock.monotonic()
    attempt = 0
    obs: Observation  # every pass of the loop assigns it; declared here for the checker
    while True:
        raw: Any = None
        certain = True
        try:
            raw = to_jsonable(await call_handler(resolved, args, hctx, timeout_s, tctx))
            obs = from_handler_value(raw)
        except NotSerializable as e:  # the handler ran: its effect happened, its output is unusable
            latency = round((ctx.clock.monotonic() - t0) * 1000.0, 3)
            return Attempt(not_serializable(tool.name, e), None, latency, True, effect_happened=True)
        except TimeoutError:
            certain = False
            obs = Observation.failure(
                "timeout",
                f"{tool.name} did not answer within {tool.budgets.timeout_ms} ms",
                {"timeout_ms": tool.budgets.timeout_ms, "attempts": attempt + 1},
            )
        except ToolFailure as f:
            obs = Observation.failure(f.code, mask_text(f.message), jsonable_or_text(f.details))
            certain = f.code != "timeout"  # a handler that says "timeout" cannot know either
        except asyncio.CancelledError:
            raise
        except Exception as e:
            certain = False
            obs = Observation.failure(  # the exception's text is masked: it goes to the model and to disk
                "handler_error",
                mask_text(f"{tool.name} raised {type(e).__name__}: {_text(e)}"),
                {"handler": tool.handler, "exception": type(e).__name__},
            )
        if obs.error in RETRYABLE and attempt < retries:
            await asyncio.sleep(_backoff(attempt, obs.details))
            landed = await before_retry() if before_retry is not None else None
            if landed is not None:
                raw, obs, certain = (
                    jsonable_or_text(landed),
                    from_handler_value(jsonable_or_text(landed)),
                    True,
                )
                break
            attempt += 1
            continue
        break
    latency = round((ctx.clock.monotonic() - t0) * 1000.0, 3)
    if not obs.ok:
        return Attempt(obs, raw, latency, certain)
    if tool.output_schema is not None:
        try:
            problems = schema_errors(
                validator_for(tool.output_schema, f"{tool.ref}:out:{tool.schema_hash}"), raw
            )
        except BadSchemaError as e:
            problems = [{"path": "", "message": f"output_schema: {e}"}]
        if problems:
            obs = Observation.failure(
                "handler_error",
                f"{tool.name} returned output that does not match its output_schema",
                problems,
            )
            return Attempt(obs, raw, latency, True, effect_happened=True)
    return Attempt(success_observation(tool, raw), raw, latency, True, effect_happened=True)


# -- idempotent effects --------------------------------------------------------------------------------

_GUARDS: dict[tuple[str, str, str, str], threading.Lock] = {}
_GUARDS_LOCK = threading.Lock()


class GuardBusy(Exception):
    """Another caller in this process kept the key longer than this caller may wait."""


@contextlib.asynccontextmanager
async def key_guard(
    ledger: EffectLedger, scope: str, tool: str, key: str, max_wait_s: float
) -> AsyncIterator[None]:
    """One in-flight execution per key within this process (threads and event loops alike); across
    processes the ledger's UNIQUE constraint and owner liveness arbitrate. Waiting is bounded: after
    ``max_wait_s`` the caller gives up with ``GuardBusy``."""
    ident = (str(ledger.path.resolve()), scope, tool, key)
    with _GUARDS_LOCK:
        lock = _GUARDS.setdefault(ident, threading.Lock())
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max_wait_s
    while not lock.acquire(blocking=False):
        if loop.time() > deadline:
            raise GuardBusy(f"key {key!r} is still in use after {max_wait_s:g} s")
        await asyncio.sleep(0.002)
    try:
        yield
    finally:
        lock.release()


def _effect_id(raw: Any, ctx: GatewayContext) -> str:
    if isinstance(raw, dict) and isinstance(raw.get("effect_id"), str) and raw["effect_id"]:
        return str(raw["effect_id"])
    return ctx.ids.effect_id()


def _conflict_other_args(entry: LedgerEntry, args_hash: str) -> Observation:
    return Observation.failure(
        "conflict",
        f"idempotency key {entry.key!r} was already used with different arguments",
        {"key": entry.key, "recorded_args_hash": entry.args_hash, "args_hash": args_hash},
    )


async def run_idempotent(
    tool: ToolSpec,
    args: dict[str, Any],
    args_hash: str,
    key: str,
    ctx: GatewayContext,
    ledger: EffectLedger,
    call_id: str,
    charge: Callable[[], Observation | None],
    approval: ApprovalCard | None = None,
) -> Attempt:
    """Intent → effect → outcome, never the same effect twice. ``charge()`` returns a rejection
    Observation or None, and is called only right before the handler really runs."""
    # The winner of a race holds the key while its handler runs (every attempt, plus backoff), so a
    # loser waits that long and a little more before answering ``conflict``.
    max_wait = (tool.budgets.timeout_ms / 1000.0 + 1.0) * (tool.budgets.max_retries + 1) + 5.0
    try:
        async with key_guard(ledger, ctx.scope, tool.name, key, max_wait):
            return await _run_owned(tool, args, args_hash, key, ctx, ledger, call_id, charge, approval)
    except GuardBusy as e:
        return Attempt(
            Observation.failure(
                "conflict",
                f"{tool.name}: {e}; another call with the same key is still running in this process",
                {"key": key, "scope": ctx.scope},
            )
        )


async def _run_owned(
    tool: ToolSpec,
    args: dict[str, Any],
    args_hash: str,
    key: str,
    ctx: GatewayContext,
    ledger: EffectLedger,
    call_id: str,
    charge: Callable[[], Observation | None],
    approval: ApprovalCard | None = None,
) -> Attempt:
    """The body of ``run_idempotent``, with the key guard held."""
    scope = ctx.scope
    entry = ledger.begin(scope, tool.name, key, args_hash)
    if entry.state != "new" and entry.args_hash != args_hash:
        return Attempt(_conflict_other_args(entry, args_hash))
    if entry.state == "done":
        assert entry.effect_id is not None
        return Attempt(
            success_observation(tool, entry.outcome, effect_id=entry.effect_id, duplicate=True), entry.outcome
        )
    if entry.state == "pending":
        resolved = await _resolve_pending(tool, args, key, entry, ctx, ledger, call_id)
        if resolved is not None:
            return resolved
    # This caller owns the intent: run the effect exactly once.
    rejection = charge()
    if rejection is not None:
        ledger.abandon(scope, tool.name, key)
        return Attempt(rejection)
    if ctx.recorder is not None:
        # the intent is in the ledger: the trace so far (the call, its decision, its approval) goes to disk
        # before the effect, so a process killed mid-effect leaves the effect's call in trace.jsonl
        ctx.recorder.flush()
    att = await invoke(
        tool, args, ctx, call_id, key, _status_check(tool, args, key, ctx, call_id), approval=approval
    )
    if att.effect_happened:
        eid = _effect_id(att.raw, ctx)
        ledger.complete(scope, tool.name, key, mask_data(att.raw), eid)  # ledger.db holds no secret
        att.obs = _with_effect(att.obs, eid)
    elif att.certain:
        ledger.abandon(scope, tool.name, key)
    else:
        ledger.orphan(scope, tool.name, key, f"{att.obs.error}: {att.obs.message}")
    return att


def _status_check(
    tool: ToolSpec, args: dict[str, Any], key: str, ctx: GatewayContext, call_id: str
) -> Callable[[], Awaitable[Any]] | None:
    """Before retrying a timed-out effect, ask ``reconcile`` whether it landed (never retry blindly)."""
    ref = tool.idempotency.reconcile
    if not ref:
        return None

    async def check() -> Any:
        try:
            return await call_function(
                resolve(ref),
                (key, args, ctx.handler_context(call_id, key)),
                {},
                tool.budgets.timeout_ms / 1000.0,
            )
        except Exception:  # cannot tell: retry as declared (the key still guards the backend)
            return None

    return check


def _with_effect(obs: Observation, effect_id: str) -> Observation:
    return replace(obs, effect_id=effect_id)


async def _resolve_pending(
    tool: ToolSpec,
    args: dict[str, Any],
    key: str,
    entry: LedgerEntry,
    ctx: GatewayContext,
    ledger: EffectLedger,
    call_id: str,
) -> Attempt | None:
    """A pending intent: in flight elsewhere → conflict; orphaned → claim it and reconcile. Returns
    None when the effect certainly never happened and this caller (now the owner) must run it."""
    where = {
        "scope": ctx.scope,
        "tool": tool.name,
        "key": key,
        "ledger": str(ledger.path),
        "recorded_at": entry.created_at,
        "last_error": entry.last_error,
    }
    alive = False if entry.owner == ledger.me else owner_alive(entry.owner)
    if alive is not False:
        return Attempt(
            Observation.failure(
                "conflict",
                f"{tool.name} with key {key!r} is in progress in another process ({entry.owner})",
                {**where, "owner": entry.owner},
            )
        )
    if not ledger.claim(entry):
        return Attempt(
            Observation.failure(
                "conflict", f"{tool.name} with key {key!r} was just claimed by another process", where
            )
        )
    if not tool.idempotency.reconcile:
        ledger.orphan(ctx.scope, tool.name, key, entry.last_error or "intent without outcome")
        return Attempt(
            Observation.failure(
                "conflict",
                f"an earlier attempt of {tool.name} with key {key!r} recorded its intent but no outcome (it crashed or "
                "timed out), so whether the effect happened is unknown. Declare idempotency.reconcile on the tool to "
                f"resolve this automatically, or check the target system and remove the entry from {ledger.path}.",
                where,
            )
        )
    try:
        fn = resolve(tool.idempotency.reconcile)
        found = await call_function(
            fn, (key, args, ctx.handler_context(call_id, key)), {}, tool.budgets.timeout_ms / 1000.0
        )
    except Exception as e:  # import failure, timeout, or the function raised
        ledger.orphan(ctx.scope, tool.name, key, mask_text(f"reconcile failed: {e}"))
        return Attempt(
            Observation.failure(
                "conflict",
                f"reconcile {tool.idempotency.reconcile!r} failed for key {key!r}: {type(e).__name__}: {e}",
                where,
            )
        )
    if found is None:
        return None
    found = jsonable_or_text(found)
    eid = _effect_id(found, ctx)
    ledger.complete(ctx.scope, tool.name, key, mask_data(found), eid)
    obs = success_observation(tool, found, effect_id=eid, duplicate=True)
    return Attempt(replace(obs, extra={**obs.extra, "reconciled": True}), found)
