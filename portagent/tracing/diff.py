"""``trace diff``: two traces side by side — aligned trajectories and the final output, readable.

Each trace becomes a list of **steps**, one per tool call in call order: the tool, its arguments,
the permission decision (and rule), the approval outcome and the result (``ok`` or the error code,
and the tool's output, compared but not shown unless it changed).
The two step lists are aligned on tool names (``difflib.SequenceMatcher``: the longest matching
subsequence), so an inserted or deleted call does not shift every later step into a "difference":

- ``same``: the same tool with the same arguments, decision, approval and result;
- ``changed``: the same tool at an aligned position, with what differs (``args.to: "a" → "b"``,
  ``decision: deny → allow``, ``result.output.balance: 180 → 181`` …);
- ``inserted`` (only in B) / ``deleted`` (only in A).

The final output is compared as text (a unified diff), with the run status and route. Whether the
two traces are **equivalent** is ``tracing.compare.equivalent`` (volatile fields — ids, timestamps,
latencies, vendor details — ignored; across providers, vendor mechanics ignored too), so the verdict
is the one the equivalence check gives, and the steps show where it comes from. Steps and final
outputs are shown as that check compares them: per-run ids rewritten as their kind and order of first
appearance (``<effect_id#1>``), timings as ``<ts>``.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from portagent.tracing.compare import _as_dict, canonical, equivalent

if TYPE_CHECKING:
    from pathlib import Path

StepKind = Literal["same", "changed", "inserted", "deleted"]


@dataclass(frozen=True)
class Step:
    """One tool call of a trace, with what the gateway made of it."""

    tool: str
    args: Any
    decision: str | None
    rule: str | None
    approval: str | None
    result: str | None
    output: Any = None
    """The tool result's output: compared, so a changed result is a changed step, not shown in the label."""

    def label(self) -> str:
        bits = [f"{self.tool}({_short(self.args)})"]
        if self.decision:
            bits.append(f"{self.decision}" + (f" by {self.rule}" if self.rule else ""))
        if self.approval:
            bits.append(f"approval {self.approval}")
        if self.result:
            bits.append(self.result)
        return " · ".join(bits)


@dataclass
class AlignedStep:
    """One row of the aligned trajectories."""

    kind: StepKind
    a_index: int | None
    """0-based step index in A (None: inserted)."""
    b_index: int | None
    """0-based step index in B (None: deleted)."""
    a: str | None
    """A's step, readable."""
    b: str | None
    """B's step, readable."""
    changes: list[str] = field(default_factory=list)
    """For ``changed``: each difference (``args.to: "x" → "y"``)."""


