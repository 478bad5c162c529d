"""The tool runner warns (``UserWarning``) when it answers a call to a tool nobody declared; the adapter keeps
that warning from the caller's terminal. It silences it only around a step whose reply holds such a call
(catching warnings at every step cost more than the rest of the step): these tests pin both sides of
that choice, with the SDK's own warning and a warnings filter that shows everything."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

pytest.importorskip("anthropic", reason="anthropic is not installed (pip install 'portagent[anthropic]')")
from runtime_testkit import fresh_handlers_fixture, go  # noqa: F401  (autouse)

from portagent.emulator import load_script, serve

HERE = Path(__file__).resolve().parent
STREAMING = pytest.mark.parametrize("streaming", [False, True], ids=["unary", "sse"])
NOT_FOUND = "not found in tool runner"


@pytest.fixture(scope="module")
def own_emu():
    with serve(load_script(HERE / "data" / "script.yaml")) as running:
        yield running


def _run_seeing_every_warning(emu, text: str, streaming: bool):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        r = go(emu, "desk", text, "anthropic", streaming=streaming)
    return r, [str(w.message) for w in seen]


@STREAMING
@pytest.mark.parametrize(
    "text",
    [
        "Call a tool nobody declared.",  # the reply's only call
        "Call a declared tool, an undeclared one, then another declared one.",  # among declared ones
    ],
    ids=["alone", "among-declared"],
)
def test_the_runners_unknown_tool_warning_never_reaches_the_caller(own_emu, text, streaming):
    r, seen = _run_seeing_every_warning(own_emu, text, streaming)
    assert r.result.status == "completed", r.result.error
    assert "unknown_tool" in [x.error for x in r.of("tool.result")]  # the runner did answer one itself
    assert not [m for m in seen if NOT_FOUND in m], seen


def test_a_run_of_declared_tools_only_meets_no_such_warning(own_emu):
    """The step without an undeclared call runs the tools outside any warnings filter of the adapter's: the
    runner has nothing to warn about there (the SDK pins the warning to the unknown-tool path)."""
    r, seen = _run_seeing_every_warning(own_emu, "Read ORD-7 from the cache.", False)
    assert r.result.status == "completed", r.result.error
    assert [x.error for x in r.of("tool.result")] and not any(x.error for x in r.of("tool.result"))
    assert not [m for m in seen if NOT_FOUND in m], seen
