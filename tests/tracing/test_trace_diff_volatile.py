"""Per-run values at any depth do not make two runs of the same script "different", and a rewritten
id still tells a different id structure apart.

Two repeats of one case (r0, r1 of a shipped cassette) differ in the run's repeat number, its ids
(run, approval, effect — also inside an approval card, a tool's output and a final output quoting it),
its timestamps and, for Claude, the hand-back text's agent id and duration. ``trace diff`` must call
them equivalent (exit 0), while another argument or a second effect where the other run reused one
still shows."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from _support import REPO, require_path, run_cli

from portagent.tracing.compare import equivalent
from portagent.tracing.diff import diff_traces

CASSETTES = REPO / "cassettes" / "support-desk"


def _pairs() -> list[tuple[Path, Path]]:
    """Every shipped repeat pair of the same provider: (r0, rN)."""
    out = []
    for r0 in sorted(CASSETTES.glob("*/*/*/r0")):
        out += [(r0, rn) for rn in sorted(r0.parent.glob("r[1-9]*"))]
    return out


def _events(folder: Path) -> list[dict[str, Any]]:
    text = (folder / "trace.jsonl").read_text()
    return [json.loads(x) for x in text.splitlines() if x.strip()]


def _run(case: str, provider: str = "openai", repeat: str = "r0", version: str = "1.0.0") -> Path:
    folder = CASSETTES / f"support_desk@{version}" / case / provider / repeat
    return require_path(folder, "the demo's cassettes")


def test_every_shipped_repeat_pair_is_equivalent() -> None:
    require_path(CASSETTES, "the demo's cassettes")
    pairs = _pairs()
    assert len(pairs) >= 100, "the demo's cassettes hold r0/r1 pairs for every case and provider"
    for r0, rn in pairs:
        d = diff_traces(_events(r0), _events(rn))
        where = f"{r0} vs {rn.name}"
        assert d.equivalent, f"{where}: {d.differences}"
        assert [s.kind for s in d.steps] == ["same"] * len(d.steps), where
        assert d.final_output_diff == [], f"{where}: {d.final_output_diff}"


@pytest.mark.parametrize("case", ["refund-rule", "idempotent-retry", "ticket-rejected"])
def test_the_cli_says_two_repeats_are_equivalent(case: str) -> None:
    code, out, _ = run_cli("trace", "diff", str(_run(case)), str(_run(case, repeat="r1")))
    assert code == 0, out
    assert out.rstrip().endswith("equivalent") and "final output: identical" in out


def test_two_providers_differing_only_in_effect_ids_are_equivalent() -> None:
    code, out, _ = run_cli(
        "trace", "diff", str(_run("idempotent-retry")), str(_run("idempotent-retry", "claude"))
    )
    assert code == 0, out


def test_ids_are_rewritten_by_kind_and_first_appearance_at_any_depth() -> None:
    from portagent.tracing.compare import canonical  # new with this rewrite

    events = canonical(_events(_run("ticket-rejected")))
    card = next(e for e in events if e["type"] == "approval.requested")
    result = next(e for e in events if e["type"] == "tool.result")
    assert card["approval_id"] == card["card"]["approval_id"] == "<approval_id#1>"
    assert card["card"]["run_id"] == card["run_id"] == "<run_id#1>"
    assert card["card"]["created_at"] == "<created_at>" and card["card"]["decided_at"] is None
    assert result["output"]["details"]["approval_id"] == "<approval_id#1>"
    started = next(e for e in events if e["type"] == "run.started")
    assert started["repeat"] == "<repeat>"


def test_a_changed_argument_between_repeats_still_differs(tmp_path: Path) -> None:
    b = _events(_run("idempotent-retry", repeat="r1"))
    call = next(e for e in b if e["type"] == "tool.call")
    call["args"]["priority"] = "high"
    path = tmp_path / "b.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in b))
    code, out, _ = run_cli("trace", "diff", str(_run("idempotent-retry")), str(path))
    assert code == 1, out
    assert "args.priority: " in out and "high" in out


def test_a_second_effect_where_the_other_run_reused_one_still_differs() -> None:
    """Both runs' effect ids are random, but in A the retried call reuses the first call's effect and
    in B it makes a new one: the same ids rewritten the same way would hide that; by first appearance
    it is ``<effect_id#1>`` vs ``<effect_id#2>``."""
    a = _events(_run("idempotent-retry"))
    b = copy.deepcopy(_events(_run("idempotent-retry", repeat="r1")))
    second = [e for e in b if e["type"] == "tool.result"][1]
    second["effect_id"] = second["output"]["effect_id"] = "eff_0123456789ab"
    diff = equivalent(a, b, across_providers=False)
    assert not diff
    assert "effect_id" in diff.report() and "<effect_id#2>" in diff.report()


def test_a_different_value_in_a_card_still_differs() -> None:
    a = _events(_run("ticket-approved"))
    b = copy.deepcopy(_events(_run("ticket-approved", repeat="r1")))
    card = next(e for e in b if e["type"] == "approval.requested")["card"]
    card["reason"] = "another reason"
    diff = equivalent(a, b, across_providers=False)
    assert not diff and "card" in diff.report()
