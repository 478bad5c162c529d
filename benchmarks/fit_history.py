"""Fitting a long session thread into a context budget: the compaction search before and after (issue 16).

``runtime.sessions.fit_history`` looks for the most recent turns that fit beside a compaction of the older
ones. It used to frame the whole history again and re-read every older run's trace for each candidate cut,
which is quadratic on a long thread. It now sizes cuts from suffix sums, reads each trace once, and compacts
only the cuts whose lower bound fits. This script builds threads of N exchanges, each run with a trace on
disk (a request, a tool call, a long answer), and times both versions. The old one is kept below as the
reference; both must return the same turns, compaction and manifest parts. It prints the times and the
ratio old / new for each N; it asserts nothing about time.

    python benchmarks/fit_history.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
AGENT = REPO / "tests" / "sessions" / "data" / "thread.yaml"
BUDGET = 1200


def build_thread(folder: Path, exchanges: int) -> list[Any]:
    """``exchanges`` user/assistant pairs, each assistant turn naming a run whose trace is on disk."""
    from portagent.contracts.session import Turn
    from portagent.core.clock import FixedClock, IdFactory
    from portagent.tracing.recorder import TraceRecorder

    turns: list[Any] = []
    for i in range(1, exchanges + 1):
        run_id = f"run_{i:016x}"
        path = folder / f"{run_id}.jsonl"
        rec = TraceRecorder(
            run_id=run_id,
            provider="openai",
            agent="thread",
            clock=FixedClock(),
            ids=IdFactory(run_id),
            path=path,
        )
        question = f"Question {i}: where is parcel {i} now?"
        answer = " ".join(f"Parcel {i} passed depot {d} and was scanned." for d in range(1, 9))
        rec.emit(
            "run.started",
            root=True,
            agent_version="1.0.0",
            spec_hash="0" * 12,
            policy_hash="0" * 12,
            sdk="openai-agents",
            sdk_version="0",
            model="gpt-4.1-mini",
            source="emulator",
            mode="direct",
            input=question,
        )
        rec.emit("tool.call", call_id="call_1", tool="track", args={"parcel": i}, args_hash="0" * 12)
        rec.emit("tool.result", call_id="call_1", ok=True, output={"depots": 8})
        rec.emit(
            "run.completed", root=True, status="completed", stop_reason="final_output", final_output=answer
        )
        rec.flush()
        for role, text in (("user", question), ("assistant", answer)):
            turns.append(
                Turn(
                    seq=len(turns) + 1,
                    role=role,  # type: ignore[arg-type]
                    content=text,
                    run_id=run_id,
                    trace_path=str(path),
                    created_at="2026-12-01T00:00:00Z",
                )
            )
    return turns


# --- the old search, kept as the reference ------------------------------------------------------------------


def old_fit_history(bundle: Any, request: Any, turns: Sequence[Any]) -> Any:
    """``fit_history`` before issue 16's fix: reframes the history and reloads the dropped runs' traces for
    every candidate cut."""
    from portagent.adapters.context_manifest import estimate_tokens, manifest_fixed_tokens
    from portagent.contracts.errors import UsageError
    from portagent.contracts.session import frame_history, split_framed
    from portagent.runtime.sessions import FittedHistory, _compact_turns, _fitted, session_events

    budget = bundle.spec.max_context_tokens
    session_id = request.session_id
    available = budget - manifest_fixed_tokens(bundle, request)

    def block(n: int, compacted: str | None) -> int:
        framed = split_framed(
            frame_history(
                session_id, turns[len(turns) - n :], "x", omitted=len(turns) - n, compacted=compacted
            )
        )
        assert framed is not None
        return estimate_tokens(framed.history)

    def compact_turns(dropped: Sequence[Any]) -> tuple[str | None, dict[str, Any] | None]:
        try:
            events, _ = session_events(dropped)  # the old cost: the dropped runs' traces read per cut
        except UsageError:
            return None, None
        return _compact_turns(session_id, dropped, events)

    if block(len(turns), None) <= available:
        return FittedHistory(list(turns))
    cuts = [n for n in range(len(turns) - 1, -1, -1) if n == 0 or turns[len(turns) - n].role == "user"]
    for n in cuts:
        compacted, part = compact_turns(turns[: len(turns) - n])
        if compacted is not None and block(n, compacted) <= available:
            return _fitted(session_id, turns, n, budget, compacted, part)
    keep = next((n for n in cuts if block(n, None) <= available), 0)
    return _fitted(session_id, turns, keep, budget, None, None)


def timed(fn: Any, *args: Any, repeats: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller threads (CI)")
    args = parser.parse_args()
    from portagent.contracts.bundle import load_agent
    from portagent.contracts.run import RunRequest
    from portagent.runtime.sessions import fit_history

    sizes = (25, 50, 100) if args.quick else (50, 100, 200, 400)
    repeats = 1 if args.quick else 3
    request = RunRequest(input="Where is parcel 1 now?", provider="openai", session_id="bench")
    print(f"{'exchanges':>10} {'old (ms)':>10} {'new (ms)':>10} {'old/new':>8}  kept, compacted")
    with tempfile.TemporaryDirectory() as tmp:
        # room for a few answers: most cuts keep too much, and the compaction grows with what is dropped
        spec = Path(tmp) / "thread_budget.yaml"
        spec.write_text(
            AGENT.read_text(encoding="utf-8") + f"max_context_tokens: {BUDGET}\n", encoding="utf-8"
        )
        bundle = load_agent(spec)
        for n in sizes:
            folder = Path(tmp) / str(n)
            folder.mkdir()
            turns = build_thread(folder, n)
            old_s, old = timed(old_fit_history, bundle, request, turns, repeats=repeats)
            new_s, new = timed(fit_history, bundle, request, turns, repeats=repeats)
            assert [t.seq for t in old.kept] == [t.seq for t in new.kept], n
            assert (old.compacted, old.compacted_part, old.excluded) == (
                new.compacted,
                new.compacted_part,
                new.excluded,
            )
            print(
                f"{n:>10} {old_s * 1000:>10.1f} {new_s * 1000:>10.1f} {old_s / new_s:>7.1f}x  "
                f"{len(new.kept)} turns, {'yes' if new.compacted else 'no'}"
            )


if __name__ == "__main__":
    main()
