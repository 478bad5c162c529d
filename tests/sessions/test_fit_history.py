"""Fitting a long thread into a context budget reads each run's trace once (issue 16, quadratic reload fixed).

The old search (kept in ``benchmarks/fit_history.py`` as the reference) reframed the history and re-read the
dropped runs' traces for every candidate cut. The new one must give the same answer — kept turns,
compaction text, manifest parts — on threads where the compaction fits and where it does not, while reading
each trace file at most once. ``benchmarks/fit_history.py`` prints the speed-up (old / new).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from portagent.contracts.bundle import load_agent
from portagent.contracts.run import RunRequest
from portagent.runtime.sessions import fit_history

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "fit_history.py"
AGENT = Path(__file__).resolve().parent / "data" / "thread.yaml"


def bench() -> Any:
    spec = importlib.util.spec_from_file_location("fit_history_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def budgeted(tmp: Path, tokens: int) -> Any:
    path = tmp / f"budget_{tokens}.yaml"
    path.write_text(AGENT.read_text(encoding="utf-8") + f"max_context_tokens: {tokens}\n", encoding="utf-8")
    return load_agent(path)


@pytest.mark.parametrize(
    ("exchanges", "budget", "compacts"), [(12, 1200, True), (30, 1200, False), (6, 300, False)]
)
def test_same_answer_as_the_old_search_each_trace_read_once(
    tmp_path, monkeypatch, exchanges, budget, compacts
):
    b = bench()
    turns = b.build_thread(tmp_path, exchanges)
    bundle = budgeted(tmp_path, budget)
    request = RunRequest(input="Where is parcel 1 now?", provider="openai", session_id="fit")
    old = b.old_fit_history(bundle, request, turns)

    import portagent.tracing.timeline as timeline

    reads: list[str] = []
    real = timeline.load_trace_file

    def counting(path: Any) -> Any:
        reads.append(str(path))
        return real(path)

    monkeypatch.setattr(timeline, "load_trace_file", counting)
    new = fit_history(bundle, request, turns)
    assert [t.seq for t in new.kept] == [t.seq for t in old.kept]
    assert (new.compacted, new.compacted_part, new.excluded) == (
        old.compacted,
        old.compacted_part,
        old.excluded,
    )
    assert (new.compacted is not None) == compacts
    assert (
        len(reads) == len(set(reads)) <= exchanges
    )  # each trace at most once (the old search: once per cut)


def test_a_run_without_a_trace_stops_compaction_and_still_fits(tmp_path):
    b = bench()
    turns = b.build_thread(tmp_path, 12)
    Path(turns[1].trace_path).unlink()  # the oldest run's trace is gone: no cut can be compacted
    bundle = budgeted(tmp_path, 1200)
    request = RunRequest(input="Where is parcel 1 now?", provider="openai", session_id="fit")
    new = fit_history(bundle, request, turns)
    old = b.old_fit_history(bundle, request, turns)
    assert new.compacted is None and [t.seq for t in new.kept] == [t.seq for t in old.kept] and new.excluded
