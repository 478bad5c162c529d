"""A protected value holding a quote or a backslash, in every form it takes on its way to a file.

A tool's output is JSON-encoded once as the tool message's text and once more inside the request body,
so ``LEAKY_TOKEN='hunter2"quoted-pw'`` was written ``hunter2\\\\\\"quoted-pw`` — two levels of escapes,
where the scanner knew one — and ``record`` wrote it into cassette.yaml, saying "replays cleanly".
The values are built from fragments (so this file holds none whole).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml
from _support import run_cli

from portagent.core.secrets import find_secret, mask_text

QUOTED = "hunter2" + '"quoted-pw'
BACKSLASHED = 'Qz"9' + "\\Xv7Lm#Pp42"
NON_ASCII = "pä" + '"ss€word-123'


def _nested(value: str, levels: int, *, ensure_ascii: bool = True) -> str:
    """``value`` as a JSON string inside a JSON object, that object's text inside another, ``levels`` deep."""
    text: str = json.dumps({"debug": value, "n": 1}, ensure_ascii=ensure_ascii)
    for _ in range(levels - 1):
        text = json.dumps({"output": text, "ok": True}, ensure_ascii=ensure_ascii)
    return text


def _innermost(text: str) -> object:
    data = json.loads(text)
    while isinstance(data, dict) and "output" in data:
        data = json.loads(data["output"])
    assert isinstance(data, dict)
    return data["debug"]


@pytest.mark.parametrize("value", [QUOTED, BACKSLASHED, NON_ASCII])
@pytest.mark.parametrize("levels", [1, 2, 3, 4])
@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_a_value_is_masked_at_every_level_of_json_escaping(
    monkeypatch: pytest.MonkeyPatch, value: str, levels: int, ensure_ascii: bool
) -> None:
    monkeypatch.setenv("LEAKY_TOKEN", value)
    text = _nested(value, levels, ensure_ascii=ensure_ascii)
    masked = mask_text(text)
    assert _innermost(masked) == "[REDACTED:env-value]", masked  # the mask took whole escapes: still JSON
    assert find_secret({"body": text}) == "body (value of an API-key variable)"


def test_a_value_in_unusual_escapes_and_urls_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """``\\u0022`` for a quote (some encoders), percent-encoded JSON (a query string), both at once."""
    monkeypatch.setenv("LEAKY_TOKEN", BACKSLASHED)
    quote_escaped = _nested(BACKSLASHED, 2).replace('\\"', "\\u0022")
    shapes = {
        "u-escapes": quote_escaped,
        "query": "https://hooks.example/cb?state=" + quote(_nested(BACKSLASHED, 1), safe=""),
        "query-in-json": json.dumps(
            {"url": "https://x.example/?q=" + quote(_nested(BACKSLASHED, 2), safe="")}
        ),
        "non-ascii-query": "q=" + quote(_nested(NON_ASCII, 1, ensure_ascii=False), safe=""),
    }
    monkeypatch.setenv("OTHER_TOKEN", NON_ASCII)
    for name, text in shapes.items():
        masked = mask_text(text)
        assert "[REDACTED:env-value]" in masked and "Xv7Lm" not in masked and "word-123" not in masked, name
        assert find_secret([text]) is not None, name


