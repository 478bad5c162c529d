"""Live runs that respect vendors (issue 17): per-provider concurrency and request rate, Retry-After
and jittered backoff, and a spend cap for the whole eval.

``eval --live`` runs the real openai-agents SDK against portagent's emulator, started here and named by
``OPENAI_BASE_URL`` (the SDK's own variable: the run is labelled ``endpoint``). Every timing below is
read from the emulator's request log — when each request reached the "vendor" —, never from portagent.
The per-request gate (``runtime/request_limits.py``, in the run journal's proxy) is proven the same way,
through ``eval --live`` and through two direct runs sharing one process.
"""

from __future__ import annotations

import itertools
import json
import shutil
import time
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
        # the other in-process SDKs' own variables (record --live on every provider)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", emu.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-dummy")
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", emu.base_url)
        monkeypatch.setenv("GOOGLE_API_KEY", "test-dummy")
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
    # 4 requests per second at most (burst of half a second's worth), one run at a time
    limits = {"openai": {"max_concurrency": 1, "requests_per_minute": 240, "burst_s": 0.5}}
    suite = _suite(agent_dir, "rate.yaml", repeats=2, limits=limits)
    code, out, err = _eval(suite, tmp_path / "r", "--live", "--workers", "2")
    assert code == 0, out + err
    reqs = _model_requests(emu)
    assert len(reqs) == 8  # 4 runs × (tool call, answer)
    starts = [r["time"] for r in reqs[::2]]  # each run's first request
    # once a run's requests are known (2), each run is admitted for 2 units of a bucket holding 2 and
    # refilled at 4/s: runs start half a second apart (without the limit: back to back, ~0.1 s). The
    # times are when the emulator saw each request, not when the bucket admitted the run, so one gap
    # can come out a few milliseconds short or long (0.445 s was seen on a loaded CI machine); the
    # spacing is checked with room for that jitter, and over the two gaps together.
    gaps = [b - a for a, b in itertools.pairwise(starts[1:])]
    assert all(gap >= 0.35 for gap in gaps), starts
    assert sum(gaps) >= 2 * 0.5 - 0.1, starts
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
    # a run that never existed: only why, no factor notes ("… was never called"), its own category
    assert len(skipped["notes"]) == 1 and skipped["checks"] == {} and not skipped["passed"]
    gate = json.loads((out / "ci_gate.json").read_text())
    assert gate["blocked_by"] == ["not_run"], gate["reasons"]
    assert all(r.startswith("not run: case ") for r in gate["reasons"]), gate["reasons"]
    assert 'type="not_run"' in (out / "junit.xml").read_text()
    assert "Blocked by: not run" in (out / "report.md").read_text()
    assert "not run: case" in stdout and "provider error" not in stdout + err
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


# -- record --live: the same limits, with the run's own model client holding each request ----------------


def _record(suite: Path, out: Path, *extra: str) -> tuple[int, str, str]:
    return run_cli("record", str(suite), "--out", str(out), "--no-verify", *extra)


def _posts(emu: Any) -> list[dict[str, Any]]:
    """Every model request, whatever the vendor's path."""
    return sorted((r for r in emu.requests() if r["method"] == "POST"), key=lambda r: r["time"])


