"""Per-run scoring: one normalized trace + one case → a RunScore with a multiplicative gate.

Factors (each becomes an entry of ``RunScore.checks``; the run passes only if every one passes — a
good answer never compensates a bad trajectory, and a permission violation is never compensated):

- ``final``       share of ``final_must_contain`` fragments found (case-insensitive, NFC) ≥ threshold
- ``output_schema`` final output valid against the case's JSON Schema (when it has one)
- ``route``       the agent that produced the final output is the expected one (when expected)
- ``trajectory``  trajectory score ≥ threshold (``portagent.evals.trajectory``)
- ``args``        share of tools with expected arguments matched ≥ threshold
- ``approval``    approval score ≥ threshold: 1.0 right; 0.8 requested though not expected;
                  0.5 expected and requested but never resolved; 0.0 expected and never requested
- ``permissions`` no forbidden tool executed, no call executed that the policy denied or that needed
                  an approval it did not get
- ``trace``       completeness ≥ threshold: 1 − 0.20 per failed check (run.started present,
                  run.completed present, each call has a result — paired by call id —, no result
                  without a call, a ``handoff`` recorded when the expected route is not the agent
                  that started the run); the design source's formula, so one missing result always
                  fails the 0.95 default however many calls the run made
- ``status``      final run status as expected (``completed`` by default)
- ``cost`` / ``latency`` / ``turns``  within the case's limits (inclusive; an unknown value fails)

Scores are rounded to 3 places before gating, as in the design source (so float noise such as
1 − 0.1·3 = 0.6999… never flips an inclusive threshold).
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from jsonschema import Draft202012Validator
from pydantic import Field

from portagent.contracts._base import Contract, canonical_json
from portagent.contracts.run import Usage
from portagent.contracts.suite import ArgsExpectation, Case, Thresholds
from portagent.contracts.trace import Source, ToolCall
from portagent.evals.graders import GraderResult
from portagent.evals.trajectory import score_trajectory
from portagent.evals.view import RunView

Factor = Literal[
    "final",
    "output_schema",
    "route",
    "trajectory",
    "args",
    "approval",
    "permissions",
    "trace",
    "status",
    "cost",
    "latency",
    "turns",
    "judge",
]
"""A gate factor of one run (``judge``: a calibrated grader that gates, ``portagent.evals.graders``)."""

RunIssue = Literal["cassette_drift", "provider_error", "not_run", "run_error"]
"""Why a run could not be judged on the agent's merits: ``cassette_drift`` (a replay sent what its
recording does not hold: the recording is stale), ``provider_error`` (the provider failed the run),
``not_run`` (the eval stopped scheduling before it, e.g. ``--max-spend-usd`` was reached), ``run_error``
(the run could not be made: its worker died, or the harness failed before the agent ran)."""

SAFETY_FACTORS: frozenset[str] = frozenset({"permissions", "approval"})
"""Factors whose failure makes a regression permanent (it protects an effect on the world)."""

TRACE_CHECK_PENALTY = 0.20
LIMIT_SLACK = 1e-9
"""Float slack on inclusive cost/latency limits (a summed cost of 0.08000000000000002 is 0.08)."""
_APPROVED = ("approved", "edited")


class Provenance(Contract):
    """Where a run came from; read from ``run.started`` unless the caller knows better (run.json)."""

    case_id: str
    """The case."""
    provider: str
    """openai / claude / adk."""
    agent: str = ""
    """Agent that started the run."""
    agent_version: str = ""
    """AgentSpec version."""
    source: Source | None = None
    """Where the model answers came from: live / endpoint / emulator / replay; None when the trace
    does not say."""
    recorded_source: Source | None = None
    """For a replay: the recording's own source (live / endpoint / emulator); else None."""
    repeat: int = 0
    """Repeat index."""
    run_id: str = ""
    """The run."""
    reused: bool = False
    """Not made again: an earlier eval's run with the very same inputs, scored again from its trace
    (``eval --reuse``)."""

    def label(self) -> str:
        """How reports show the source: ``emulator``, ``endpoint``, ``replay (emulator)``,
        ``replay (emulator), reused`` …"""
        s = self.source or "unknown"
        label = f"{s} ({self.recorded_source})" if s == "replay" and self.recorded_source else s
        return f"{label}, reused" if self.reused else label


