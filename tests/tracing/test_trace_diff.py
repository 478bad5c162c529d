"""``portagent trace diff A B`` over real traces (the committed cassettes' traces, written by the real
SDKs against the emulator): one step inserted, two steps in another order, an argument changed, a
decision changed, and two equivalent traces from different providers. Exit 0 equivalent, 1 different,
2 for a path that is not a trace; ``--json`` is machine-readable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _support import REPO, require_path, run_cli

from portagent.tracing.diff import diff_traces
from portagent.tracing.timeline import load_trace_file

RUNS = REPO / "cassettes" / "support-desk"


def _run(version: str, case: str, provider: str = "openai") -> Path:
    return require_path(RUNS / f"support_desk@{version}" / case / provider / "r0", "the demo's cassettes")


def _lines(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (folder / "trace.jsonl").read_text().splitlines() if x.strip()]


def _write(tmp: Path, name: str, events: list[dict[str, Any]]) -> Path:
    p = tmp / f"{name}.jsonl"
    p.write_text("".join(json.dumps(e) + "\n" for e in events))
    return p


def test_equivalent_traces_from_two_providers_exit_0() -> None:
    code, out, _ = run_cli(
        "trace",
        "diff",
        str(_run("1.0.0", "record-then-rules")),
        str(_run("1.0.0", "record-then-rules", "adk")),
    )
    assert code == 0, out
    assert "= 1: get_student_record" in out and "= 2: search_policy" in out
    assert "final output: identical" in out and "equivalent" in out


def test_an_inserted_step_is_aligned_not_a_shift() -> None:
    code, out, _ = run_cli(
        "trace", "diff", str(_run("1.0.0", "refund-rule")), str(_run("1.0.0", "record-then-rules")), "--json"
    )
    assert code == 1
    data = json.loads(out)
    assert data["kind"] == "trace-diff" and data["equivalent"] is False
    kinds = [(s["kind"], (s["a"] or s["b"]).split("(")[0]) for s in data["steps"]]
    assert ("inserted", "get_student_record") in kinds and kinds.count(
        ("inserted", "get_student_record")
    ) == 1
    assert any(k.startswith("search_policy") for kind, k in kinds if kind in ("same", "changed"))
    assert data["final_output_diff"]  # the answers differ too


def test_a_changed_argument_names_the_field(tmp_path: Path) -> None:
    a = _lines(_run("1.0.0", "record-then-rules"))
    b = [dict(e) for e in a]
    for e in b:
        if e["type"] == "tool.call" and e["tool"] == "search_policy":
            e["args"] = {**e["args"], "query": "refund deadline"}
    code, out, _ = run_cli("trace", "diff", str(_write(tmp_path, "a", a)), str(_write(tmp_path, "b", b)))
    assert code == 1
    assert "~ 2→2" in out and 'args.query: "required documents" → "refund deadline"' in out
    assert "= 1: get_student_record" in out  # the other step is unchanged


def test_two_steps_in_another_order(tmp_path: Path) -> None:
    a = _lines(_run("1.0.0", "record-then-rules"))
    assert [e["tool"] for e in a if e["type"] == "tool.call"] == ["get_student_record", "search_policy"]
    b = _reorder(a)
    assert [e["tool"] for e in b if e["type"] == "tool.call"] == ["search_policy", "get_student_record"]
    result = diff_traces(load_trace_file(_write(tmp_path, "a", a)), load_trace_file(_write(tmp_path, "b", b)))
    kinds = [(s.kind, (s.a or s.b or "").split("(")[0]) for s in result.steps]
    # one call kept aligned, the other moved: shown once as deleted (A) and once as inserted (B)
    moved = {k for kind, k in kinds if kind in ("deleted", "inserted")}
    assert len(moved) == 1 and len(kinds) == 3, kinds
    assert not result.equivalent and result.exit_code == 1


def _reorder(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The two tool calls (with their decisions and results) in the other order, seq renumbered."""
    calls = [e["call_id"] for e in events if e["type"] == "tool.call"]
    groups = {c: [e for e in events if e.get("call_id") == c] for c in calls}
    out, placed = [], False
    for e in events:
        if e.get("call_id") in groups:
            if not placed:
                for c in reversed(calls):
                    out += [dict(x) for x in groups[c]]
                placed = True
            continue
        out.append(dict(e))
    for i, e in enumerate(out):
        e["seq"] = i
    return out


def test_a_decision_change_between_agent_versions() -> None:
    code, out, _ = run_cli(
        "trace",
        "diff",
        str(_run("1.0.0", "email-outside-denied")),
        str(_run("2.0.0", "email-outside-denied")),
    )
    assert code == 1
    assert "decision: deny (no-email-outside-university) → allow (emails-go-out-directly)" in out
    assert "result: error permission_denied → ok" in out
    assert "final output:" in out and "--- A" in out


def test_not_a_trace_is_a_usage_error(tmp_path: Path) -> None:
    code, out, err = run_cli("trace", "diff", str(tmp_path), str(tmp_path / "nope.jsonl"))
    assert code == 2 and "no trace.jsonl in this folder" in out + err
    assert "Traceback" not in out + err
