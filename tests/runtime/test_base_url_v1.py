"""A base URL given as the server root or as ``…/v1`` is the same endpoint.

``portagent emulate`` prints ``OPENAI_BASE_URL=http://127.0.0.1:PORT/v1`` (the form the OpenAI docs use),
while portagent's own ``Endpoint.base_url`` is the server root and every adapter, and the run journal's
proxy, add the API version themselves: given the ``/v1`` form, requests went to ``/v1/v1/responses``.
The runs drive the real openai-agents SDK against the emulator; what proves the paths is the emulator's
request log, for ``--base-url`` and for ``OPENAI_BASE_URL``, through the journal (a run folder) and
without it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from _support import EXAMPLES, portagent_home, run_cli

from portagent.adapters.port import Endpoint, endpoint_root
from portagent.contracts.bundle import load_agent
from portagent.contracts.run import RunRecord, RunRequest
from portagent.emulator import RunningEmulator, load_script, serve
from portagent.runtime.runner import RunConfig, arun_full

SUPPORT = EXAMPLES / "support_desk"
AGENT = SUPPORT / "agent.yaml"
QUESTION = "What is the refund deadline?"
PATH = {"responses": "/v1/responses", "chat_completions": "/v1/chat/completions"}


@pytest.fixture(scope="module")
def emu() -> Iterator[RunningEmulator]:
    with serve(load_script(SUPPORT / "emulator.yaml")) as e:
        yield e


@pytest.mark.parametrize(
    ("given", "want"),
    [
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("http://127.0.0.1:8080/", "http://127.0.0.1:8080"),
        ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080"),
        ("http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080"),
        ("  http://127.0.0.1:8080/v1  ", "http://127.0.0.1:8080"),
        ("http://127.0.0.1:8080/v1beta", "http://127.0.0.1:8080"),  # Gemini's version
        ("http://127.0.0.1:8080/v1alpha/", "http://127.0.0.1:8080"),
        ("https://gw.example/openai/v1", "https://gw.example/openai"),  # a gateway's prefix stays
        ("https://gw.example/v1x", "https://gw.example/v1x"),
        (None, None),
        ("", None),
        ("  ", None),
    ],
)
def test_endpoint_root_drops_the_api_version_and_trailing_slashes(
    given: str | None, want: str | None
) -> None:
    assert endpoint_root(given) == want
    assert Endpoint(base_url=given).base_url == want  # the Endpoint keeps the root, however it is given


@pytest.mark.parametrize("api", ["responses", "chat_completions"])
@pytest.mark.parametrize("via", ["--base-url", "OPENAI_BASE_URL"])
@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
def test_a_live_run_reaches_v1_once_whichever_form_the_url_takes(
    emu: RunningEmulator,
    suffix: str,
    via: str,
    api: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Through the run journal (a run folder): the adapter's client and the journal's upstream."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy-test")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    url = emu.base_url + suffix
    argv = ["run", str(AGENT), "--provider", "openai", "--input", QUESTION, "--live", "--openai-api", api]
    if via == "--base-url":
        argv += ["--base-url", url]
    else:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
    out = tmp_path / "run"
    before = len(emu.requests())
    with portagent_home(tmp_path / "home"):
        code, _, err = run_cli(*argv, "--out", str(out))
    paths = [r["path"] for r in emu.requests()[before:]]
    assert code == 0, err
    assert paths and set(paths) == {PATH[api]}, paths
    manifest = RunRecord.model_validate_json((out / "run.json").read_text()).manifest
    assert (manifest.source, manifest.base_url) == ("endpoint", emu.base_url)
    header = json.loads((out / "journal" / "attempt-1.jsonl").read_text().splitlines()[0])
    assert header["upstream"] == emu.base_url
    exchanges = [json.loads(ln) for ln in (out / "journal" / "attempt-1.jsonl").read_text().splitlines()[1:]]
    assert exchanges and all(e["request"]["uri"] == emu.base_url + PATH[api] for e in exchanges), exchanges


@pytest.mark.parametrize("url", ["openai_base_url", "base_url"])
def test_an_endpoint_given_the_emulators_openai_url_runs_without_a_journal(
    emu: RunningEmulator, url: str
) -> None:
    """A library caller handing ``emu.openai_base_url`` (``…/v1``) to an ``Endpoint``, no run folder."""
    endpoint = Endpoint(source="emulator", base_url=getattr(emu, url), api_key="sk-dummy-test")
    before = len(emu.requests())
    out = asyncio.run(
        arun_full(
            load_agent(AGENT),
            RunRequest(input=QUESTION, provider="openai"),
            RunConfig(endpoint=endpoint, journal=False),
        )
    )
    assert out.result.status == "completed", out.result
    assert {r["path"] for r in emu.requests()[before:]} == {"/v1/responses"}
