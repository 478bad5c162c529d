"""Provenance labels (issue 15, item 3): ``live`` only for a vendor's official endpoint, ``endpoint`` for
any other base URL (recorded in the manifest), ``emulator``, and ``replay`` keeping the recording's own
source. Runs drive the real openai-agents SDK against portagent's emulator on a loopback port."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from _support import EXAMPLES, REPO, run_cli

from portagent.contracts.run import RunRecord
from portagent.contracts.trace import parse_event
from portagent.emulator import load_script, serve
from portagent.runtime.provenance import live_source, shown_url

SUPPORT = EXAMPLES / "support_desk"
AGENT = SUPPORT / "agent.yaml"
CASSETTE = REPO / "cassettes" / "support-desk" / "support_desk@1.0.0" / "case-status" / "openai" / "r0"


@pytest.fixture(scope="module")
def emu():
    with serve(load_script(SUPPORT / "emulator.yaml")) as e:
        yield e


def _started(folder: Path) -> dict:
    return json.loads((folder / "trace.jsonl").read_text(encoding="utf-8").splitlines()[0])


@pytest.mark.parametrize(
    ("provider", "url", "want"),
    [
        ("openai", None, "live"),
        ("openai", "https://api.openai.com/v1", "live"),
        ("openai", "https://eu.api.openai.com", "live"),
        ("openai", "http://api.openai.com", "endpoint"),  # not TLS: a stand-in, whatever its name
        ("openai", "https://api.openai.com.evil.example", "endpoint"),
        ("openai", "https://myapi.openai.com.example", "endpoint"),
        ("openai", "http://127.0.0.1:8080", "endpoint"),
        ("openai", "https://api.anthropic.com", "endpoint"),  # another vendor's host
        ("claude", "https://api.anthropic.com", "live"),
        ("claude", "https://gateway.corp.example/anthropic", "endpoint"),
        ("adk", "https://generativelanguage.googleapis.com", "live"),
        ("adk", "https://us-central1-aiplatform.googleapis.com", "live"),
        ("adk", "https://localhost:9000", "endpoint"),
    ],
)
def test_live_source_is_live_only_on_the_vendors_official_hosts(provider, url, want):
    assert live_source(provider, url) == want


def test_shown_url_drops_credentials_and_query():
    assert shown_url("https://user:pw@gw.example:8443/v1?key=abc#x") == "https://gw.example:8443/v1"


def test_live_run_to_a_local_stand_in_is_labelled_endpoint_with_its_url(emu, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy-test")
    out = tmp_path / "run"
    code, stdout, err = run_cli(
        "run", str(AGENT), "--provider", "openai", "--input", "What is the refund deadline?",
        "--live", "--base-url", emu.base_url, "--out", str(out),
    )  # fmt: skip
    assert code == 0, err
    manifest = RunRecord.model_validate_json((out / "run.json").read_text()).manifest
    assert (manifest.source, manifest.base_url, manifest.recorded_source) == ("endpoint", emu.base_url, None)
    assert _started(out)["source"] == "endpoint"
    assert f"source     endpoint  {emu.base_url}" in stdout


def test_the_base_url_variable_counts_like_base_url(emu, tmp_path, monkeypatch):
    """``OPENAI_BASE_URL`` silently redirects the vendor client; the label must say so."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy-test")
    monkeypatch.setenv("OPENAI_BASE_URL", emu.base_url)
    out = tmp_path / "run"
    code, _, err = run_cli(
        "run", str(AGENT), "--provider", "openai", "--input", "What is the refund deadline?",
        "--live", "--out", str(out),
    )  # fmt: skip
    assert code == 0, err
    manifest = RunRecord.model_validate_json((out / "run.json").read_text()).manifest
    assert (manifest.source, manifest.base_url) == ("endpoint", emu.base_url)
    # the run really went to the stand-in (its request log), not to the vendor
    assert any("refund deadline" in json.dumps(r.get("body")) for r in emu.requests())


def test_emulator_run_is_labelled_emulator_without_a_url(tmp_path):
    out = tmp_path / "run"
    code, stdout, err = run_cli(
        "run", str(AGENT), "--provider", "openai", "--input", "What is the refund deadline?",
        "--emulator", str(SUPPORT / "emulator.yaml"), "--out", str(out),
    )  # fmt: skip
    assert code == 0, err
    manifest = RunRecord.model_validate_json((out / "run.json").read_text()).manifest
    assert (manifest.source, manifest.base_url, manifest.recorded_source) == ("emulator", None, None)
    assert "source     emulator" in stdout


def test_replay_is_labelled_replay_and_keeps_the_recordings_source(tmp_path):
    """A committed cassette (its trace says ``emulator``, written before ``replay`` existed) still
    replays; the replay's own trace and manifest say ``replay`` with ``recorded_source: emulator``."""
    assert _started(CASSETTE)["source"] == "emulator"
    out = tmp_path / "replayed"
    code, stdout, err = run_cli(
        "run", str(AGENT), "--provider", "openai", "--replay", str(CASSETTE), "--out", str(out),
    )  # fmt: skip
    assert code == 0, err
    started = parse_event(_started(out))
    assert (started.source, started.recorded_source, started.mode) == ("replay", "emulator", "replay")
    manifest = RunRecord.model_validate_json((out / "run.json").read_text()).manifest
    assert (manifest.source, manifest.recorded_source) == ("replay", "emulator")
    assert "source     replay (recorded: emulator)" in stdout
    # a replay of that replay still names the first recording's source
    again = tmp_path / "again"
    shutil.copy(CASSETTE / "cassette.yaml", out / "cassette.yaml")
    code, _, err = run_cli(
        "run", str(AGENT), "--provider", "openai", "--replay", str(out), "--out", str(again),
    )  # fmt: skip
    assert code == 0, err
    m2 = RunRecord.model_validate_json((again / "run.json").read_text()).manifest
    assert (m2.source, m2.recorded_source) == ("replay", "emulator")