@pytest.mark.parametrize("value", [QUOTED, "plainTokenValue123"])
def test_a_value_whose_letters_are_escaped_is_found_and_masked(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """An encoder that writes every character as ``\\uXXXX`` (or ``%XX``): the check before ``record``
    writes found it, and the trace's masking — which looks in the decoded views only where a value's plain
    letters are, it runs on every event — now looks everywhere in a text holding an escaped letter or
    digit, so the trace of the same run no longer keeps what ``record`` refuses. A value of plain letters
    only (no character an encoder escapes) was never looked for there at all."""
    monkeypatch.setenv("LEAKY_TOKEN", value)
    every = "".join(f"\\u{ord(c):04x}" for c in value)
    text = json.dumps({"output": '{"debug": "' + every + '"}'})
    assert find_secret({"body": text}) == "body (value of an API-key variable)"
    masked = mask_text(text)
    assert json.loads(json.loads(masked)["output"]) == {"debug": "[REDACTED:env-value]"}  # whole escapes
    percent = "https://hooks.example/cb?state=" + "".join(f"%{b:02X}" for b in value.encode())
    assert mask_text(percent) == "https://hooks.example/cb?state=[REDACTED:env-value]"
    assert find_secret([percent]) is not None
    nested = {  # the escapes themselves escaped
        "percent-twice": "q=" + "".join(f"%25{b:02X}" for b in value.encode()),
        "u-escapes-percent-encoded": "q=" + "".join(f"%5Cu{ord(c):04x}" for c in value),
        "percent-escapes-u-escaped": json.dumps({"o": "".join(f"\\u0025{b:02X}" for b in value.encode())}),
    }
    for name, text in nested.items():
        assert find_secret([text]) is not None, name
        assert "[REDACTED:env-value]" in mask_text(text) and "Value" not in mask_text(text), name


def test_ordinary_escaped_text_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEAKY_TOKEN", QUOTED)
    for text in (
        _nested('say "hunter2" to quoted people', 3),
        "50% off \\n at 100%25 \\\\ done",
        json.dumps({"path": "C:\\Users\\hunter2\\quoted-pw"}),
    ):
        assert mask_text(text) == text
        assert find_secret({"t": text}) is None


def _project(root: Path) -> Path:
    root.mkdir()
    (root / "agent.yaml").write_text(
        textwrap.dedent(
            """\
            kind: agent
            schema_version: 1
            name: leaky
            version: 1.0.0
            instructions: You are leaky.
            models: {openai: gpt-4.1-mini, claude: claude-sonnet-4-6, adk: gemini-2.5-flash}
            tools:
              - {name: get_order, description: Read one order., effect: read, handler: "encleak_handlers:get_order",
                 input_schema: {type: object, properties: {order_id: {type: string}}, required: [order_id]}}
            """
        )
    )
    (root / "encleak_handlers.py").write_text(
        "import os\n\n\ndef get_order(order_id):\n"
        '    return {"order_id": order_id, "status": "shipped", "debug": os.environ["LEAKY_TOKEN"]}\n'
    )
    script = {
        "kind": "emulator-script",
        "schema_version": 1,
        "conversations": [
            {
                "name": "tool_env",
                "match": {"first_user": "tool env"},
                "turns": [
                    {"tool_calls": [{"name": "get_order", "arguments": {"order_id": "ORD-1"}}]},
                    {"text": "Done."},
                ],
            }
        ],
    }
    (root / "emu.yaml").write_text(yaml.safe_dump(script))
    suite = {
        "kind": "suite",
        "schema_version": 1,
        "suite_id": "leaky",
        "dataset_version": "1",
        "owner": "me",
        "agent": "agent.yaml",
        "providers": ["openai"],
        "emulator_script": "emu.yaml",
        "cases": [{"case_id": "tool-env", "input": "tool env", "why_it_exists": "x"}],
    }
    (root / "suite.yaml").write_text(yaml.safe_dump(suite))
    return root


@pytest.mark.slow  # records a suite against the emulator: seconds
@pytest.mark.parametrize(("value", "needle"), [(QUOTED, "quoted-pw"), (BACKSLASHED, "Xv7Lm#Pp42")])
def test_record_refuses_a_tool_output_with_a_quoted_secret_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, needle: str
) -> None:
    project = _project(tmp_path / "p")
    monkeypatch.syspath_prepend(str(project))
    monkeypatch.setenv("PORTAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LEAKY_TOKEN", value)
    out = tmp_path / "cass"
    code, stdout, err = run_cli("record", str(project / "suite.yaml"), "--emulator", "--out", str(out))
    text = " ".join(stdout.split())
    assert code == 1, stdout + err
    assert "requests.1.body (value of an API-key variable); nothing was written" in text, text
    assert "0 recorded, 0 skipped, 1 failed" in text
    assert not out.exists()
    leaks = [
        p
        for p in tmp_path.rglob("*")
        if p.is_file() and p.parent != project and needle.encode() in p.read_bytes()
    ]
    assert leaks == []
