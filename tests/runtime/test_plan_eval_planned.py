"""``plan_eval(planned=…)`` takes runs a caller already planned (the demo plans every default provider once
to see which are recorded) instead of planning them again: the result is the plan ``plan_eval`` makes on
its own — the same runs, in the same order, numbered the same — whichever providers are kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support import EXAMPLES, REPO, require_path

from portagent.contracts.loaded_suite import load_suite
from portagent.runtime.eval_plan import plan_runs
from portagent.runtime.eval_run import plan_eval

SUITE = EXAMPLES / "support_desk" / "suite.yaml"
CASSETTES = REPO / "cassettes"
pytestmark = pytest.mark.slow  # loads the demo suite and plans its 168 runs several times


@pytest.mark.parametrize("kept", [["openai", "claude", "adk"], ["claude"], ["adk", "openai"]])
def test_runs_taken_from_a_wider_plan_are_the_plan_made_afresh(kept: list[str], tmp_path: Path) -> None:
    require_path(CASSETTES / "support-desk", "the demo's committed cassettes")
    loaded = load_suite(SUITE)
    out = tmp_path / "results"
    wide = plan_runs(
        loaded,
        mode="replay",
        providers=["openai", "claude", "adk"],
        cassettes=CASSETTES,
        results=out.resolve(),
        check=False,
    )
    taken = plan_eval(loaded, mode="replay", providers=kept, cassettes=CASSETTES, results=out, planned=wide)
    afresh = plan_eval(loaded, mode="replay", providers=kept, cassettes=CASSETTES, results=out)
    assert [t.index for t in taken.tasks] == list(range(len(afresh.tasks)))
    assert taken.tasks == afresh.tasks
    assert (taken.agents, taken.providers, taken.repeats) == (afresh.agents, afresh.providers, afresh.repeats)


def test_taken_runs_are_checked_like_planned_ones(tmp_path: Path) -> None:
    """A kept provider whose cassettes are missing is refused with the record command, as when planned."""
    require_path(CASSETTES / "support-desk", "the demo's committed cassettes")
    from portagent.contracts.errors import RecordingError

    loaded = load_suite(SUITE)
    empty = tmp_path / "cassettes"
    wide = plan_runs(loaded, mode="replay", providers=["openai"], cassettes=empty, check=False)
    with pytest.raises(RecordingError) as taken:
        plan_eval(loaded, mode="replay", providers=["openai"], cassettes=empty, planned=wide)
    with pytest.raises(RecordingError) as afresh:
        plan_eval(loaded, mode="replay", providers=["openai"], cassettes=empty)
    assert str(taken.value) == str(afresh.value)
