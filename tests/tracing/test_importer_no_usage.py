"""A recorded answer without usage imports with its tokens and cost marked unknown, not as a computed
cost of $0 for 0 tokens. Built on copies of the real vendor recordings (one per format the importer
reads: OpenAI Chat and Responses, Anthropic, Gemini, JSON and streamed) with every usage object
deleted; the folder is local test data (``require_path``)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from _support import SAMPLES, require_path

from portagent.tracing.importer import import_cassette

RECORDINGS = SAMPLES / "vendor-recordings"
FILES = [
    "openai/llm__test_tool_use_chain_of_two_calls.yaml",
    "openai/pydantic-ai__test_openai_responses_stream.yaml",
    "anthropic/llm-anthropic__test_tools.yaml",
    "anthropic/pydantic-ai__test_multiple_parallel_tool_calls.yaml",
    "google/llm-gemini__test_tools.yaml",
    "google/pydantic-ai__test_google_model_iter_stream.yaml",
]
USAGE_KEYS = {"usage", "usageMetadata", "usage_metadata"}


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in USAGE_KEYS}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _strip_text(text: str) -> str:
    try:
        return json.dumps(_strip(json.loads(text)))
    except ValueError:
        pass
    lines = []
    for line in text.split("\n"):
        if line.startswith("data:") and line[5:].strip().startswith(("{", "[")):
            line = "data: " + json.dumps(_strip(json.loads(line[5:])))
        lines.append(line)
    return "\n".join(lines)


def _without_usage(src: Path, dst: Path) -> Path:
    """A copy of ``src`` whose answers carry no usage (gzip bodies are re-compressed as they were)."""
    data = yaml.safe_load(src.read_text())
    for inter in data["interactions"]:
        resp = inter["response"]
        if "parsed_body" in resp:
            resp["parsed_body"] = _strip(resp["parsed_body"])
        body = (resp.get("body") or {}).get("string")
        if isinstance(body, bytes):
            resp["body"]["string"] = gzip.compress(_strip_text(gzip.decompress(body).decode()).encode())
        elif isinstance(body, str):
            resp["body"]["string"] = _strip_text(body)
    dst.write_text(yaml.safe_dump(data, allow_unicode=True))
    return dst


@pytest.fixture(scope="module")
def recordings() -> Path:
    return require_path(RECORDINGS, "vendor recordings (../shared/samples/vendor-recordings)")


@pytest.mark.parametrize("file", FILES, ids=[f.split("/")[1].removesuffix(".yaml") for f in FILES])
def test_an_answer_without_usage_has_unknown_tokens_and_cost(
    recordings: Path, tmp_path: Path, file: str
) -> None:
    copy = _without_usage(recordings / file, tmp_path / Path(file).name)
    events = import_cassette(copy)
    model_calls = [e for e in events if e.type == "model.call"]
    done = events[-1]
    assert model_calls and done.type == "run.completed"
    assert all(m.provider_details.get("tokens_unknown") is True for m in model_calls)
    assert "usage" not in model_calls[0].provider_details
    assert (done.cost_usd, done.cost_source) == (None, "unknown")
    assert done.provider_details["tokens_unknown"] is True
    assert done.provider_details["interactions_without_usage"] == [
        m.provider_details["interaction"] for m in model_calls
    ]
    # The same recording with its usage imports as before: counted tokens, no unknown marks.
    original = import_cassette(recordings / file)
    assert all("tokens_unknown" not in e.provider_details for e in original)
    assert original[-1].input_tokens > 0


def test_an_empty_usage_object_is_no_usage(recordings: Path, tmp_path: Path) -> None:
    """``"usage": {}`` says nothing about tokens either: not priced as 0 tokens."""
    src = recordings / FILES[3]
    data = yaml.safe_load(src.read_text())
    for inter in data["interactions"]:
        inter["response"]["parsed_body"]["usage"] = {}
    copy = tmp_path / "empty_usage.yaml"
    copy.write_text(yaml.safe_dump(data, allow_unicode=True))
    done = import_cassette(copy)[-1]
    assert (done.cost_usd, done.cost_source, done.provider_details["tokens_unknown"]) == (
        None,
        "unknown",
        True,
    )


def test_the_cli_prints_no_computed_zero_cost(recordings: Path, tmp_path: Path) -> None:
    from _support import run_cli

    copy = _without_usage(recordings / FILES[3], tmp_path / "nousage.yaml")
    code, out, err = run_cli("trace", "import", str(copy))
    assert code == 0, err
    last = json.loads(out.strip().splitlines()[-1])
    assert (last["type"], last["cost_usd"], last["cost_source"]) == ("run.completed", None, "unknown")
