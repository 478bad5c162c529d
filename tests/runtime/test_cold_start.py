"""A provider's first run in a process times its SDK's one-time start-up too (lazy imports, first-use schema
building, the first connection: about a second here, against tens of milliseconds for the runs after it).
That run is marked ``cold_start`` — in ``run.started``, ``run.json``, and (through a replay, from the
recording) in every score — and latency figures and ``max_latency_ms`` do not count its start-up as the
agent's latency. Recordings are made by the real SDKs against the emulator in a fresh process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _support import EXAMPLES, run_cli

from portagent.contracts.run import RunRecord
from portagent.contracts.trace import parse_event
from portagent.evals.stats import percentile

SUPPORT = EXAMPLES / "support_desk"
CASES = ["--case", "refund-rule", "--case", "case-status"]


def _cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The CLI in a process of its own: which run is a process's first must not depend on this one."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [sys.executable, "-m", "portagent", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def _records(root: Path) -> dict[tuple[str, str, str, int], RunRecord]:
    out = {}
    for f in root.rglob("run.json"):
        rec = RunRecord.model_validate_json(f.read_text())
        version, case, provider, repeat = (
            f.parts[-5].split("@")[1],
            f.parts[-4],
            f.parts[-3],
            int(f.parts[-2][1:]),
        )
        out[(provider, version, case, repeat)] = rec
    return out


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo suite's first two cases, recorded from the emulator for openai and adk in one fresh process
    (``--no-verify``: no replay check in worker processes; the replay test below replays every recording)."""
    root = tmp_path_factory.mktemp("cold")
    shutil.copytree(SUPPORT, root / "desk")
    done = _cli(
        "record", str(root / "desk" / "suite.yaml"), "--providers", "openai,adk", "--emulator", *CASES,
        "--out", str(root / "cassettes"), "--no-verify", cwd=root,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return root


def test_a_recording_marks_each_providers_first_run_of_the_process(recorded: Path) -> None:
    records = _records(recorded / "cassettes")
    assert len(records) == 16
    for provider in ("openai", "adk"):
        cold = [k for k, r in records.items() if k[0] == provider and r.result.cold_start]
        assert len(cold) == 1, cold  # record makes its runs one after another in its own process
        folder = next((recorded / "cassettes").rglob(f"{cold[0][2]}/{provider}/r{cold[0][3]}"))
        started = json.loads((folder / "trace.jsonl").read_text().splitlines()[0])
        assert started["type"] == "run.started" and started["cold_start"] is True


def test_a_replay_keeps_the_recordings_marks_and_leaves_cold_starts_out_of_latency(
    recorded: Path, tmp_path: Path
) -> None:
    """Durations are the recording's; the cold run gets a start-up that takes it over the case's limit."""
    cassettes = tmp_path / "cassettes"
    shutil.copytree(recorded / "cassettes", cassettes)
    for f in cassettes.rglob("run.json"):  # what a tight limit and a slow start-up look like, made exact
        data = json.loads(f.read_text())
        data["result"]["duration_ms"] = 3500.0 if data["result"]["cold_start"] else 40.0
        f.write_text(json.dumps(data))
    suite = recorded / "desk" / "suite.yaml"
    tight = suite.read_text().replace("max_latency_ms: 30000", "max_latency_ms: 1000")
    assert tight != suite.read_text()
    (recorded / "desk" / "tight.yaml").write_text(tight)
    out = tmp_path / "results"
    done = _cli(
        "eval", str(recorded / "desk" / "tight.yaml"), "--replay", "--cassettes", str(cassettes),
        "--providers", "openai,adk", *CASES, "--workers", "1", "--out", str(out), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr  # nothing fails on the SDK's start-up
    report = json.loads((out / "report.json").read_text())
    recorded_cold = {k for k, r in _records(cassettes).items() if r.result.cold_start}
    runs = report["runs"]
    scored_cold = {
        (r["provenance"]["provider"], r["provenance"]["agent_version"], r["provenance"]["case_id"],
         r["provenance"]["repeat"])
        for r in runs if r["cold_start"]
    }  # fmt: skip
    assert scored_cold == recorded_cold and len(scored_cold) == 2  # the replay's own workers do not count
    for r in runs:
        if r["cold_start"] and r["provenance"]["case_id"] == "refund-rule":
            assert r["checks"].get("latency") is None
            assert any("within the 3000 ms allowed for a cold start" in w for w in r["warnings"]), r[
                "warnings"
            ]
        elif r["provenance"]["case_id"] == "refund-rule":
            assert r["checks"]["latency"] is True
    for g in report["by_provider"]:
        group = [
            r for r in runs if (r["provenance"]["provider"], r["provenance"]["agent_version"]) == (g["provider"], g["agent_version"])
        ]  # fmt: skip
        cold = sum(r["cold_start"] for r in group)
        assert g["latency_cold_starts_left_out"] == cold
        warm = [r["latency_ms"] for r in group if not r["cold_start"]]
        assert g["latency_p95_ms"] == percentile(warm, 95) == 40.0
    for text in ((out / "report.md").read_text(), (out / "report.html").read_text(), done.stdout):
        assert "Latency p50/p95 leave out 2 cold-start runs" in " ".join(text.split())


def test_a_process_marks_its_first_run_of_each_provider(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from portagent.runtime import runner

    monkeypatch.setattr(runner, "_STARTED", set())
    marks = []
    for i, provider in enumerate(["openai", "openai", "adk", "openai", "adk"]):
        out = tmp_path / f"run{i}"
        code, stdout, err = run_cli(
            "run", str(SUPPORT / "agent.yaml"), "--provider", provider, "--input", "What is the refund deadline?",
            "--emulator", str(SUPPORT / "emulator.yaml"), "--out", str(out),
        )  # fmt: skip
        assert code == 0, err
        rec = RunRecord.model_validate_json((out / "run.json").read_text())
        started = json.loads((out / "trace.jsonl").read_text().splitlines()[0])
        assert started["cold_start"] == rec.result.cold_start
        assert ("cold start: includes the SDK's one-time start-up" in stdout) == rec.result.cold_start
        marks.append(rec.result.cold_start)
    assert marks == [True, False, True, False, False]
    # the mark is timing provenance: a cold and a warm run of the same script are the same behaviour
    from portagent.tracing.compare import equivalent

    traces = [
        [
            parse_event(json.loads(line))
            for line in (tmp_path / f"run{i}" / "trace.jsonl").read_text().splitlines()
        ]
        for i in (0, 1)
    ]
    assert equivalent(traces[0], traces[1], across_providers=False)


def test_every_timed_run_cold_uses_them_all() -> None:
    """One run per worker: no warm run to measure by, so the cold ones are the figures (nothing left out)."""
    from portagent.evals.aggregate import timed_latencies
    from portagent.evals.scoring import Provenance, RunScore

    def score(ms: float, cold: bool) -> RunScore:
        prov = Provenance(case_id="c", provider="openai", agent="a", agent_version="1", run_id=f"r{ms}")
        return RunScore(
            provenance=prov, passed=True, checks={}, final=1, trajectory=1, trajectory_f1=1, args=1, approval=1,
            trace=1, latency_ms=ms, cold_start=cold,
        )  # fmt: skip

    assert timed_latencies([score(900, True), score(1100, True)]) == ([900, 1100], 0, 2)
    assert timed_latencies([score(900, True), score(50, False)]) == ([50], 1, 0)


def _cold_trace(recorded: Path) -> tuple[list, object]:
    from portagent.contracts.loaded_suite import load_suite

    folder = next(
        f.parent for f in (recorded / "cassettes").rglob("run.json")
        if f.parts[-3] == "openai" and RunRecord.model_validate_json(f.read_text()).result.cold_start
    )  # fmt: skip
    events = [parse_event(json.loads(line)) for line in (folder / "trace.jsonl").read_text().splitlines()]
    case = load_suite(recorded / "desk" / "suite.yaml").case(folder.parts[-3])
    expect = case.expect.model_copy(update={"max_latency_ms": 1000})
    return events, case.model_copy(update={"expect": expect})


@pytest.mark.parametrize(
    ("latency", "judged", "warning"),
    [
        (500.0, True, None),  # within the limit: judged like any run
        (3900.0, None, "within the 3000 ms allowed for a cold start"),  # the start-up allowance
        (60000.0, False, None),  # far beyond: a cold start is no blank cheque
    ],
)
def test_the_latency_limit_on_a_cold_start(
    recorded: Path, latency: float, judged: bool | None, warning
) -> None:
    from portagent.evals.scoring import score_run

    events, case = _cold_trace(recorded)
    score = score_run(events, case, latency_ms=latency)
    assert score.cold_start is True
    assert score.checks.get("latency") is judged
    if warning:
        assert any(warning in w for w in score.warnings), score.warnings
    if judged is False:
        assert any("also beyond the 3000 ms allowed for a cold start" in n for n in score.notes), score.notes
    warm = score_run([e.model_copy(update={"cold_start": False}) if e.type == "run.started" else e for e in events],
                     case, latency_ms=latency)  # fmt: skip
    assert warm.checks["latency"] is (latency <= 1000)


def test_the_latency_gate_leaves_a_cold_start_out(recorded: Path) -> None:
    """A candidate whose every repeat holds one cold run of 5 s is not a latency regression of 5 s."""
    from portagent.evals.compare import sustained_rise
    from portagent.evals.scoring import Provenance, RunScore

    def score(ms: float, cold: bool, repeat: int, version: str) -> RunScore:
        prov = Provenance(case_id="c", provider="openai", agent="a", agent_version=version, repeat=repeat,
                          run_id=f"{version}-{repeat}-{ms}-{cold}")  # fmt: skip
        return RunScore(
            provenance=prov, passed=True, checks={}, final=1, trajectory=1, trajectory_f1=1, args=1, approval=1,
            trace=1, latency_ms=ms, cold_start=cold,
        )  # fmt: skip

    base = [score(40, False, r, "1") for r in (0, 1) for _ in range(3)]
    cand = [score(40, False, r, "2") for r in (0, 1) for _ in range(3)] + [
        score(5000, True, r, "2") for r in (0, 1)
    ]
    assert sustained_rise(base, cand, "latency_p95_ms") == 0
    cand_warm = [s.model_copy(update={"cold_start": False}) for s in cand]
    assert sustained_rise(base, cand_warm, "latency_p95_ms") == 4960  # the same runs, unmarked: a rise
