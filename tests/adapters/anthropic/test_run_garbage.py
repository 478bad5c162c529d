"""A finished run is freed by reference counting: it leaves none of portagent's own objects as cyclic garbage.

Why it matters (issue 18): a run left in reference cycles (session ↔ gateway, the model client's response
hook holding the session, a stop signal whose traceback holds the session, the run's task holding the
exception whose traceback holds the runner's frame) is freed only by the garbage collector, which then runs
about twice as often as for the bare SDK loop, and whose full collections walk every finished run not yet
collected. The SDK's own cycles (its client, the runner) are not portagent's and are not counted: only
instances of portagent's classes, and portagent's functions other than the response hook the SDK's client
keeps (it holds the session by a weak reference). The emulator serving the test is not the run's either.
"""

from __future__ import annotations

import asyncio
import gc
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("anthropic", reason="anthropic is not installed (pip install 'portagent[anthropic]')")
from runtime_testkit import (
    bundle,
    emulator_fixture,  # noqa: F401  (the "emu" fixture)
    fresh_handlers_fixture,  # noqa: F401  (autouse)
    with_budget,
)
from runtime_testkit import kit as adk_kit

NOT_THE_RUN = {
    "http_error_hook.<locals>.hook",  # kept by the SDK's own (cyclic) client; holds the run only weakly
    "AgentBundle.delegation_cycle.<locals>.visit",  # a recursive closure of the verdict: no run state in it
}
"""Portagent functions left in cycles that hold none of the run's objects."""


def _ours(obj: object) -> str | None:
    """A name for ``obj`` when it is portagent's own (not the emulator's, not the SDK client's hook)."""
    if type(obj).__name__ == "function":
        module, name = getattr(obj, "__module__", "") or "", getattr(obj, "__qualname__", "")
    else:
        module, name = type(obj).__module__, type(obj).__qualname__
    if not module.startswith("portagent") or module.startswith("portagent.emulator"):
        return None
    return None if name in NOT_THE_RUN else f"{module}.{name}"


@pytest.fixture
def cyclic_garbage_of(emu: Any) -> Iterator[Callable[..., tuple[str, list[str]]]]:
    """Runs a bundle on the anthropic adapter with collections off and returns (status, portagent's objects a
    collection would then free). Runs it once before, unwatched: a first run's one-time imports and caches
    are not the run's garbage."""

    def garbage_of(target: Any, text: str, **kw: Any) -> tuple[str, list[str]]:
        asyncio.run(adk_kit.run(emu, target, text, provider="anthropic", **_fresh(kw)))
        gc.collect()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            gc.collect()
            gc.garbage.clear()
            out = asyncio.run(adk_kit.run(emu, target, text, provider="anthropic", **_fresh(kw)))
            status = out.result.status
            del out
            gc.collect()
            return status, sorted(n for n in map(_ours, gc.garbage) if n is not None)
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()

    yield garbage_of


def _fresh(kw: dict[str, Any]) -> dict[str, Any]:
    """A new idempotency key per run (a paused run's key would be resumed by the next)."""
    return {**kw, "idempotency_key": f"gc-{uuid.uuid4().hex}"} if "idempotency_key" in kw else kw


@pytest.mark.parametrize("streaming", [False, True], ids=["unary", "sse"])
def test_a_completed_run_leaves_no_cyclic_garbage(cyclic_garbage_of, streaming):
    # two tools through the gateway, an agent-as-tool declared: session, gateways, recorder, events all freed
    text = "Where is order ORD-7 and how fast do you ship?"
    assert cyclic_garbage_of(bundle("desk"), text, streaming=streaming) == ("completed", [])


def test_a_run_with_a_sub_agent_leaves_no_cyclic_garbage(cyclic_garbage_of):
    assert cyclic_garbage_of(bundle("desk"), "Can I get my money back quickly?") == ("completed", [])


@pytest.mark.parametrize(
    ("budget", "text", "kw", "status"),
    [
        ({"max_tool_calls": 1}, "Keep searching the FAQ.", {}, "budget_exhausted"),  # stopped in a tool
        ({"max_turns": 2, "max_tool_calls": 20}, "Keep searching the FAQ.", {}, "budget_exhausted"),
        (
            {},
            "Break the server.",
            {"extra": {"anthropic_max_retries": 0}},
            "failed",
        ),  # the hook, a mapped error
        ({}, "Refund 30 EUR for ORD-7.", {"approver": "defer", "idempotency_key": ""}, "waiting_approval"),
    ],
    ids=["tool-budget", "turn-budget", "http-error", "approval-pause"],
)
def test_a_stopped_or_failed_run_leaves_no_cyclic_garbage(cyclic_garbage_of, budget, text, kw, status):
    target = with_budget(bundle("desk"), **budget) if budget else bundle("desk")
    assert cyclic_garbage_of(target, text, **kw) == (status, [])
