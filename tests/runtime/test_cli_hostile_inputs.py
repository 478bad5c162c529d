"""Issue 14, finding 9: the remaining tracebacks — each hostile input is one message and exit 2, and
nothing is written (the run never starts)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from _support import portagent_home, run_cli

from portagent.core.home import APPROVALS_DB
from portagent.tools.approvals import ApprovalStore

AGENT = Path(__file__).resolve().parents[1] / "recording" / "data" / "leaky.yaml"
SCRIPT = AGENT.parent / "leaky_script.yaml"


def _run(tmp_path: Path, *extra: str) -> tuple[int, str, str]:
    with portagent_home(tmp_path / "home"):
        return run_cli(
            "run", str(AGENT), "--provider", "openai", "--emulator", str(SCRIPT), *extra
        )  # fmt: skip


def _one_message(code: int, out: str, err: str, text: str) -> None:
    assert code == 2, out + err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and text in err, err


@pytest.mark.parametrize(
    "content, text",
    [
        (b"\xff\xfeS\x00h\x00o\x00w\x00", "not UTF-8 text (byte 0xff at offset 0)"),
        (b"Show me \xe9 config", "not UTF-8 text (byte 0xe9 at offset 8)"),
    ],
)
def test_a_non_utf8_input_file(tmp_path: Path, content: bytes, text: str) -> None:
    f = tmp_path / "input.txt"
    f.write_bytes(content)
    _one_message(*_run(tmp_path, "--input-file", str(f), "--out", str(tmp_path / "out")), text)
    assert not (tmp_path / "out").exists() and not (tmp_path / "home" / "runs").exists()


def test_an_input_file_that_is_a_folder(tmp_path: Path) -> None:
    _one_message(*_run(tmp_path, "--input-file", str(tmp_path)), "input file is a folder")


def test_a_utf8_bom_input_file_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(AGENT.parent))
    f = tmp_path / "input.txt"
    f.write_bytes("\ufeffShow me the API config.\n".encode())
    code, out, err = _run(tmp_path, "--input-file", str(f), "--out", str(tmp_path / "out"))
    assert code == 0 and "status     completed" in out, out + err


@pytest.mark.parametrize("where", ["file", "under_file"])
def test_out_naming_a_file_is_refused_before_the_run(tmp_path: Path, where: str) -> None:
    f = tmp_path / "results.txt"
    f.write_text("keep me")
    out = f if where == "file" else f / "sub"
    code, stdout, err = _run(tmp_path, "--input", "Show me the API config.", "--out", str(out))
    _one_message(code, stdout, err, "--out")
    assert f.read_text() == "keep me" and stdout == ""  # nothing ran: no summary, no trace
    assert not (tmp_path / "home" / "runs").exists()


@pytest.mark.parametrize("depth, text", [(5000, "nested too deeply"), (100, "more than 64 levels")])
def test_deeply_nested_edit_args(tmp_path: Path, depth: int, text: str) -> None:
    args = '{"a":' * depth + "1" + "}" * depth
    code, out, err = run_cli("approvals", "--home", str(tmp_path), "edit", "apr_x", "--args", args)
    _one_message(code, out, err, text)


def test_a_corrupt_card_row(tmp_path: Path) -> None:
    ApprovalStore(tmp_path / APPROVALS_DB).close()
    db = sqlite3.connect(tmp_path / APPROVALS_DB)
    db.execute(
        "INSERT INTO approval_cards (approval_id, scope, run_id, call_id, tool, args_hash, status, card, "
        "input_schema, created_at, expires_at) VALUES ('apr_bad', '', 'r', 'c', 't', 'h', 'pending', "
        "'{\"approval_id\": \"apr_bad\", \"truncated', '{not json', '2026-01-01', '2099-01-01')"
    )
    db.commit()
    db.close()
    for argv in (["list"], ["show", "apr_bad"], ["approve", "apr_bad"], ["reject", "apr_bad"]):
        code, out, err = run_cli("approvals", "--home", str(tmp_path), *argv)
        _one_message(code, out, err, "is corrupt")
    code, out, err = run_cli("approvals", "--home", str(tmp_path), "edit", "apr_bad", "--args", "{}")
    _one_message(code, out, err, "is corrupt")


def test_eval_out_that_cannot_be_created(tmp_path: Path) -> None:
    """Held-out input: ``eval --out FILE/sub`` (or ``/proc/x``) was a NotADirectoryError traceback."""
    suite = Path(__file__).resolve().parents[2] / "examples" / "support_desk" / "suite.yaml"
    f = tmp_path / "results.txt"
    f.write_text("keep me")
    with portagent_home(tmp_path / "home"):
        code, out, err = run_cli(
            "eval", str(suite), "--emulator", "--providers", "openai", "--out", str(f / "sub")
        )  # fmt: skip
    _one_message(code, out, err, "cannot create the folder")
    assert f.read_text() == "keep me" and not (tmp_path / "home" / "runs").exists()


def test_out_naming_a_folder_of_other_files_or_nothing_is_refused_before_the_run(tmp_path):
    """Held-out input: ``run --out /`` wrote run.json and trace.jsonl into /. Only an empty folder or a run's own
    folder may receive them; an empty name and an empty message are usage errors too."""
    from _support import EXAMPLES

    agent = str(EXAMPLES / "support_desk" / "agent.yaml")
    script = str(EXAMPLES / "support_desk" / "emulator.yaml")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine", encoding="utf-8")
    code, out, err = run_cli(
        "run", agent, "--provider", "openai", "--emulator", script, "--input", "hi", "--out", str(busy)
    )
    assert code == 2 and "holds other files (notes.txt)" in err and "status" not in out
    assert sorted(p.name for p in busy.iterdir()) == ["notes.txt"]
    code, _, err = run_cli(
        "run", agent, "--provider", "openai", "--emulator", script, "--input", "hi", "--out", ""
    )
    assert code == 2 and "--out: the folder name is empty" in err
    code, _, err = run_cli("run", agent, "--provider", "openai", "--emulator", script, "--input", "   ")
    assert code == 2 and "the user message is empty" in err


def test_empty_flag_values_are_usage_errors_never_everything(tmp_path):
    """Held-out input: ``eval --providers ""`` ran every provider and ``validate ""`` validated the working
    folder. A flag given with nothing in it is one clear message, exit 2, and nothing runs."""
    from _support import EXAMPLES

    suite = str(EXAMPLES / "support_desk" / "suite.yaml")
    code, out, err = run_cli("eval", suite, "--replay", "--providers", "", "--out", str(tmp_path / "r"))
    assert code == 2 and "--providers: no value given" in err and not (tmp_path / "r").exists()
    code, _, err = run_cli("eval", suite, "--replay", "--case", " ", "--out", str(tmp_path / "r"))
    assert code == 2 and "--case: no value given" in err
    code, _, err = run_cli("validate", "")
    assert code == 2 and "an empty path was given" in err
