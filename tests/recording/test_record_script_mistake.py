"""``record --emulator`` of a case the emulator script cannot answer (no conversation matches its input, a
conversation that ran out of turns) is a failed recording: exit 1, counted failed, nothing kept. It was
counted ``recorded`` ("0 failed", exit 0, "replays cleanly"), the cassette holding the emulator's complaint,
and only a later ``eval`` showed it. A scripted fault (the vendor's 5xx) is still recorded as the
behaviour it is."""

from __future__ import annotations

from pathlib import Path

from _support import run_cli


def test_a_case_the_script_cannot_answer_is_a_failed_recording(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("init", "shop")
    assert code == 0, err
    suite = tmp_path / "shop" / "suite.yaml"
    suite.write_text(suite.read_text().replace('ORD-7?"', 'ORD-8?"'))  # a case the script does not know
    out = tmp_path / "cassettes"
    code, stdout, err = run_cli(
        "record", str(suite), "--providers", "openai", "--emulator", "--out", str(out)
    )
    assert code == 1, stdout + err
    assert "0 recorded, 0 skipped, 1 failed" in stdout, stdout
    assert "the emulator script cannot answer this run" in stdout and "no conversation matches" in stdout
    assert "replays cleanly" not in stdout
    assert not any(p.is_file() for p in out.rglob("*")) if out.exists() else True  # nothing kept
