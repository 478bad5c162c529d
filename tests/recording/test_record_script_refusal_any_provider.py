"""``record --emulator`` fails a recording whose run met an error the emulator script did not ask for (no
conversation matches, a conversation out of turns), on every provider, whatever the SDK made of the error.

It used to recognise such a run by the emulator's message in the run's error text: a provider whose SDK
words or wraps errors its own way, or one whose run does not end ``failed``, was counted recorded. The
emulator now marks its own refusals in its request log and the recorder reads that; a scripted fault (the
vendor's 5xx) is still recorded as the behaviour it is."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support import run_cli


def _shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("init", "shop")
    assert code == 0, err
    return tmp_path / "shop" / "suite.yaml"


@pytest.mark.parametrize("provider", ["openai", "adk", "anthropic", "langgraph", "claude"])
def test_a_case_the_script_cannot_answer_fails_on_every_provider(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    suite = _shop(tmp_path, monkeypatch)
    text = suite.read_text().replace('ORD-7?"', 'ORD-8?"')  # a case the script does not know
    suite.write_text(text.replace("providers: [openai, claude, adk]", f"providers: [{provider}]"))
    out = tmp_path / "cassettes"
    code, stdout, err = run_cli(
        "record", str(suite), "--providers", provider, "--emulator", "--out", str(out)
    )
    assert code == 1, stdout + err
    assert "0 recorded, 0 skipped, 1 failed" in stdout, stdout
    assert "the emulator script cannot answer this run: portagent emulator: no conversation matches" in stdout
    assert not any(p.is_file() for p in out.rglob("*")) if out.exists() else True


def test_a_conversation_out_of_turns_fails_the_recording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = _shop(tmp_path, monkeypatch)
    script = next((tmp_path / "shop").glob("emulator*.yaml"))
    text = script.read_text()
    # the conversation's last turn (the final answer) is cut: the run asks for a turn the script lacks
    cut = text[: text.rindex("- text:")] if "- text:" in text else text
    script.write_text(cut)
    out = tmp_path / "cassettes"
    code, stdout, err = run_cli(
        "record", str(suite), "--providers", "openai", "--emulator", "--out", str(out)
    )
    assert code == 1, stdout + err
    assert "script exhausted" in stdout, stdout


def test_a_scripted_fault_is_no_refusal_and_the_run_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The marker tells the emulator's own refusals from the faults a script asks for: a 500 the script
    sends once (the SDK retries it) is recorded as the behaviour it is, and the log shows it unmarked."""
    suite = _shop(tmp_path, monkeypatch)
    script = tmp_path / "shop" / "emulator.yaml"
    text = script.read_text()
    first_turn = "      - tool_calls: [{name: get_order, arguments: {order_id: ORD-7}}]"
    assert first_turn in text
    script.write_text(text.replace(first_turn, first_turn + "\n        fault: {type: http_500, times: 1}"))
    out = tmp_path / "cassettes"
    code, stdout, err = run_cli(
        "record", str(suite), "--providers", "openai", "--emulator", "--out", str(out)
    )
    assert code == 0, stdout + err
    assert "1 recorded, 0 skipped, 0 failed" in stdout, stdout
