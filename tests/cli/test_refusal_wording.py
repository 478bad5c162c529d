"""A run refused before it starts says which provider refuses and what it lacks, as ``validate`` words it; a
run folder whose ``run.json`` is not JSON says so without an empty location (both found by QA)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support import portagent_home, run_cli

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "examples" / "support_desk" / "emulator.yaml"


def _spec(tmp_path: Path, models: str) -> Path:
    spec = tmp_path / "agent.yaml"
    spec.write_text(f"kind: agent\nschema_version: 1\nname: oo\ninstructions: hi\nmodels: {models}\n")
    return spec


@pytest.mark.parametrize(
    ("provider", "models", "said"),
    [
        (
            "anthropic",
            "{openai: gpt-4.1-mini}",
            "provider 'anthropic' cannot run this agent: lacks model id: agent 'oo' has no model id for provider "
            "'anthropic': set models.anthropic (or models.claude",
        ),
        (
            "langgraph",
            "{langgraph: 'mistralai:mistral-large'}",
            "provider 'langgraph' cannot run this agent: lacks a chat model vendor: models.langgraph "
            "'mistralai:mistral-large'",
        ),
        (
            "adk",
            "{openai: gpt-4.1-mini}",
            "provider 'adk' cannot run this agent: lacks model id: agent 'oo' has no model id for provider 'adk': "
            "set models.adk in",
        ),
    ],
)
def test_a_refused_run_names_the_provider_and_what_it_lacks(
    tmp_path: Path, provider: str, models: str, said: str
) -> None:
    with portagent_home(tmp_path / "home"):
        code, out, err = run_cli(
            "run",
            str(_spec(tmp_path, models)),
            "--provider",
            provider,
            "--input",
            "hi",
            "--emulator",
            str(SCRIPT),
        )
    assert code == 2, out + err
    assert said in " ".join(err.split())
    assert "Traceback" not in err and not (tmp_path / "home" / "runs").exists()


def test_a_run_json_that_is_not_json_is_named_without_an_empty_location(tmp_path: Path) -> None:
    folder = tmp_path / "badrun"
    folder.mkdir()
    (folder / "run.json").write_text('{"run_id": [\n')
    (folder / "trace.jsonl").write_text("")
    with portagent_home(tmp_path / "home"):
        code, out, err = run_cli(
            "run",
            str(_spec(tmp_path, "{anthropic: claude-sonnet-4-6}")),
            "--provider",
            "anthropic",
            "--replay",
            str(folder),
        )
    text = " ".join(err.split())
    assert code == 1, out + err
    assert "run.json: not a portagent run record (Invalid JSON" in text and "(:" not in text
