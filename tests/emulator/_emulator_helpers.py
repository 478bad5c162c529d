"""Shared scripts and helpers for the emulator tests (not a test module)."""

from __future__ import annotations

import contextlib
import copy
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from portagent.emulator import RunningEmulator, serve

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / ".." / "shared" / "samples"
"""The shared samples beside the repo (``<repo>/../shared/samples``): test data, never copied in."""
RECORDINGS = SAMPLES / "vendor-recordings"
GOLDEN = Path(__file__).resolve().parent / "golden"

DUMMY_OPENAI_KEY = "sk-dummy-openai-0123456789"
DUMMY_ANTHROPIC_KEY = "sk-ant-dummy-0123456789"
DUMMY_GOOGLE_KEY = "AIza-dummy-0123456789"

WEATHER_TOOL_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}

WEATHER: dict[str, Any] = {
    "kind": "emulator-script",
    "schema_version": 1,
    "name": "weather-tests",
    "conversations": [
        {
            "name": "weather",
            "match": {"first_user": "What's the weather in Paris?"},
            "turns": [
                {
                    "text": "Let me check.",
                    "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
                    "usage": {"input_tokens": 100, "output_tokens": 10, "cache_read_tokens": 40},
                },
                {
                    # a faulted call's result has no .forecast: the fallback names the whole result
                    "text": "FINAL: {{last_tool_result.forecast | last_tool_result}}",
                    "usage": {"input_tokens": 150, "output_tokens": 5},
                },
            ],
        },
        {
            "name": "hello",
            "match": {"first_user_regex": "^(hi|hello)\\b"},
            "turns": [{"text": "Hello there!"}],
        },
    ],
}


def with_turns(name: str, first_user: str, turns: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """A one-conversation script."""
    return {
        "kind": "emulator-script",
        "schema_version": 1,
        "conversations": [{"name": name, "match": {"first_user": first_user}, "turns": turns, **extra}],
    }


def weather_with_fault(fault: dict[str, Any], turn: int = 0) -> dict[str, Any]:
    script = copy.deepcopy(WEATHER)
    script["conversations"][0]["turns"][turn]["fault"] = fault
    return script


@contextlib.contextmanager
def emulator(script: dict[str, Any] | str | Path = WEATHER, **kwargs: Any) -> Iterator[RunningEmulator]:
    with serve(script, host="127.0.0.1", port=0, **kwargs) as emu:
        yield emu


def require_recordings() -> Path:
    """The vendor recordings folder; skip when absent — but fail under CI=true."""
    if not RECORDINGS.is_dir():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"vendor recordings missing at {RECORDINGS} (CI=true turns this skip into a failure)")
        pytest.skip(f"vendor recordings missing at {RECORDINGS}")
    return RECORDINGS


def load_recording(relative: str) -> list[dict[str, Any]]:
    """The interactions of one recording, with request and response bodies decoded."""
    import gzip

    import yaml

    data = yaml.safe_load((require_recordings() / relative).read_text(encoding="utf-8"))
    out = []
    for inter in data["interactions"]:
        req, resp = inter["request"], inter["response"]
        body = req.get("parsed_body")
        if body is None:
            body = json.loads(req["body"])
        if "parsed_body" in resp:
            rbody: Any = resp["parsed_body"]
            rtext = None
        else:
            raw = resp["body"]["string"]
            if isinstance(raw, bytes):
                raw = gzip.decompress(raw).decode("utf-8")
            rtext = raw
            rbody = None
        out.append(
            {
                "uri": req["uri"],
                "request": body,
                "response_text": rtext,
                "response_json": rbody,
                "status": resp["status"]["code"],
            }
        )
    return out


def post(
    url: str, body: Any, headers: dict[str, str] | None = None, timeout: float = 10.0
) -> tuple[int, dict[str, str], bytes]:
    """A raw POST with the stdlib (no SDK in the way)."""
    import urllib.error
    import urllib.request

    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(
        url, data=data, method="POST", headers={"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def run_cli(*argv: str) -> tuple[int, str, str]:
    """Run ``portagent`` in-process, capturing output (own copy: ``from _support import`` is ambiguous
    once several test folders have a conftest.py)."""
    import io

    from portagent.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as e:
            code = int(e.code or 0)
    return code, out.getvalue(), err.getvalue()


def shape(value: Any, prefix: str = "") -> set[str]:
    """Key paths and nesting of a JSON value (values ignored; list elements merged under ``[]``)."""
    out: set[str] = set()
    if isinstance(value, dict):
        for k, v in value.items():
            path = f"{prefix}.{k}" if prefix else k
            out.add(path)
            out |= shape(v, path)
    elif isinstance(value, list):
        for v in value:
            out |= shape(v, prefix + "[]")
    return out