@pytest.mark.parametrize(
    ("provider", "model"),
    [
        ("openai", None),
        ("anthropic", None),
        ("adk", None),
        ("langgraph", None),  # over its default OpenAI chat model
        ("langgraph", "google_genai:gemini-2.5-flash"),
        pytest.param("claude", None, marks=pytest.mark.slow),
    ],
)
def test_record_live_holds_each_request_to_the_rate(
    agent_dir: Path, live_emulator: Any, tmp_path: Path, provider: str, model: str | None
) -> None:
    """A recording has no journal proxy: its requests go from the SDK's client straight to the vendor
    (vcrpy records them there). The client's own hooks hold each one — a run's second request comes a
    bucket's period after its first, where the SDK alone sends it milliseconds later. (Claude Code's
    requests pass the recording proxy, which holds them the same way.)"""
    changes: dict[str, Any] = {}
    if model is not None:
        spec = yaml.safe_load((agent_dir / "agent.yaml").read_text())
        spec["models"][provider] = model
        (agent_dir / "agent_other_model.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
        changes["agent"] = "agent_other_model.yaml"
    emu = live_emulator(load_script(agent_dir / "emulator.yaml"))
    limits = {provider: {"requests_per_minute": 240, "burst_s": 0.25}}  # one request per 0.25 s
    suite = _suite(agent_dir, f"rec_rate_{provider}.yaml", providers=[provider], limits=limits, **changes)
    code, out, err = _record(suite, tmp_path / "c", "--live")
    assert code == 0, out + err
    times = [r["time"] for r in _posts(emu)]
    assert len(times) == 4, times  # 2 runs × (tool call, answer)
    # times are arrivals at the "vendor": a loaded machine delays one request's arrival more than the
    # next's, so the margin is wide — without the gate a run's two requests are milliseconds apart
    assert all(b - a >= 0.25 - 0.1 for a, b in itertools.pairwise(times)), times
    recorded = sorted((p.parents[2].name, p.parents[1].name) for p in (tmp_path / "c").rglob("run.json"))
    assert recorded == [("refund", provider), ("status", provider)]


def test_record_live_backs_off_and_records_a_retryable_failure_again(
    agent_dir: Path, live_emulator: Any, tmp_path: Path
) -> None:
    """status: overloaded (503, no Retry-After) three times — the OpenAI client's two retries fail too, so
    the run fails with a retryable provider error. Each 503 pauses the next request for the gate's backoff
    (≥ d/2 = 0.8 s; the client alone retries the first after ≤ 0.5 s), and the failed recording is
    discarded and made again after the pause: the folder holds the clean one, no staging folder is left."""
    emu = live_emulator(_script(agent_dir, {"case_status": {"type": "overloaded", "times": 3}}))
    limits = {
        "openai": {
            "requests_per_minute": 60000,
            "backoff_base_s": 1.6,
            "backoff_cap_s": 1.6,
            "max_attempts": 2,
        }
    }
    suite = _suite(agent_dir, "rec_retry.yaml", limits=limits, cases=[CASES[1]])
    code, out, err = _record(suite, tmp_path / "c", "--live")
    assert code == 0, out + err
    reqs = _posts(emu)
    assert [r["status"] for r in reqs] == [503, 503, 503, 200, 200]
    times = [r["time"] for r in reqs]
    # ≥ d/2 = 0.8 s, less 0.1 s for arrival jitter on a loaded machine: still far from the client's 0.5 s
    assert all(b - a >= 0.8 - 0.1 for a, b in itertools.pairwise(times[:4])), times
    (run_json,) = (tmp_path / "c").rglob("run.json")
    assert json.loads(run_json.read_text())["result"]["status"] == "completed"
    assert "503" not in (run_json.parent / "cassette.yaml").read_text().split("status:", 1)[1][:40]
    assert not [d for d in run_json.parents[1].iterdir() if d.name.startswith(".")]  # no staging left


def test_record_spend_cap_stops_recording(agent_dir: Path, tmp_path: Path) -> None:
    suite = _suite(agent_dir, "rec_spend.yaml", repeats=2)
    code, out, err = _record(suite, tmp_path / "c", "--emulator", "--max-spend-usd", "0.0000001")
    assert code == 1, out + err
    assert "1 recorded, 0 skipped, 3 failed" in out
    assert out.count("not recorded: the recording's spend reached $") == 3, out
    assert len(list((tmp_path / "c").rglob("run.json"))) == 1  # only the first recording was made


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--limit", "openai"], "expected PROVIDER:FIELD=VALUE"),
        (["--limit", "openai:speed=9"], "speed: Extra inputs are not permitted"),
        (["--max-spend-usd", "-1"], "--max-spend-usd must be more than 0"),
    ],
)
def test_record_limit_mistakes_are_one_message(
    agent_dir: Path, tmp_path: Path, flags: list[str], message: str
) -> None:
    suite = _suite(agent_dir, "rec_bad.yaml")
    code, out, err = _record(suite, tmp_path / "x", "--emulator", *flags)
    assert code == 2 and message in err and "Traceback" not in err, err
    assert not (tmp_path / "x").exists()


# -- per-request limits: the run journal's proxy holds each request (runtime/request_limits.py) ----------