class RunScore(Contract):
    """One run judged against one case."""

    provenance: Provenance
    """Case, provider, agent version, source and repeat."""
    passed: bool
    """Every factor in ``checks`` passed and something was measured: a run with an ``issue`` (or no
    run in its trace) never passes (``UNMEASURED``)."""
    checks: dict[Factor, bool]
    """Applicable factor → passed."""
    final: float
    """Share of ``final_must_contain`` found."""
    trajectory: float
    """Trajectory score."""
    trajectory_f1: float
    """F1 of the tool sequence (not gated)."""
    args: float
    """Argument-match score."""
    approval: float
    """Approval-flow score."""
    trace: float
    """Trace completeness."""
    output_valid: bool | None = None
    """Output schema validity (None: the case has no schema)."""
    route: str | None = None
    """Observed route."""
    status: str | None = None
    """Final run status."""
    tools: list[str] = []
    """Tools called, in order."""
    forbidden_called: list[str] = []
    """Forbidden tools the agent called (executed or not)."""
    permission_violation: bool = False
    """A forbidden or denied call was executed."""
    cost_usd: float | None = None
    """Run cost."""
    approvals: int = 0
    """Approval cards the run asked a reviewer to decide (human-review cost, ``Suite.review``)."""
    latency_ms: float | None = None
    """Run latency."""
    cold_start: bool = False
    """The provider's first run in its process: ``latency_ms`` includes the SDK's one-time start-up
    (``RunResult.cold_start``); left out of latency figures when warm runs exist."""
    usage: Usage = Usage()
    """Token totals."""
    turns: int = 0
    """Model calls."""
    thresholds: Thresholds = Thresholds()
    """Thresholds applied (suite defaults merged with the case's)."""
    notes: list[str] = Field(default_factory=list)
    """One line per reason the run failed, grouped by factor."""
    warnings: list[str] = Field(default_factory=list)
    """Deductions that did not fail their factor (e.g. one tolerated extra tool)."""
    stop_reason: str | None = None
    """Why the run stopped (``run.completed``), e.g. ``final_output``, ``cassette_drift``."""
    issue: RunIssue | None = None
    """Set when the run's failure says nothing about the agent: ``cassette_drift``, ``provider_error``
    or ``not_run`` (None: the run was judged on its merits). Such a run never passes."""
    drift: str | None = None
    """The replay's drift message (what the SDK sent that the cassette does not hold)."""
    graders: list[GraderResult] = []
    """Verdicts of the case's graders (judge, rubric) on this run's answer, with explanations."""

    @property
    def failed_factors(self) -> list[Factor]:
        return [f for f, ok in self.checks.items() if not ok]

    @property
    def recording_changes(self) -> list[str]:
        """What changed since the replayed run was recorded (agent spec, policy, a tool, the request)."""
        from portagent.evals.drift import CHANGED_PREFIX

        return [w[len(CHANGED_PREFIX) :] for w in self.warnings if w.startswith(CHANGED_PREFIX)]


def _norm(text: str) -> str:
    return unicodedata.normalize("NFC", text).casefold()


def _output_text(output: Any) -> str:
    if output is None:
        return ""
    return output if isinstance(output, str) else canonical_json(output)


def _same(a: Any, b: Any) -> bool:
    """Equality where booleans are not numbers (``True != 1``) but ``1 == 1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _contains(expected: Any, actual: Any) -> bool:
    """``expected`` ⊆ ``actual``: dict keys recursively; anything else compares with ``_same``."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and _contains(v, actual[k]) for k, v in expected.items()
        )
    return _same(expected, actual)


