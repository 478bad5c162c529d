"""``portagent demo`` decides its own closing message from the gate's findings (issue 15): tampered three
ways — agent-v2's policy fixed without re-recording, a cassette edited, a tool schema changed — it names
what differed (a recording drift, what changed, the exact re-record line) and exits 1; untouched, it
exits 0 with "As expected" (tests/demo/test_demo.py).

Each run replays a copy of the example and its cassettes on one provider (openai), one repeat (the copy's
suite says ``repeats: 1``: each drift shows on r0 as on r1), offline (the command in this process, its
replays in worker processes).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from _support import EXAMPLES, REPO, require_path, run_cli

CASSETTES = REPO / "cassettes"


def _copy(tmp: Path) -> Path:
    require_path(CASSETTES / "support-desk", "the demo's committed cassettes")
    work = tmp / "checkout"
    shutil.copytree(EXAMPLES / "support_desk", work / "examples" / "support_desk")
    shutil.copytree(CASSETTES / "support-desk", work / "cassettes" / "support-desk")
    suite = work / "examples" / "support_desk" / "suite.yaml"
    text = suite.read_text()
    assert "\nrepeats: 2\n" in text
    suite.write_text(text.replace("\nrepeats: 2\n", "\nrepeats: 1\n"))  # r0 of each case: half the replays
    return work


def _demo(work: Path) -> tuple[int, str]:
    """``portagent demo`` from the checkout, offline, in this process (``run_cli``: the same ``main`` a shell
    reaches; its replays run in the eval's worker processes either way, forked warm from the fork server
    this module's demos share instead of a new interpreter importing the SDK for each)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        mp.setenv("PORTAGENT_HOME", str(work / ".home"))
        for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY"):
            mp.delenv(key, raising=False)
        code, out, err = run_cli("demo", "--providers", "openai", "--out", str(work / "out"))
    assert "Traceback" not in err, err
    return code, " ".join((out + err).split())  # unwrap rich's line breaks


RERECORD = "portagent record examples/support_desk/suite.yaml --providers openai --emulator --drifted"


@pytest.mark.slow
def test_policy_fixed_without_rerecording_is_drift_not_the_expected_regression(tmp_path: Path) -> None:
    work = _copy(tmp_path)
    v1_policy = (work / "examples/support_desk/policy.yaml").read_text()
    (work / "examples/support_desk/policy_v2.yaml").write_text(
        v1_policy.replace('version: "2026.11"', 'version: "2026.12-candidate"')
    )
    rc, text = _demo(work)
    assert rc == 1, text
    assert "As expected" not in text and "Unexpected" in text
    assert "recording drift" in text and "changed since the recording: the policy" in text
    assert f"{RERECORD} --case email-outside-denied --case email-reviewed" in text
    assert "does not block agent-v2 (2.0.0) for a permission regression on openai" in text


@pytest.mark.slow
def test_an_edited_cassette_is_named_as_drift(tmp_path: Path) -> None:
    work = _copy(tmp_path)
    cassette = work / "cassettes/support-desk/support_desk@1.0.0/refund-rule/openai/r0/cassette.yaml"
    text = cassette.read_text()
    needle = '"instructions":"You are the student-services desk.'
    assert needle in text
    cassette.write_text(text.replace(needle, '"instructions":"You are the tampered desk.', 1))
    rc, out = _demo(work)
    assert rc == 1, out
    assert "agent-v1 (1.0.0) does not pass every case: refund-rule on openai (recording drift: " in out
    assert "recording drift" in out and f"{RERECORD} --case refund-rule" in out


@pytest.mark.slow
def test_a_changed_tool_schema_is_named_as_drift(tmp_path: Path) -> None:
    work = _copy(tmp_path)
    tools = work / "examples/support_desk/tools.yaml"
    text = tools.read_text()
    old = "description: Search the student-services policy handbook and return the matching passages."
    assert old in text
    tools.write_text(text.replace(old, "description: Search the handbook.", 1))
    rc, out = _demo(work)
    assert rc == 1, out
    assert "Unexpected" in out and "does not pass every case" in out
    assert "changed since the recording:" in out and "tool search_policy" in out
    assert RERECORD in out