def test_each_request_of_a_run_respects_the_rate_and_backoff(
    agent_dir: Path, live_emulator: Any, tmp_path: Path
) -> None:
    # status: overloaded (503, no Retry-After) once; the OpenAI client alone retries after ≤ 0.5 s
    emu = live_emulator(_script(agent_dir, {"case_status": {"type": "overloaded", "times": 1}}))
    # one request per 0.25 s (a bucket of one), and a backoff of d/2 + U(0, d/2), d = 1.6 s, after a 503
    limits = {
        "openai": {"max_concurrency": 1, "requests_per_minute": 240, "burst_s": 0.25, "backoff_base_s": 1.6}
    }
    suite = _suite(agent_dir, "per_request.yaml", limits=limits)
    code, out, err = _eval(suite, tmp_path / "r", "--live", "--workers", "1")
    assert code == 0, out + err
    reqs = sorted(_model_requests(emu), key=lambda r: r["time"])
    assert [r["status"] for r in reqs] == [200, 200, 503, 200, 200]
    times = [r["time"] for r in reqs]
    # every request the worker sent, those within one run included (the SDK sends a run's second request
    # as soon as the tool ran: milliseconds), came at least a bucket's period after the one before. The
    # times are the emulator's arrival times: on a loaded machine one request can reach it up to a few
    # tens of ms later than sent, so the slack is 100 ms (ungated, the gap would be a few ms)
    assert all(b - a >= 0.25 - 0.1 for a, b in itertools.pairwise(times)), times
    # the SDK's own retry of the 503 was held for the gate's backoff, ≥ d/2 = 0.8 s (the SDK: ≤ 0.5 s)
    assert times[3] - times[2] >= 0.8 - 0.1, times


def _direct_run(agent: Path, emu: Any, out: Path, text: str) -> Any:
    from portagent.adapters.port import Endpoint
    from portagent.contracts.bundle import load_agent
    from portagent.contracts.run import RunRequest
    from portagent.runtime.runner import RunConfig, arun_full

    config = RunConfig(
        endpoint=Endpoint(source="emulator", base_url=emu.base_url, api_key="sk-test-dummy"), out_dir=out
    )
    return arun_full(load_agent(agent / "agent.yaml"), RunRequest(input=text, provider="openai"), config)


def _gated(monkeypatch: pytest.MonkeyPatch, **limits: float) -> None:
    from portagent.runtime.request_limits import REQUEST_LIMITS_ENV

    monkeypatch.setenv(REQUEST_LIMITS_ENV, json.dumps({"openai": limits}))


