"""A run makes its root span the current trace context (outgoing calls carry it as ``traceparent``) only
while it runs: the caller's context is as it was afterwards. This matters since an async tool handler
runs in its caller's task (tools/handlers.py): a handler that starts a portagent run of its own must not
leave the outer run's later calls in the inner run's trace."""

from __future__ import annotations

import asyncio

import pytest
from _support import REPO

from portagent.adapters.port import Endpoint
from portagent.contracts.bundle import load_agent
from portagent.contracts.run import RunRequest
from portagent.emulator import load_script, serve
from portagent.runtime.runner import RunConfig, arun_full
from portagent.tracing.propagation import CURRENT, TraceParent

SUPPORT = REPO / "examples" / "support_desk"


def test_a_run_restores_the_callers_trace_context(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(SUPPORT))
    bundle = load_agent(REPO / "benchmarks" / "data" / "bench_agent.yaml")
    caller = TraceParent("a" * 32, "b" * 16)
    question = "Case EXP-42: what is missing and what do the rules say about documents?"

    async def go(base_url: str) -> list[object]:
        seen: list[object] = []
        CURRENT.set(caller)
        for _ in range(2):
            out = await arun_full(
                bundle,
                RunRequest(input=question, provider="openai"),
                RunConfig(endpoint=Endpoint(base_url=base_url, api_key="sk-portagent-dummy")),
            )
            assert out.result.status == "completed", out.result.error
            seen.append(CURRENT.get())
        return seen

    with serve(load_script(SUPPORT / "emulator.yaml")) as emu:
        assert asyncio.run(go(emu.base_url)) == [caller, caller]