@dataclass
class TraceDiff:
    """The result of ``diff_traces``."""

    equivalent: bool
    """The equivalence check's verdict (exit 0 when true)."""
    differences: list[str]
    """The equivalence check's differences."""
    steps: list[AlignedStep]
    """Aligned trajectories (every step of both traces)."""
    status: tuple[str | None, str | None]
    """Run status in A and B."""
    route: tuple[str | None, str | None]
    """Agent that produced the final output in A and B."""
    final_output_diff: list[str]
    """Unified diff of the final outputs (empty when equal)."""
    across_providers: bool
    """Vendor mechanics were ignored (the traces come from different providers)."""

    @property
    def exit_code(self) -> int:
        return 0 if self.equivalent else 1

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["kind"] = "trace-diff"
        data["status"] = list(self.status)
        data["route"] = list(self.route)
        return data

    def summary(self) -> list[str]:
        """One line per step that is not ``same``, then status, route and output lines."""
        out: list[str] = []
        for s in self.steps:
            if s.kind == "changed":
                out.append(f"step {_n(s.a_index)}→{_n(s.b_index)} {s.b}: " + "; ".join(s.changes))
            elif s.kind == "inserted":
                out.append(f"step +{_n(s.b_index)} only in B: {s.b}")
            elif s.kind == "deleted":
                out.append(f"step -{_n(s.a_index)} only in A: {s.a}")
        if self.status[0] != self.status[1]:
            out.append(f"status: {self.status[0]} → {self.status[1]}")
        if self.route[0] != self.route[1]:
            out.append(f"route: {self.route[0]} → {self.route[1]}")
        if self.final_output_diff:
            out.append("final output differs")
        return out

    def render(self, a_name: str = "A", b_name: str = "B") -> str:
        """The whole diff, readable (what ``portagent trace diff`` prints): every step of both traces,
        ``=`` same, ``~`` changed (with each change), ``-`` only in A, ``+`` only in B."""
        lines = [f"A: {a_name}", f"B: {b_name}", "trajectory:"]
        for s in self.steps:
            if s.kind == "same":
                lines.append(f"  = {_n(s.a_index)}: {s.a}")
            elif s.kind == "changed":
                lines.append(f"  ~ {_n(s.a_index)}→{_n(s.b_index)}: A {s.a}")
                lines.append(f"  {' ' * (len(_n(s.a_index)) + len(_n(s.b_index)) + 4)}  B {s.b}")
                lines += [f"      {c}" for c in s.changes]
            elif s.kind == "deleted":
                lines.append(f"  - {_n(s.a_index)}: only in A: {s.a}")
            else:
                lines.append(f"  + {_n(s.b_index)}: only in B: {s.b}")
        if not self.steps:
            lines.append("  (no tool calls in either trace)")
        lines.append(f"status: {self.status[0]} | {self.status[1]}")
        if self.route[0] != self.route[1]:
            lines.append(f"route: {self.route[0]} | {self.route[1]}")
        if self.final_output_diff:
            lines.append("final output:")
            lines += [f"  {x}" for x in self.final_output_diff]
        else:
            lines.append("final output: identical")
        verdict = "equivalent" if self.equivalent else f"different ({len(self.differences)} difference(s))"
        if self.across_providers:
            verdict += " — vendor mechanics ignored (different providers)"
        lines.append(verdict)
        return "\n".join(lines)


