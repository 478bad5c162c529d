"""Live runs that respect vendors (issue 17): per-provider concurrency and request rate, Retry-After
and jittered backoff, and a spend cap for the whole eval.

``eval --live`` runs the real openai-agents SDK against portagent's emulator, started here and named by
``OPENAI_BASE_URL`` (the SDK's own variable: the run is labelled ``endpoint``). Every timing below is
read from the emulator's request log — when each request reached the "vendor" —, never from portagent.
"""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from _support import EXAMPLES, run_cli

from portagent.emulator import load_script, serve

CASES = [
    {
        "case_id": "refund",
        "input": "What is the refund deadline?",
        "why_it_exists": "read-only answer",
        "expect": {"final_must_contain": ["30 days"], "required_tools": ["search_policy"]},
    },
    {
        "case_id": "status",
        "input": "What is missing from my case EXP-42?",
        "why_it_exists": "record lookup",
        "expect": {"final_must_contain": ["DNI"], "required_tools": ["get_student_record"]},
    },
]


@pytest.fixture(scope="module")
def agent_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("limits") / "agent"
    shutil.copytree(
        EXAMPLES / "support_desk", root, ignore=shutil.ignore_patterns("suite.yaml", "__pycache__")
    )
    return root


def _suite(folder: Path, name: str, **changes: Any) -> Path:
    data = {
        "kind": "suite",
        "schema_version": 1,
        "suite_id": "limits",
        "dataset_version": "1",
        "owner": "tests",
        "agent": "agent.yaml",
        "providers": ["openai"],
        "emulator_script": "emulator.yaml",
        "cases": CASES,
        **changes,
    }
    path = folder / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _script(agent_dir: Path, faults: dict[str, dict[str, Any]]) -> Any:
    """The example's script, with a fault on the first turn of the named conversations."""
    data = yaml.safe_load((agent_dir / "emulator.yaml").read_text())
    for conv in data["conversations"]:
        if conv["name"] in faults:
            conv["turns"][0] = {**conv["turns"][0], "fault": faults[conv["name"]]}
    path = agent_dir / f"emulator_{len(faults)}_{abs(hash(json.dumps(faults, sort_keys=True)))}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_script(path)


