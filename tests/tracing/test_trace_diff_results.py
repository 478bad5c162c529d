"""``trace diff`` shows a changed tool result as a changed step, with the change named.

A step compared only the result's ok/error code, so a tool whose output changed (123124 → 999) was
an unchanged ``=`` step while the verdict said "different"; report.md and report.html print the same
rendering for every regression."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from _support import REPO, require_path, run_cli

from portagent.tracing.diff import diff_traces

CASE = REPO / "cassettes" / "support-desk" / "support_desk@1.0.0" / "record-then-rules" / "openai" / "r0"


def _events() -> list[dict[str, Any]]:
    folder = require_path(CASE, "the demo's cassettes")
    return [json.loads(x) for x in (folder / "trace.jsonl").read_text().splitlines() if x.strip()]


def _with_output(events: list[dict[str, Any]], tool: str, output: Any) -> list[dict[str, Any]]:
    changed = copy.deepcopy(events)
    result = next(e for e in changed if e["type"] == "tool.result" and e["tool"] == tool)
    result["output"] = output
    return changed


def test_a_changed_result_output_is_a_changed_step() -> None:
    a = _events()
    old = next(e for e in a if e["type"] == "tool.result" and e["tool"] == "get_student_record")["output"]
    assert old["balance_due"] != 999
    b = _with_output(a, "get_student_record", {**old, "balance_due": 999})
    d = diff_traces(a, b)
    assert not d.equivalent
    step = next(s for s in d.steps if (s.a or "").startswith("get_student_record"))
    assert step.kind == "changed"
    assert step.changes == [f"result.output.balance_due: {old['balance_due']} → 999"]
    other = next(s for s in d.steps if (s.a or "").startswith("search_policy"))
    assert other.kind == "same"
    text = d.render("baseline", "candidate")  # what report.md and report.html embed
    assert "~ 1→1: A get_student_record" in text
    assert f"result.output.balance_due: {old['balance_due']} → 999" in text
    assert "step 1→1 get_student_record" in "\n".join(d.summary())


def test_the_cli_names_a_changed_result(tmp_path: Path) -> None:
    a = _events()
    b = _with_output(a, "search_policy", "nothing found")
    path = tmp_path / "b.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in b))
    code, out, _ = run_cli("trace", "diff", str(CASE), str(path))
    assert code == 1, out
    assert "  ~ 2→2: A search_policy" in out and "  = 2:" not in out
    assert "result.output:" in out and "nothing found" in out