def _n(i: int | None) -> str:
    return "" if i is None else str(i + 1)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _short(value: Any, limit: int = 60) -> str:
    """A value as JSON (a string quoted, so ``"123124"`` is not the number 123124), cut to ``limit``."""
    text = _json(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _change(a: Any, b: Any, limit: int = 60) -> str:
    """``a → b`` that shows the difference: two long values are cut around where they first differ,
    not both to the same prefix."""
    ta, tb = _json(a), _json(b)
    if len(ta) <= limit and len(tb) <= limit:
        return f"{ta} → {tb}"
    strings = isinstance(a, str) and isinstance(b, str)
    ra, rb = (a, b) if strings else (ta, tb)
    at = next((i for i, (x, y) in enumerate(zip(ra, rb, strict=False)) if x != y), min(len(ra), len(rb)))
    start = max(0, at - limit // 3)

    def window(text: str) -> str:
        piece = text[start : start + limit]
        shown = _json(piece) if strings else piece
        return ("…" if start else "") + shown + ("…" if start + limit < len(text) else "")

    where = f"character {at + 1}" + ("" if strings else " of the JSON")
    return f"{window(ra)} → {window(rb)} (first difference at {where})"


def steps_of(events: list[Any]) -> list[Step]:
    """The trace's tool calls in call order, each with its decision, approval and result."""
    ds = [_as_dict(e) for e in events]
    ds.sort(key=lambda e: e.get("seq", 0))
    decisions = {e["call_id"]: e for e in ds if e["type"] == "permission.decision"}
    approvals = {e["call_id"]: e["status"] for e in ds if e["type"] == "approval.resolved"}
    results: dict[str, dict[str, Any]] = {}
    for e in ds:
        if e["type"] == "tool.result":
            results.setdefault(e["call_id"], e)
    out = []
    for e in ds:
        if e["type"] != "tool.call":
            continue
        cid = e["call_id"]
        d = decisions.get(cid)
        r = results.get(cid)
        result, output = None, None
        if r is not None:
            output = r.get("output")
            result = "ok" if r.get("ok") else f"error {r.get('error')}"
            if r.get("duplicate"):
                result += " (duplicate)"
        out.append(
            Step(
                tool=e["tool"],
                args=e.get("args"),
                decision=d["decision"] if d else None,
                rule=d.get("rule") if d else None,
                approval=approvals.get(cid),
                result=result,
                output=output,
            )
        )
    return out


def _value_changes(prefix: str, a: Any, b: Any) -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a:
                out.append(f"{prefix}.{k}: added {_short(b[k])}")
            elif k not in b:
                out.append(f"{prefix}.{k}: removed (was {_short(a[k])})")
            elif a[k] != b[k]:
                out += _value_changes(f"{prefix}.{k}", a[k], b[k])
        return out
    return [f"{prefix}: {_change(a, b)}"]


def _step_changes(a: Step, b: Step) -> list[str]:
    out: list[str] = []
    if a.args != b.args:
        out += _value_changes("args", a.args, b.args)
    if (a.decision, a.rule) != (b.decision, b.rule):
        out.append(f"decision: {a.decision} ({a.rule}) → {b.decision} ({b.rule})")
    if a.approval != b.approval:
        out.append(f"approval: {a.approval} → {b.approval}")
    if a.result != b.result:
        out.append(f"result: {a.result} → {b.result}")
    if a.output != b.output:
        out += _value_changes("result.output", a.output, b.output)
    return out


def align(a: list[Step], b: list[Step]) -> list[AlignedStep]:
    """Align two step lists on tool names; every step of both appears once."""
    matcher = difflib.SequenceMatcher(a=[s.tool for s in a], b=[s.tool for s in b], autojunk=False)
    rows: list[AlignedStep] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                changes = _step_changes(a[i], b[j])
                rows.append(
                    AlignedStep("changed" if changes else "same", i, j, a[i].label(), b[j].label(), changes)
                )
            continue
        rows += [AlignedStep("deleted", i, None, a[i].label(), None) for i in range(i1, i2)]
        rows += [AlignedStep("inserted", None, j, None, b[j].label()) for j in range(j1, j2)]
    return rows


def _final(events: list[Any]) -> tuple[Any, str | None, str | None]:
    ds = [_as_dict(e) for e in events]
    done = next((e for e in reversed(ds) if e["type"] == "run.completed"), None)
    handoffs = [e for e in ds if e["type"] == "handoff" and e.get("kind") == "handoff"]
    route = handoffs[-1]["to_agent"] if handoffs else (done["agent"] if done else None)
    return (done or {}).get("final_output"), (done or {}).get("status"), route


def _text(value: Any) -> list[str]:
    if value is None:
        return []
    text = (
        value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)
    )
    return text.splitlines()


def diff_traces(a: list[Any], b: list[Any], *, across_providers: bool | None = None) -> TraceDiff:
    """Diff two traces (TraceEvents or dicts). ``across_providers``: ignore vendor mechanics (default:
    when the two traces come from different providers)."""
    if across_providers is None:
        pa = {_as_dict(e).get("provider") for e in a}
        pb = {_as_dict(e).get("provider") for e in b}
        across_providers = pa != pb
    eq = equivalent(a, b, across_providers=across_providers)
    # Steps and final outputs are shown with per-run ids rewritten (``<effect_id#1>``), as the
    # equivalence check compares them: an effect id quoted in a final output is no difference.
    ca, cb = canonical(a), canonical(b)
    fa, sa, ra = _final(ca)
    fb, sb, rb = _final(cb)
    final_diff = list(difflib.unified_diff(_text(fa), _text(fb), "A", "B", lineterm="", n=1))
    return TraceDiff(
        equivalent=bool(eq),
        differences=list(eq.differences),
        steps=align(steps_of(ca), steps_of(cb)),
        status=(sa, sb),
        route=(ra, rb),
        final_output_diff=final_diff,
        across_providers=across_providers,
    )


def load_trace_or_run(path: str | Path) -> list[Any]:
    """A trace file, or a run folder (``run.json`` + ``trace.jsonl``, a cassette folder or a results
    run folder). Anything else is a usage error (one message, exit 2)."""
    from pathlib import Path

    from portagent.contracts.errors import UsageError
    from portagent.tracing.timeline import load_trace_file

    p = Path(path)
    if p.is_dir():
        trace = p / "trace.jsonl"
        if not trace.is_file():
            raise UsageError(f"{p}: no trace.jsonl in this folder; give a trace file or a run folder")
        p = trace
    elif not p.is_file():
        raise UsageError(f"{p}: no such trace file or run folder")
    return load_trace_file(p, allow_empty=False)