@pytest.fixture
def live_emulator(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Start an emulator for a script and point the OpenAI SDK of ``--live`` at it."""
    started: list[Any] = []

    def start(script: Any) -> Any:
        cm = serve(script)
        emu = cm.__enter__()
        started.append(cm)
        monkeypatch.setenv("OPENAI_BASE_URL", emu.base_url)  # portagent adds /v1, as for --base-url
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
        return emu

    yield start
    for cm in started:
        cm.__exit__(None, None, None)


def _eval(suite: Path, out: Path, *extra: str) -> tuple[int, str, str]:
    return run_cli("eval", str(suite), "--out", str(out), "--no-progress", *extra)


def _model_requests(emu: Any) -> list[dict[str, Any]]:
    return [r for r in emu.requests() if r["path"] == "/v1/responses"]


def test_concurrency_and_request_rate_are_respected(
    agent_dir: Path, live_emulator: Any, tmp_path: Path
) -> None:
    emu = live_emulator(load_script(agent_dir / "emulator.yaml"))
    # 2 requests per second at most (burst of one second's worth), one run at a time
    limits = {"openai": {"max_concurrency": 1, "requests_per_minute": 120, "burst_s": 1}}
    suite = _suite(agent_dir, "rate.yaml", repeats=2, limits=limits)
    code, out, err = _eval(suite, tmp_path / "r", "--live", "--workers", "2")
    assert code == 0, out + err
    reqs = _model_requests(emu)
    assert len(reqs) == 8  # 4 runs × (tool call, answer)
    starts = [r["time"] for r in reqs[::2]]  # each run's first request
    # once a run's requests are known (2), each run is admitted for 2 units of a bucket holding 2 and
    # refilled at 2/s: runs start a second apart (without the limit: back to back, ~0.1 s)
    assert all(b - a >= 0.9 for a, b in itertools.pairwise(starts[1:])), starts
    # one run at a time: a conversation's two requests are never interleaved with another's
    firsts = [r["body"]["input"][0]["content"] for r in reqs]
    assert all(firsts[i] == firsts[i + 1] for i in range(0, 8, 2)), firsts
    meta = json.loads((tmp_path / "r" / "eval.json").read_text())
    (lane,) = meta["scheduling"]["providers"]
    assert (lane["admitted"], lane["max_in_flight"], lane["retries"]) == (4, 1, 0)
    assert [w["provider"] for w in meta["workers_used"]] == ["openai"]  # max_concurrency caps workers


def test_retry_after_and_backoff_are_honoured(agent_dir: Path, live_emulator: Any, tmp_path: Path) -> None:
    # refund: 429 with Retry-After 0.5 s three times — the OpenAI client's own two retries fail too —;
    # status: overloaded (503, no Retry-After) three times. Each run fails, then portagent runs it again.
    emu = live_emulator(
        _script(
            agent_dir,
            {
                "refund_rule": {"type": "http_429", "retry_after_s": 0.5, "times": 3},
                "case_status": {"type": "overloaded", "times": 3},
            },
        )
    )
    limits = {"openai": {"max_concurrency": 1, "backoff_base_s": 0.8, "max_attempts": 2}}
    suite = _suite(agent_dir, "retry.yaml", limits=limits)
    code, out, err = _eval(suite, tmp_path / "r", "--live", "--workers", "1")
    assert code == 0, out + err  # both runs passed on their second attempt
    reqs = _model_requests(emu)
    by_case: dict[str, list[dict[str, Any]]] = {}
    for r in reqs:
        by_case.setdefault(r["body"]["input"][0]["content"], []).append(r)
    refund = by_case["What is the refund deadline?"]
    assert [r["status"] for r in refund[:4]] == [429, 429, 429, 200]
    # the SDK retried twice on its own; portagent's second attempt waited the Retry-After after the third
    assert refund[3]["time"] - refund[2]["time"] >= 0.5 - 0.02
    status = by_case["What is missing from my case EXP-42?"]
    assert [r["status"] for r in status[:4]] == [503, 503, 503, 200]
    # no Retry-After: jittered backoff d/2 + U(0, d/2) with d = 0.8 s → at least 0.4 s
    assert status[3]["time"] - status[2]["time"] >= 0.4 - 0.02
    meta = json.loads((tmp_path / "r" / "eval.json").read_text())
    (lane,) = meta["scheduling"]["providers"]
    assert lane["retries"] == 2 and lane["rate_limited_runs"] == 2
    assert [p["why"] for p in lane["pauses"]] == ["retry-after", "backoff"]
    assert lane["pauses"][0]["seconds"] == 0.5 and 0.4 <= lane["pauses"][1]["seconds"] <= 0.8


def test_spend_cap_stops_scheduling(agent_dir: Path, tmp_path: Path) -> None:
    suite = _suite(agent_dir, "spend.yaml", repeats=2)
    out = tmp_path / "r"
    code, stdout, err = _eval(suite, out, "--emulator", "--workers", "1", "--max-spend-usd", "0.0000001")
    assert code == 1, stdout + err  # runs not made: the result was not measured, the gate blocks
    assert "run(s) not run: the eval's spend reached $" in err and "of --max-spend-usd $1e-07" in err
    report = json.loads((out / "report.json").read_text())
    issues = [r["issue"] for r in report["runs"]]
    assert issues.count("not_run") == 3 and issues.count(None) == 1  # the first run spent the budget
    skipped = next(r for r in report["runs"] if r["issue"] == "not_run")
    assert skipped["status"] == "not_run" and skipped["notes"][0].startswith("not run: the eval's spend")
    meta = json.loads((out / "eval.json").read_text())
    assert meta["scheduling"]["stopped"].startswith("not run:") and meta["scheduling"]["spent_usd"] > 0


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--limit", "openai"], "expected PROVIDER:FIELD=VALUE"),
        (["--limit", "nope:max_concurrency=2"], "expected PROVIDER:FIELD=VALUE"),
        (
            ["--limit", "openai:max_concurrency=0"],
            "max_concurrency: Input should be greater than or equal to 1",
        ),
        (["--limit", "openai:speed=9"], "speed: Extra inputs are not permitted"),
        (["--max-spend-usd", "0"], "--max-spend-usd must be more than 0"),
    ],
)
def test_limit_mistakes_are_one_message(
    agent_dir: Path, tmp_path: Path, flags: list[str], message: str
) -> None:
    suite = _suite(agent_dir, "bad.yaml")
    code, out, err = _eval(suite, tmp_path / "x", "--emulator", *flags)
    assert code == 2 and message in err and "Traceback" not in err, err
    assert not (tmp_path / "x").exists()
