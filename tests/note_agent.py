"""A one-tool agent for the resume, journal and credential tests: ``send_note`` is an external effect whose
handler logs each note it sends (JSON, one per line, in ``sent.log`` beside it), so a test counts what
really ran, not what a trace says ran."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

HANDLERS = """
import json
from pathlib import Path

def send_note(note):
    with Path(__file__).with_name("sent.log").open("a") as f:
        f.write(json.dumps(note) + "\\n")
    return {"sent": True}
"""


def note_turns(note: str) -> list[dict[str, Any]]:
    """The model's turns: call ``send_note`` with ``note``, then say it is sent."""
    return [{"tool_calls": [{"name": "send_note", "arguments": {"note": note}}]}, {"text": "Sent."}]


def write_note_agent(
    root: Path,
    module: str,
    models: dict[str, str],
    conversations: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    """``root`` with ``agent.yaml`` (named ``noter``), ``emulator.yaml`` and the handler as ``module``, importable
    by that name (a module of that name a previous test imported is dropped, with its cached handlers)."""
    from portagent.tools import handlers

    root.mkdir(parents=True, exist_ok=True)
    (root / f"{module}.py").write_text(HANDLERS)
    spec = {
        "kind": "agent",
        "schema_version": 1,
        "name": "noter",
        "version": "1.0.0",
        "instructions": "Send the note.",
        "models": models,
        "tools": [
            {
                "name": "send_note",
                "description": "Send a note.",
                "effect": "external_effect",
                "idempotency": {"required": True, "key_field": "note"},
                "input_schema": {
                    "type": "object",
                    "properties": {"note": {"type": "string"}},
                    "required": ["note"],
                },
                "handler": f"{module}:send_note",
            }
        ],
    }
    script = {"kind": "emulator-script", "schema_version": 1, "conversations": conversations}
    (root / "agent.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    (root / "emulator.yaml").write_text(yaml.safe_dump(script, sort_keys=False))
    monkeypatch.syspath_prepend(str(root))
    sys.modules.pop(module, None)
    for ref in [r for r in handlers._CACHE if r.startswith(f"{module}:")]:
        handlers._CACHE.pop(ref)
    return root


def sent(root: Path) -> list[str]:
    """The notes the handler sent, in order (none when it never ran)."""
    log = root / "sent.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
