"""Ctrl-C during a run is never lost: ``asyncio.run`` turns SIGINT into a cancel of its main task, and the
run must end with that cancel (``KeyboardInterrupt`` out of ``asyncio.run``), whatever the run was doing.

Seen in CI: ``portagent record`` went on recording after Ctrl-C and exited 0. The SIGINT had landed while
the adapter's drive was saving the cassette, its last synchronous step; on Python 3.11
``asyncio.wait_for`` returns the awaited result and drops the cancel when the cancel lands as the awaited
task finishes. Here SIGINT is raised at exactly that moment (in portagent's own cassette persister, the
SDK and the emulator real), then at each event of the run in turn."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import pytest
from _support import REPO

from portagent.adapters.port import Endpoint
from portagent.contracts.bundle import load_agent
from portagent.contracts.run import RunRequest
from portagent.emulator import load_script, serve
from portagent.recording import vcr_cassette
from portagent.runtime.runner import RunConfig, arun_full

SUPPORT = REPO / "examples" / "support_desk"
QUESTION = "Case EXP-42: what is missing and what do the rules say about documents?"


def _record(base_url: str, folder: Path, on_event: Any = None, provider: str = "openai") -> str:
    """Record one run under ``asyncio.run``; its status, or ``interrupted``."""
    bundle = load_agent(REPO / "benchmarks" / "data" / "bench_agent.yaml")
    endpoint = Endpoint(base_url=base_url, api_key="sk-portagent-dummy", mode="record", cassette_dir=folder)
    go = arun_full(
        bundle, RunRequest(input=QUESTION, provider=provider), RunConfig(endpoint=endpoint), on_event=on_event
    )
    try:
        return asyncio.run(go).result.status
    except KeyboardInterrupt:
        return "interrupted"


@pytest.fixture
def emulator(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(SUPPORT))
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # tests/conftest.py
    with serve(load_script(SUPPORT / "emulator.yaml")) as emu:
        yield emu


def test_ctrl_c_while_the_cassette_is_saved_interrupts_the_run(
    emulator: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _record(emulator.base_url, tmp_path / "plain") == "completed"
    save = vcr_cassette._ScanningPersister.save_cassette.__func__  # type: ignore[attr-defined]

    def ctrl_c_then_save(cls: Any, path: str, data: dict[str, Any], serializer: Any) -> None:
        signal.raise_signal(signal.SIGINT)  # the handler runs here, in the drive's last step
        save(cls, path, data, serializer)

    monkeypatch.setattr(vcr_cassette._ScanningPersister, "save_cassette", classmethod(ctrl_c_then_save))
    assert _record(emulator.base_url, tmp_path / "interrupted") == "interrupted"


@pytest.mark.parametrize("provider", ["openai", "anthropic", "adk", "langgraph"])
def test_ctrl_c_at_any_event_of_a_run_interrupts_it(emulator: Any, tmp_path: Path, provider: str) -> None:
    events: list[object] = []
    assert _record(emulator.base_url, tmp_path / "plain", events.append, provider) == "completed"

    def at(n: int) -> Any:
        seen = iter(range(len(events)))

        def on_event(_event: object) -> None:
            if next(seen) == n:
                signal.raise_signal(signal.SIGINT)

        return on_event

    outcomes = {
        n: _record(emulator.base_url, tmp_path / f"at{n}", at(n), provider) for n in range(len(events))
    }
    assert outcomes == dict.fromkeys(range(len(events)), "interrupted")
