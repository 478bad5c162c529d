"""``record``, an edit of the agent spec, then ``record --drifted``, all in one Python process (a notebook, a
program embedding the CLI, tests calling it in-process).

The recording process kept each agent it loaded by path: the second recording was made with the spec as it
was before the edit, while its verifying replay, in a fresh worker, read the edited one, so every run was
reported "recorded, but its replay fails: cassette_drift" and nothing was re-recorded. As separate CLI
processes the same commands worked.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _support import run_cli

OLD, NEW = "then answer in one sentence.", "then answer in one short sentence."


def _project(tmp_path: Path) -> tuple[Path, Path]:
    project = tmp_path / "proj"
    code, out, err = run_cli("init", str(project), "--name", "qa")
    assert code == 0, out + err
    suite = project / "suite.yaml"
    text = suite.read_text()
    assert "providers: [openai, claude, adk]" in text
    suite.write_text(text.replace("providers: [openai, claude, adk]", "providers: [openai]"))
    return project, suite


def _record(suite: Path, cassettes: Path, *extra: str) -> tuple[int, str]:
    code, out, err = run_cli(
        "record", str(suite), "--providers", "openai", "--emulator", "--out", str(cassettes), "--workers", "1",
        *extra,
    )  # fmt: skip
    return code, out + err


def _eval(suite: Path, cassettes: Path, out: Path, *extra: str) -> tuple[int, str]:
    code, stdout, stderr = run_cli(
        "eval", str(suite), "--replay", "--providers", "openai", "--cassettes", str(cassettes),
        "--out", str(out), "--no-progress", "--workers", "1", *extra,
    )  # fmt: skip
    return code, stdout + stderr


def _cassette_text(cassettes: Path) -> str:
    found = sorted(cassettes.rglob("cassette.yaml"))
    assert found, f"no cassette under {cassettes}"
    return "".join(p.read_text() for p in found)


# "eval --replay --reuse" runs an eval before the edit and a reused one after it: a plain replay in between
# is the same code path without the reuse (kept out: each variant costs a record and an eval or two)
@pytest.mark.parametrize("between", ["nothing", "eval --replay --reuse"])
def test_record_edit_record_drifted_in_one_process(tmp_path: Path, between: str) -> None:
    project, suite = _project(tmp_path)
    cassettes = project / "cassettes"
    code, out = _record(suite, cassettes)
    assert code == 0, out
    assert OLD in _cassette_text(cassettes)
    first = tmp_path / "results-1"
    if between == "eval --replay --reuse":
        code, out = _eval(suite, cassettes, first)
        assert code == 0, out

    agent = project / "agent.yaml"
    assert OLD in agent.read_text()
    agent.write_text(agent.read_text().replace(OLD, NEW))

    if between != "nothing":  # the edit is a drift for a replay in this process too, reused or not
        reuse = ("--reuse", str(first)) if between.endswith("--reuse") else ()
        code, out = _eval(suite, cassettes, tmp_path / "results-2", *reuse)
        assert code != 0, out
        assert "drift" in out, out

    code, out = _record(suite, cassettes, "--drifted")
    assert code == 0, out
    assert "replays cleanly" in out and "1 recorded" in out, out
    text = _cassette_text(cassettes)
    assert NEW in text and OLD not in text

    code, out = _eval(suite, cassettes, tmp_path / "results-3")
    assert code == 0, out