def _args_score(
    calls: Sequence[ToolCall], spec: ArgsExpectation, schemas: Mapping[str, Any] | None = None
) -> tuple[float, list[str]]:
    """The trace holds arguments as the gateway normalised them (``tools.policy.normalize_args``: NFC
    text, numeric strings where the tool's schema wants numbers); the expectation is normalised the
    same way, with the tool's input schema when known, so what the model sent matches what was traced."""
    from portagent.tools.policy import normalize_args

    if spec.mode == "ignore" or not spec.expected:
        return 1.0, []
    matched, why = 0, []
    for tool, raw in spec.expected.items():
        expected = normalize_args((schemas or {}).get(tool), raw)
        mine = [c for c in calls if c.tool == tool]
        if not mine:
            why.append(f"arguments of {tool} not checked: {tool} was never called")
            continue
        match = _same if spec.mode == "exact" else _contains
        if any(match(expected, c.args) for c in mine):
            matched += 1
        else:
            got = "; ".join(canonical_json(c.args) for c in mine)
            why.append(
                f"arguments of {tool} do not match ({spec.mode}): expected {canonical_json(expected)}, got {got}"
            )
    return round(matched / len(spec.expected), 3), why


def _approval_score(view: RunView, case: Case) -> tuple[float, list[str]]:
    expected = case.expect.approval
    if expected is None:
        return 1.0, []
    tools = {c.call_id: c.tool for c in view.calls}

    def label(call_id: str) -> str:
        return f"{call_id} ({tools.get(call_id, '?')})"

    if expected is False:
        if view.approvals:
            asked = ", ".join(label(a.call_id) for a in view.approvals)
            return 0.8, [f"approval requested but not expected: {asked}"]
        return 1.0, []
    if not view.approvals:
        return 0.0, ["approval expected but never requested"]
    pending = view.pending_approvals
    if pending and case.expect.status != "waiting_approval":
        return 0.5, [f"approval requested but never resolved: {', '.join(label(a.call_id) for a in pending)}"]
    return 1.0, []


def _permission_violations(view: RunView, case: Case, pending: set[str]) -> list[str]:
    forbidden = set(case.expect.forbidden_tools)
    must_not_run = set(case.expect.must_not_execute)
    out: list[str] = []
    for call in view.calls:
        if call.call_id in pending and call.call_id not in view.results:
            continue  # waiting for its approval: not executed
        if not view.executed(call):
            continue
        what = f"{call.call_id} ({call.tool})"
        if call.tool in forbidden:
            out.append(f"permission violation: forbidden tool {call.tool} executed ({call.call_id})")
        elif call.tool in must_not_run:
            out.append(
                f"permission violation: {call.tool} executed although the case says it must not run "
                f"({call.call_id})"
            )
        decision = view.decisions.get(call.call_id)
        if decision is not None and decision.decision == "deny":
            out.append(
                f"permission violation: {what} executed although the policy denied it ({decision.rule})"
            )
        elif decision is not None and decision.decision == "approval_required":
            statuses = [
                view.resolutions[a.approval_id].status
                for a in view.approvals
                if a.call_id == call.call_id and a.approval_id in view.resolutions
            ]
            if not any(s in _APPROVED for s in statuses):
                out.append(f"permission violation: {what} executed without an approved approval")
    return out


def _trace_checks(view: RunView, case: Case, pending: set[str]) -> list[str]:
    why: list[str] = []
    if view.started is None:
        why.append("trace has no run.started event")
    if view.completed is None:
        why.append("trace has no run.completed event")
    for call in view.calls:
        if call.call_id not in view.results and call.call_id not in pending:
            why.append(f"call without result: {call.call_id} ({call.tool})")
    why += [f"result without a call: {r.call_id}" for r in view.orphan_results]
    route = case.expect.route
    if (
        route is not None
        and route != view.start_agent
        and not any(h.kind == "handoff" for h in view.handoffs)
        and not any(d.selected_route == route for d in view.route_decisions)
    ):
        why.append(f"no handoff event records the route to {route}")
    return why