def test_a_retry_after_pauses_the_providers_other_runs_in_the_process(
    agent_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run A's first request gets a 429 with Retry-After 1 s; run B, started in the same process once
    that 429 was answered, knows nothing of it — its own SDK would send at once. The gate holds B's first
    request until the Retry-After is over; without the gate B goes straight away (the failing case)."""
    import asyncio

    from _support import portagent_home

    script = _script(agent_dir, {"refund_rule": {"type": "http_429", "retry_after_s": 1.0, "times": 1}})

    def limited(emu: Any) -> int:
        return sum(r["status"] == 429 for r in emu.requests())

    async def both(emu: Any, out: Path) -> None:
        before = limited(emu)

        async def after_the_429() -> Any:
            while limited(emu) == before:
                await asyncio.sleep(0.01)
            return await _direct_run(agent_dir, emu, out / "b", CASES[1]["input"])

        a, b = await asyncio.gather(
            _direct_run(agent_dir, emu, out / "a", CASES[0]["input"]), after_the_429()
        )
        assert a.result.status == b.result.status == "completed"

    def gap(reqs: list[dict[str, Any]]) -> float:
        limited = next(r["time"] for r in reqs if r["status"] == 429)
        b_first = min(r["time"] for r in reqs if r["body"]["input"][0]["content"] == CASES[1]["input"])
        return float(b_first - limited)

    with serve(script) as emu, portagent_home(tmp_path / "home"):
        monkeypatch.delenv("PORTAGENT_REQUEST_LIMITS", raising=False)
        asyncio.run(both(emu, tmp_path / "free"))
        free = _model_requests(emu)
        # no gate: B's request reached the vendor during A's Retry-After
        assert gap(free) < 1.0 - 0.15
        emu.reset()  # the 429 fires again
        _gated(monkeypatch, requests_per_minute=60000)
        asyncio.run(both(emu, tmp_path / "gated"))
        assert gap(_model_requests(emu)[len(free) :]) >= 1.0 - 0.02


def test_tokens_per_minute_are_paid_before_the_next_request(
    agent_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each answer reports 440 tokens (the script's usage). 52 800 tokens a minute with a bucket of half
    a second (440): an answer's tokens are paid before the next request, which waits for them to drain."""
    import asyncio

    from _support import portagent_home

    _gated(monkeypatch, tokens_per_minute=52800, burst_s=0.5)
    with serve(load_script(agent_dir / "emulator.yaml")) as emu, portagent_home(tmp_path / "home"):
        for i, case in enumerate(CASES):
            out = asyncio.run(_direct_run(agent_dir, emu, tmp_path / f"r{i}", case["input"]))
            assert out.result.status == "completed"
        times = sorted(r["time"] for r in _model_requests(emu))
    assert len(times) == 4
    # the first answer's 440 tokens fill the empty bucket at once; from then on each request waits until
    # the previous answer's 440 tokens drained (0.5 s)
    assert all(b - a >= 0.5 - 0.03 for a, b in itertools.pairwise(times[1:])), times


def test_retry_after_and_usage_are_read_in_each_vendors_shape() -> None:
    from email.utils import formatdate

    from portagent.runtime.request_limits import retry_after, usage_tokens

    assert retry_after({"Retry-After": "0.5"}) == 0.5
    assert retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25  # ms first, as the SDKs do
    when = retry_after({"Retry-After": formatdate(time.time() + 30, usegmt=True)})
    assert when is not None and 25 <= when <= 31
    assert retry_after({"Retry-After": "soon"}) is None and retry_after({}) is None
    anthropic_sse = (
        b'event: message_start\ndata: {"type":"message_start","message":{"usage":'
        b'{"input_tokens":10,"output_tokens":1}}}\n\n'
        b'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":5}}\n\n'
    )
    assert usage_tokens(anthropic_sse) == 15  # cumulative output counts: the largest
    gemini = b'[{"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":2}},'
    gemini += b'{"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":3}}]'
    assert usage_tokens(gemini) == 10
    assert usage_tokens(b'{"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}') == 7
    assert usage_tokens(b"not json") == 0
    # what each vendor counts beside input and output: Anthropic's cache writes (not its cache reads),
    # Gemini's thinking tokens and tool-use prompt (its totalTokenCount)
    cached = b'{"usage":{"input_tokens":12,"cache_creation_input_tokens":900,'
    cached += b'"cache_read_input_tokens":4000,"output_tokens":30}}'
    assert usage_tokens(cached) == 12 + 900 + 30
    thinking = b'{"usageMetadata":{"promptTokenCount":50,"candidatesTokenCount":20,"thoughtsTokenCount":300,'
    thinking += b'"toolUsePromptTokenCount":5,"totalTokenCount":375}}'
    assert usage_tokens(thinking) == 375


def test_each_process_gets_its_share_of_the_rate() -> None:
    from portagent.contracts.suite import ProviderLimits
    from portagent.runtime.limits import Scheduler
    from portagent.runtime.request_limits import REQUEST_LIMITS_ENV

    limits = {
        "openai": ProviderLimits(requests_per_minute=600, tokens_per_minute=9000, max_concurrency=2),
        "claude": ProviderLimits(requests_per_minute=300),
        "adk": ProviderLimits(max_concurrency=1),  # no rate: no gate
    }
    shares = json.loads(Scheduler(limits).request_env(4)[REQUEST_LIMITS_ENV])
    assert set(shares) == {"openai", "claude"}
    # openai runs in at most 2 processes (max_concurrency), claude in all 4
    assert (shares["openai"]["requests_per_minute"], shares["openai"]["tokens_per_minute"]) == (300, 4500)
    assert shares["claude"]["requests_per_minute"] == 75 and shares["claude"]["tokens_per_minute"] is None
    assert Scheduler(limits, live=False).request_env(4) == {}  # replays and the emulator: no vendor
