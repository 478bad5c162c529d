"""The worker pool: one provider per worker, results in plan order, the parent's current environment,
the same scores as in-process runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _support import EXAMPLES, REPO, require_path

from portagent.contracts.errors import UsageError
from portagent.core.home import LEDGER_DB
from portagent.evals import load_suite
from portagent.runtime.eval_run import plan_runs, run_scope, run_tasks

SUITE = EXAMPLES / "support_desk" / "suite.yaml"
READ_ONLY = ["refund-rule", "case-status", "record-then-rules", "follow-up"]


@pytest.fixture(scope="module")
def tasks() -> list:
    require_path(REPO / "cassettes" / "support-desk", "the demo's committed cassettes")
    loaded = load_suite(SUITE)
    return plan_runs(
        loaded, mode="replay", providers=["openai", "adk"], cassettes=REPO / "cassettes", case_ids=READ_ONLY
    )


def test_workers_are_grouped_by_provider(tasks: list, tmp_path: Path) -> None:
    report = run_tasks(tasks, workers=2)
    assert [o.index for o in report.outcomes] == list(range(len(tasks)))
    assert all(o.score.passed and o.error is None for o in report.outcomes)
    provider_of = {w.pid: w.provider for w in report.workers}
    for o in report.outcomes:
        assert provider_of[o.pid] == tasks[o.index].provider  # a worker only ever ran its own provider
    assert sum(w.runs for w in report.workers) == len(tasks)
    assert all(0 < w.peak_rss_mb < 1000 for w in report.workers)
    # the workers used this test's PORTAGENT_HOME (set after the fork server may have started): this
    # process never opened the ledger, so the file is theirs
    assert (Path(os.environ["PORTAGENT_HOME"]) / LEDGER_DB).is_file()


def test_pool_and_in_process_score_alike(tasks: list) -> None:
    some = [t for t in tasks if t.repeat == 0]
    pooled = run_tasks(some, workers=2).outcomes
    local = run_tasks(some, in_process=True).outcomes
    strip = lambda o: o.score.model_dump(exclude={"provenance": {"run_id"}})  # noqa: E731
    assert [strip(o) for o in pooled] == [strip(o) for o in local]


def test_zero_workers_is_a_usage_error(tasks: list) -> None:
    with pytest.raises(UsageError, match="--workers must be at least 1"):
        run_tasks(tasks, workers=0)


def test_more_workers_than_runs_starts_one_per_run(tasks: list) -> None:
    """``--workers 1000000000`` hung before the first run: the pool queued an end-of-queue mark for every
    worker it might start. It starts no more workers than runs (the eval's header says how many)."""
    import threading

    some = [t for t in tasks if t.repeat == 0 and t.provider == "openai"][:2]
    done: list = []
    worker = threading.Thread(target=lambda: done.append(run_tasks(some, workers=10**9)), daemon=True)
    worker.start()
    worker.join(timeout=120)
    assert done, "the pool never finished"
    report = done[0]
    assert [o.index for o in report.outcomes] == [t.index for t in some]
    assert all(o.score.passed for o in report.outcomes)
    assert len(report.workers) <= len(some)


def test_run_scope_is_per_run() -> None:
    assert run_scope("s", "a@1.0.0", "c", "openai", 3) == "eval:s:a@1.0.0:c:openai:r3"


def test_the_providers_with_the_most_work_start_first() -> None:
    """Three providers on two workers: the one that waits for a free worker should be the quickest to
    finish. Before any result, a provider's start-up is the registry's typical figure (the SDK import);
    once its first run is back, the measured one."""
    from collections import Counter

    from portagent.runtime.eval_pool import _Speed, next_provider

    speed = _Speed()
    queued = {"adk": 56, "claude": 56, "openai": 56}
    active: Counter[str] = Counter()
    order = []
    for _ in range(3):
        p = next_provider([c for c in queued if active[c] == 0], queued, active, speed)
        order.append(p)
        active[p] += 1
    assert order == ["openai", "adk", "claude"]  # not the names' order: adk's import is the slower

    measured = _Speed()
    measured._startup["claude"] = [4.0]  # e.g. live runs that start the Claude Code CLI first
    assert next_provider(["adk", "claude", "openai"], queued, Counter(), measured) == "claude"
    # a provider without a worker goes before a second worker of one that has one, whatever its work
    assert (
        next_provider(["claude", "openai"], {"claude": 2, "openai": 500}, Counter(openai=1), speed)
        == "claude"
    )