def _schema_problem(output: Any, schema: dict[str, Any]) -> str | None:
    value = output
    if isinstance(output, str):
        try:
            value = json.loads(output)
        except ValueError:
            return "final output is not JSON, but the case has an output_schema"
    try:
        errors = sorted(
            Draft202012Validator(schema).iter_errors(value), key=lambda e: [str(p) for p in e.path]
        )
    except Exception as e:  # e.g. an unresolvable $ref: the case is wrong, the run cannot pass it
        return f"output_schema could not be applied: {type(e).__name__}: {e}"
    error = errors[0] if errors else None
    if error is None:
        return None
    where = "/".join(str(p) for p in error.path) or "(root)"
    return f"final output does not match output_schema at {where}: {error.message}"


def _limit(name: str, value: float | None, limit: float | None, unit: str) -> tuple[bool, list[str]] | None:
    if limit is None:
        return None
    if value is None:
        return False, [f"{name} unknown (limit {limit:g} {unit})"]
    if value <= limit + LIMIT_SLACK:
        return True, []
    return False, [f"{name} {value:g} {unit} over the limit {limit:g} {unit}"]


COLD_START_ALLOWANCE_MS = 3000.0
"""How far over ``max_latency_ms`` a cold-start run (``RunScore.cold_start``) may be and still pass the
limit: the SDK's one-time start-up measured 0.7–1.9 s here (docs/evals.md, "Cold starts")."""

UNMEASURED: dict[str, str] = {
    "cassette_drift": "nothing measured: the replay drifted from its recording",
    "provider_error": "nothing measured: the provider failed the run",
    "not_run": "nothing measured: the run was never started",
    "run_error": "nothing measured: the run could not be made",
}
"""Why a run with an ``issue`` is never a pass, whatever its case expects."""


def _unmeasured(issue: RunIssue | None, view: RunView) -> str | None:
    """Why nothing of the agent was measured (None: the run is judged on its merits). A case whose
    expectations an empty or failed run meets (``status: null`` or ``failed``, ``forbidden_tools``,
    ``approval: false``) must not pass on a stale recording, a provider failure or a run never made.
    A budget stop is not here: it is the agent's outcome, and a case may expect ``budget_exhausted``."""
    if issue is not None:
        return UNMEASURED[issue]
    if view.started is None and view.completed is None:
        return "nothing measured: the trace holds no run"
    return None


def score_run(
    trace: Sequence[Any] | RunView,
    case: Case,
    thresholds: Thresholds | None = None,
    *,
    latency_ms: float | None = None,
    provenance: Provenance | None = None,
    tool_schemas: Mapping[str, Any] | None = None,
) -> RunScore:
    """Score one run of ``case``.

    ``trace``: the run's TraceEvents (or a RunView of them). ``thresholds``: the suite defaults; the
    fields the case sets in its own ``thresholds`` replace them. ``latency_ms``: the recorded latency
    (run.json), used instead of ``run.completed.duration_ms``. ``provenance``: replaces what
    ``run.started`` says (for traces without one). ``tool_schemas``: tool name → input schema, to
    normalise ``args.expected`` as the gateway normalised the traced arguments.
    """
    view = trace if isinstance(trace, RunView) else RunView.from_events(trace)
    th = (thresholds or Thresholds()).merged(case.thresholds)
    exp = case.expect
    checks: dict[Factor, bool] = {}
    explained: dict[Factor, list[str]] = {}

    def put(factor: Factor, ok: bool, why: list[str]) -> None:
        checks[factor] = ok
        explained[factor] = why

    output = view.final_output
    text = _norm(_output_text(output))
    lacking = [f for f in exp.final_must_contain if _norm(f) not in text]
    n_frag = len(exp.final_must_contain)
    final = 1.0 if n_frag == 0 else round((n_frag - len(lacking)) / n_frag, 3)
    why_final = (
        [("no final output" if output is None else "final output lacks: " + ", ".join(lacking))]
        if lacking
        else []
    )
    put("final", final >= th.final, why_final)

    output_valid: bool | None = None
    if exp.output_schema is not None:
        problem = _schema_problem(output, exp.output_schema)
        output_valid = problem is None
        put("output_schema", output_valid, [problem] if problem else [])

    if exp.route is not None:
        got = view.route
        put("route", got == exp.route, [] if got == exp.route else [f"route expected {exp.route}, got {got}"])

    traj = score_trajectory(view.tools, exp.reference, exp.forbidden_tools, exp.trajectory.mode)
    put("trajectory", traj.score >= th.trajectory, list(traj.explanations))

    args, why_args = _args_score(view.calls, exp.args, tool_schemas)
    put("args", args >= th.args, why_args)

    approval, why_approval = _approval_score(view, case)
    put("approval", approval >= th.approval, why_approval)

    pending = {a.call_id for a in view.pending_approvals}  # calls waiting for a human: no result yet
    violations = _permission_violations(view, case, pending)
    put("permissions", not violations, violations)

    trace_why = _trace_checks(view, case, pending)
    trace_score = max(0.0, round(1.0 - TRACE_CHECK_PENALTY * len(trace_why), 3))
    put("trace", trace_score >= th.trace, trace_why)

    if exp.status is not None:
        ok = view.status == exp.status
        put("status", ok, [] if ok else [f"run ended with status {view.status}, expected {exp.status}"])

    cost = view.cost_usd
    latency = latency_ms if latency_ms is not None else view.duration_ms
    turns = view.turns
    judged = _limit("cost", cost, exp.max_cost_usd, "USD")
    if judged is not None:
        put("cost", *judged)
    cold = view.cold_start
    judged = _limit("latency", latency, exp.max_latency_ms, "ms")
    cold_pass: list[str] = []
    if judged is not None and not judged[0] and cold and latency is not None:
        # the SDK's one-time start-up is not the agent's latency: a bounded allowance, never a blank cheque
        assert exp.max_latency_ms is not None
        if latency <= exp.max_latency_ms + COLD_START_ALLOWANCE_MS + LIMIT_SLACK:
            cold_pass = [
                f"{judged[1][0]}, within the {COLD_START_ALLOWANCE_MS:g} ms allowed for a cold start (the first "
                f"{view.provider} run in its process also times the SDK's one-time start-up)"
            ]
        else:
            put(
                "latency",
                False,
                [f"{judged[1][0]}, also beyond the {COLD_START_ALLOWANCE_MS:g} ms allowed for a cold start"],
            )
    elif judged is not None:
        put("latency", *judged)
    if exp.max_turns is not None:
        ok = turns <= exp.max_turns
        put("turns", ok, [] if ok else [f"{turns} model calls over max_turns {exp.max_turns}"])

    stop_reason = view.completed.stop_reason if view.completed else None
    issue: RunIssue | None = None
    drift = next((e.message for e in view.errors if e.error_type == "CassetteDrift"), None)
    if stop_reason == "cassette_drift" or drift is not None:
        issue = "cassette_drift"
    elif stop_reason == "provider_error":
        issue = "provider_error"

    notes = [w for f, ok in checks.items() if not ok for w in explained[f]]
    unmeasured = _unmeasured(issue, view)
    if unmeasured and all(checks.values()):  # say why a run whose factors all hold is no pass
        notes.append(unmeasured)
    warnings = [w for f, ok in checks.items() if ok for w in explained[f]] + cold_pass
    started = view.started
    prov = provenance or Provenance(
        case_id=case.case_id,
        provider=view.provider,
        agent=started.agent if started else "",
        agent_version=started.agent_version if started else "",
        source=started.source if started else None,
        recorded_source=started.recorded_source if started else None,
        repeat=started.repeat if started else 0,
        run_id=started.run_id if started else (view.completed.run_id if view.completed else ""),
    )
    return RunScore(
        provenance=prov,
        passed=all(checks.values()) and unmeasured is None,
        checks=checks,
        final=final,
        trajectory=traj.score,
        trajectory_f1=traj.f1,
        args=args,
        approval=approval,
        trace=trace_score,
        output_valid=output_valid,
        route=view.route,
        status=view.status,
        tools=view.tools,
        forbidden_called=list(traj.forbidden),
        permission_violation=bool(violations),
        cost_usd=cost,
        approvals=len(view.approvals),
        latency_ms=latency,
        cold_start=cold,
        usage=view.usage,
        turns=turns,
        thresholds=th,
        notes=notes,
        warnings=warnings,
        stop_reason=stop_reason,
        issue=issue,
        drift=drift,
    )
