"""The eval suite contract (``kind: suite``): a versioned dataset of cases, as code (DESIGN §7).

A suite names the agent spec (or a ``baseline`` and a ``candidate``), the providers, the repeats and
the default thresholds; each case gives its input, why it exists, and what a good run looks like.
Reading a suite file (its ``case_files``, the paths it names) is ``contracts/loaded_suite.py``.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import Field, field_validator, model_validator

from portagent.contracts._base import Contract, repeated
from portagent.contracts.policy import Environment
from portagent.contracts.providers import DEFAULT_COMPARISON, ProviderName
from portagent.contracts.schema_faults import schema_problem
from portagent.contracts.status import RunStatus

SUITE_SCHEMA_VERSION: Final = 1

Score = Annotated[float, Field(ge=0.0, le=1.0)]
"""A score or threshold in [0, 1]."""

TrajectoryMode = Literal["strict", "in_order", "any_order", "subset", "superset"]
"""How the called tools are compared with the reference sequence (see ``portagent.evals.trajectory``)."""

ArgsMode = Literal["exact", "subset", "ignore"]
"""How a call's arguments are compared with the expected ones."""

Approver = Literal["auto-approve", "auto-deny", "scripted", "defer"]
"""Who decides approval cards during an eval run (``interactive`` makes no sense unattended)."""

CASE_ID_RE = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"


class Thresholds(Contract):
    """Minimum scores a run needs on each factor (inclusive: a score equal to its threshold passes).

    Defaults follow the design source: final 0.80, trajectory 0.90, trace 0.95. ``args`` and
    ``approval`` default to 1.0 because a wrong argument or a wrong approval flow is a correctness
    error, not a matter of degree (the source gates approval with ``== 1.0``).
    """

    final: Score = 0.80
    """Share of ``final_must_contain`` fragments found in the final output."""
    trajectory: Score = 0.90
    """Trajectory score (mode base minus extra/forbidden penalties)."""
    args: Score = 1.0
    """Share of tools with expected arguments whose arguments matched."""
    approval: Score = 1.0
    """Approval-flow score (1.0 right, 0.8 unnecessary, 0.5 unresolved, 0.0 missing)."""
    trace: Score = 0.95
    """Trace completeness (1 − 0.20 per failed check)."""

    def merged(self, override: Thresholds | None) -> Thresholds:
        """These thresholds with the fields *explicitly set* in ``override`` replacing them."""
        if override is None:
            return self
        return self.model_copy(update={k: getattr(override, k) for k in override.model_fields_set})


class TrajectoryExpectation(Contract):
    """How the sequence of called tools is judged."""

    mode: TrajectoryMode = "in_order"
    """``strict``: identical sequence; ``in_order``: reference as an ordered subsequence;
    ``any_order``: reference as a multiset; ``superset``: every reference tool present, extras free;
    ``subset``: no tool outside the reference."""
    reference: list[str] | None = None
    """Explicit reference sequence; defaults to ``required_tools`` in their listed order."""


class ArgsExpectation(Contract):
    """Expected arguments per tool."""

    mode: ArgsMode = "subset"
    """``exact``: a call's arguments equal the expected object; ``subset``: every expected key (nested
    objects recursively) has the expected value, other keys are free; ``ignore``: not scored."""
    expected: dict[str, dict[str, Any]] = {}
    """Tool name → expected arguments. A tool scores when *at least one* of its calls matches (a
    call rejected for invalid arguments and then retried correctly is fine)."""


GraderType = Literal["rubric", "judge", "pairwise"]
"""How a grader judges an answer no rule can check (see ``portagent.evals.graders``)."""

RUBRIC_ANCHORS: Final = (0.0, 0.5, 1.0)
"""The scores a rubric grader may give: its three anchors."""


class CalibrationExample(Contract):
    """One answer a human has labelled: the judge's label on it is compared with the human's."""

    input: Annotated[str, Field(min_length=1)]
    """The task the agent was given."""
    answer: Annotated[str, Field(min_length=1)]
    """The answer that was judged."""
    label: str
    """The human's label: one of the grader's ``labels`` (judge), or an anchor ``0`` / ``0.5`` / ``1``
    (rubric)."""
    note: str = ""
    """Why the human chose it (kept for reviewers; never sent to the judge)."""

    @field_validator("label", mode="before")
    @classmethod
    def _label_text(cls, v: Any) -> Any:
        # YAML reads an anchor label ``0.5`` or ``1`` as a number; the label is its text
        if isinstance(v, bool):
            return v
        if isinstance(v, int | float):
            return anchor_label(float(v))
        return v


def anchor_label(score: float) -> str:
    """The label of a rubric anchor: ``0``, ``0.5`` or ``1``."""
    return "0.5" if score == 0.5 else str(int(score)) if score in (0.0, 1.0) else repr(score)


class GraderSpec(Contract):
    """A grader for answers no deterministic check fits (design source ch. 10, R10.14): a portagent
    agent (``judge``) reads the case's task and the agent's answer and returns structured output
    ``{label, score, explanation}``. It only gates the run (``gate: true``) when its agreement with
    human labels (``calibration``) reaches the declared ``min_kappa`` (and ``min_accuracy``)."""

    name: Annotated[str, Field(pattern=CASE_ID_RE)]
    """Stable name; reports, cassettes and ``expect.graders`` refer to it."""
    type: GraderType
    """``judge``: a label from ``labels``; ``rubric``: a score at an anchor (0 / 0.5 / 1) against
    ``criteria``; ``pairwise``: which of two answers (two providers' or two versions') is better, asked
    blind and in both orders to measure position bias."""
    judge: Annotated[str, Field(min_length=1)]
    """Path (relative to the suite file) of the judge's agent spec; its ``output_schema`` must ask for
    ``label``, ``score`` and ``explanation``."""
    provider: ProviderName = "openai"
    """Provider the judge runs on (any; judge runs are portagent runs: recorded, replayed, costed)."""
    instructions: str = ""
    """What to judge (judge, pairwise), or extra guidance (rubric)."""
    labels: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=2)] = ["pass", "fail"]
    """The labels a ``judge`` grader may give."""
    pass_labels: list[str] = ["pass"]
    """Labels that pass (``judge``)."""
    criteria: list[Annotated[str, Field(min_length=1)]] = []
    """What a full answer does (``rubric``)."""
    anchors: dict[float, Annotated[str, Field(min_length=1)]] = {}
    """``rubric``: what an answer scoring 0, 0.5 and 1 looks like (all three)."""
    threshold: Score = 1.0
    """``rubric``: the least score that passes (an anchor)."""
    compare: Literal["versions", "providers"] = "versions"
    """``pairwise``: compare the baseline's and the candidate's answers (``versions``) or the first two
    providers' (``providers``), on the same case and repeat."""
    gate: bool = False
    """The grader's verdict joins the run's gate. Allowed only with ``calibration`` and ``min_kappa``;
    an eval whose judge agrees less with the humans than declared is refused."""
    min_kappa: Annotated[float | None, Field(ge=-1.0, le=1.0)] = None
    """Least Cohen's kappa (judge vs human labels) for the grader to gate."""
    min_accuracy: Score | None = None
    """Least accuracy (share of labels equal to the human's) for the grader to gate."""
    calibration: list[CalibrationExample] = []
    """Human-labelled answers (``eval --calibrate`` reports agreement on them)."""
    emulator_script: str | None = None
    """Emulator script (relative to the suite file) scripting the judge for ``--emulator`` and
    ``record --emulator``; default: the suite's."""

    @field_validator("anchors")
    @classmethod
    def _three_anchors(cls, v: dict[float, str]) -> dict[float, str]:
        if v and set(v) != set(RUBRIC_ANCHORS):
            raise ValueError(f"anchors must be exactly 0, 0.5 and 1 (got {sorted(v)})")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> GraderSpec:
        if self.type == "rubric":
            if not self.anchors:
                raise ValueError("a rubric grader needs anchors at 0, 0.5 and 1")
            if not self.criteria:
                raise ValueError("a rubric grader needs criteria")
            if self.threshold not in RUBRIC_ANCHORS:
                raise ValueError(f"threshold {self.threshold:g} is not an anchor (0, 0.5 or 1)")
        elif not self.instructions.strip():
            raise ValueError(f"a {self.type} grader needs instructions (what the judge decides)")
        if self.type == "judge":
            if len(set(self.labels)) != len(self.labels):
                raise ValueError(f"labels listed twice: {self.labels}")
            bad = [x for x in self.pass_labels if x not in self.labels]
            if bad or not self.pass_labels:
                raise ValueError(f"pass_labels must be some of labels {self.labels} (got {self.pass_labels})")
        allowed = self.label_set
        wrong = sorted({c.label for c in self.calibration if c.label not in allowed})
        if wrong:
            raise ValueError(f"calibration labels {wrong} are not among {allowed}")
        if self.type == "pairwise" and (self.gate or self.calibration):
            raise ValueError("a pairwise grader is reported, never gating, and takes no calibration")
        if self.gate and (self.min_kappa is None or not self.calibration):
            raise ValueError(
                "gate: true needs calibration (human-labelled answers) and min_kappa: a judge is not "
                "treated as ground truth until its agreement with humans is measured"
            )
        return self

    @property
    def label_set(self) -> list[str]:
        """The labels this grader's verdicts (and human labels) take."""
        if self.type == "rubric":
            return [anchor_label(a) for a in RUBRIC_ANCHORS]
        if self.type == "pairwise":
            return ["1", "2", "tie"]
        return list(self.labels)


class Expectations(Contract):
    """What a good run of one case looks like. Every limit is inclusive."""

    final_must_contain: list[Annotated[str, Field(min_length=1)]] = []
    """Fragments the final output must contain — case-insensitive, after Unicode NFC normalisation
    (``año`` typed either way matches). A structured output is searched in its canonical JSON."""
    output_schema: dict[str, Any] | None = None
    """JSON Schema (2020-12) the final output must satisfy (a JSON string is parsed first)."""
    required_tools: list[str] = []
    """Tools that must be called (also the default trajectory reference, in this order)."""
    forbidden_tools: list[str] = []
    """Tools that must never be called; calling one costs 0.50 of trajectory, executing one is a
    permission violation."""
    must_not_execute: list[str] = []
    """Tools the agent may *call* but that must never *run* here (the policy has to stop them);
    executing one is a permission violation. E.g. an email to an outside address: v1 calls and is
    denied, a candidate whose policy lets it through is caught whatever its final answer says."""
    route: str | None = None
    """Agent expected to produce the final output (the ``to_agent`` of the last ``handoff``)."""
    trajectory: TrajectoryExpectation = TrajectoryExpectation()
    """Trajectory mode and optional explicit reference."""
    args: ArgsExpectation = ArgsExpectation()
    """Argument matching."""
    approval: bool | None = None
    """Whether an approval must be requested (True), must not be (False), or is not judged (None)."""
    status: RunStatus | None = "completed"
    """Expected final run status (``budget_exhausted`` for a budget-stop case); None: not judged."""
    max_cost_usd: Annotated[float | None, Field(ge=0)] = None
    """Cost limit (model + tool) for one run."""
    max_latency_ms: Annotated[float | None, Field(gt=0)] = None
    """Latency limit for one run."""
    max_turns: Annotated[int | None, Field(ge=1)] = None
    """Limit on model calls (``model.call`` events)."""
    graders: list[Annotated[str, Field(pattern=CASE_ID_RE)] | GraderSpec] = []
    """Graders of this case's answers: names of the suite's ``graders``, or a grader defined here
    (e.g. a rubric with this case's criteria)."""

    @field_validator("output_schema")
    @classmethod
    def _valid_schema(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        fault = None if v is None else schema_problem(v)
        if fault is not None:
            raise ValueError(f"not a valid JSON Schema: {fault.message}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> Expectations:
        both = sorted(set(self.required_tools) & set(self.forbidden_tools))
        if both:
            raise ValueError(f"tools both required and forbidden: {both}")
        ref = self.trajectory.reference
        if ref is not None:
            missing = [t for t in self.required_tools if t not in ref]
            if missing:
                raise ValueError(f"required tools missing from trajectory.reference: {missing}")
            bad = sorted(set(ref) & set(self.forbidden_tools))
            if bad:
                raise ValueError(f"forbidden tools in trajectory.reference: {bad}")
        bad_args = sorted(set(self.args.expected) & set(self.forbidden_tools))
        if bad_args:
            raise ValueError(f"expected arguments given for forbidden tools: {bad_args}")
        return self

    @property
    def reference(self) -> list[str]:
        """The trajectory reference: the explicit one, else ``required_tools``."""
        return list(
            self.trajectory.reference if self.trajectory.reference is not None else self.required_tools
        )


class ScriptedApproval(Contract):
    """One approval decision the ``scripted`` approver gives, matched by tool and ``args_hash``
    (call order only as a fallback when ``args_hash`` is absent)."""

    tool: Annotated[str, Field(min_length=1)]
    """Tool whose card this decides."""
    args_hash: Annotated[str | None, Field(pattern=r"^[0-9a-f]{12}$")] = None
    """``args_hash`` of the proposed call; absent: the next card for this tool, in call order."""
    decision: Literal["approve", "reject", "edit"]
    """The reviewer's decision."""
    args: dict[str, Any] | None = None
    """Edited arguments (required for, and only for, ``edit``); re-validated before they run."""
    note: str = ""
    """Reviewer's note, kept on the card."""

    @model_validator(mode="after")
    def _edit_args(self) -> ScriptedApproval:
        if (self.decision == "edit") != (self.args is not None):
            raise ValueError("'args' is required for decision 'edit' and not allowed otherwise")
        return self


class RunContext(Contract):
    """Identity and context a case's runs are made with (policy rules and risk scoring read them)."""

    env: Environment = "dev"
    """Environment."""
    actor: str = "user"
    """Who asks."""
    scopes: list[str] = []
    """Actor scopes."""
    confidence: Annotated[float | None, Field(ge=0.0, le=1.0)] = None
    """Confidence for risk scoring."""
    evidence: list[str] = []
    """Evidence items for risk scoring and approval cards."""
    values: dict[str, Any] = {}
    """Other context values read by tool preconditions."""


class ThreadTurn(Contract):
    """An earlier turn of the session thread a case continues (issue 16, docs/sessions.md)."""

    role: Literal["user", "assistant"]
    """Who spoke."""
    content: Annotated[str, Field(min_length=1)]
    """What was said."""


class ContextGate(Contract):
    """The design source's ch. 04 gate, as a suite option (``context_gate:``; docs/context.md "In an eval"):
    the candidate must send at least ``min_token_saving`` fewer input tokens than the baseline, over the same
    cases on each provider, **and** pass at least as many runs (no lower continuation)."""

    min_token_saving: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.35
    """Smallest share of the baseline's input tokens the candidate must save (0.35: 35 % fewer)."""


class Case(Contract):
    """One eval case."""

    case_id: Annotated[str, Field(pattern=CASE_ID_RE)]
    """Stable id (letters, digits, ``_.-``); reports and cassettes are keyed by it."""
    input: (
        Annotated[str, Field(min_length=1)]
        | Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]
    )
    """The user message, or several for a multi-turn case."""
    why_it_exists: Annotated[str, Field(min_length=1)]
    """The failure this case protects against (mandatory: a case nobody can explain gets deleted)."""
    tags: list[str] = []
    """Free labels (``read-only``, ``approval``, ``regression`` …)."""
    expect: Expectations = Expectations()
    """What a good run looks like."""
    thresholds: Thresholds | None = None
    """Per-case thresholds; only the fields given here replace the suite's."""
    approvals: list[ScriptedApproval] = []
    """Decisions for the ``scripted`` approver."""
    context: RunContext = RunContext()
    """Run identity and context."""
    emulator_script: str | None = None
    """Emulator script for this case (relative to the file that declares the case); overrides the
    suite's."""
    thread: list[ThreadTurn] = []
    """Earlier turns of a session thread the case continues: sent before ``input`` as ``run --session``
    sends a thread (framed, the agent's ``max_context_tokens`` applied; ``runtime/sessions.thread_request``)."""

    @property
    def messages(self) -> list[str]:
        return [self.input] if isinstance(self.input, str) else list(self.input)

    def tool_references(self) -> list[tuple[tuple[str | int, ...], str]]:
        """Every tool name this case gives, with the field path (inside the case) that gives it:
        ``expect.required_tools``, ``expect.forbidden_tools``, ``expect.must_not_execute``,
        ``expect.trajectory.reference``, the keys of ``expect.args.expected`` and ``approvals[].tool``.
        ``load_suite`` checks each against the tools of the suite's agents (``contracts/suite_tools.py``);
        a field added here that names a tool must be listed too, or a misspelt name in it is never caught."""
        e = self.expect
        out: list[tuple[tuple[str | int, ...], str]] = []
        for field, names in (
            ("required_tools", e.required_tools),
            ("forbidden_tools", e.forbidden_tools),
            ("must_not_execute", e.must_not_execute),
        ):
            out += [(("expect", field, i), name) for i, name in enumerate(names)]
        out += [
            (("expect", "trajectory", "reference", i), n) for i, n in enumerate(e.trajectory.reference or [])
        ]
        out += [(("expect", "args", "expected", name), name) for name in e.args.expected]
        out += [(("approvals", i, "tool"), a.tool) for i, a in enumerate(self.approvals)]
        return out


class ReviewCost(Contract):
    """What a human approval costs (design source ch. 10): it joins the model cost in cost per
    accepted task, ``Σ(model cost + approvals × minutes_per_approval / 60 × rate_per_hour) / accepted``."""

    minutes_per_approval: Annotated[float, Field(ge=0)]
    """Reviewer minutes per approval card."""
    rate_per_hour: Annotated[float, Field(ge=0)]
    """Reviewer cost per hour, in USD (the unit of every cost figure)."""

    def per_approval_usd(self) -> float:
        """Cost of one approval card."""
        return self.minutes_per_approval / 60 * self.rate_per_hour


class ProviderLimits(Contract):
    """How hard a ``--live`` eval may drive one provider (``portagent.runtime.limits``). Every field is
    optional; unset means no limit of that kind."""

    max_concurrency: Annotated[int | None, Field(ge=1)] = None
    """Runs of this provider in flight at once (also caps its worker processes)."""
    requests_per_minute: Annotated[float | None, Field(gt=0)] = None
    """Model requests per minute (a run is admitted for the requests its provider's runs have needed on
    average; the difference is settled after it ends; and each request waits for its process's share of
    the rate, ``runtime.request_limits``)."""
    tokens_per_minute: Annotated[float | None, Field(gt=0)] = None
    """Tokens (input + output) per minute, admitted the same way."""
    burst_s: Annotated[float, Field(gt=0)] = 60.0
    """How much of the rate may go at once, in seconds of it (default 60: a minute's worth, as vendors
    count); smaller spreads the requests out."""
    max_attempts: Annotated[int, Field(ge=1)] = 3
    """Attempts of a run that fails with a retryable provider error (429, 5xx, overloaded) and made no
    effect (only ``read``/``compute`` tools called); 1: never retried."""
    backoff_base_s: Annotated[float, Field(gt=0)] = 1.0
    """First backoff when the provider gives no ``Retry-After``; doubles per attempt."""
    backoff_cap_s: Annotated[float, Field(gt=0)] = 60.0
    """Largest backoff (a ``Retry-After`` is honoured up to ``max_retry_after_s``)."""
    max_retry_after_s: Annotated[float, Field(gt=0)] = 600.0
    """Longest ``Retry-After`` honoured as given; a longer one is capped to this."""


class Suite(Contract):
    """A versioned eval dataset: which agent(s), on which providers, how often, judged how."""

    kind: Literal["suite"] = "suite"
    """File kind marker."""
    schema_version: Literal[1] = SUITE_SCHEMA_VERSION
    """Version of this file format."""
    suite_id: Annotated[str, Field(pattern=CASE_ID_RE)]
    """Stable suite id."""
    dataset_version: Annotated[str, Field(min_length=1)]
    """Version of the cases; results are only compared on the same version."""
    owner: Annotated[str, Field(min_length=1)]
    """Team or person answering for the suite."""
    description: str = ""
    """What the suite covers."""
    agent: str | None = None
    """Path (relative to this file) of the agent spec under test."""
    baseline: str | None = None
    """Path of the baseline agent spec (with ``candidate``, instead of ``agent``)."""
    candidate: str | None = None
    """Path of the candidate agent spec."""
    providers: Annotated[list[ProviderName], Field(min_length=1)] = list(DEFAULT_COMPARISON)
    """Providers to run on (default: openai, claude, adk; ``anthropic`` and ``langgraph`` when named)."""
    repeats: Annotated[int, Field(ge=1)] = 1
    """Runs per case × provider × agent (≥ 2 to measure flakiness)."""
    thresholds: Thresholds = Thresholds()
    """Default thresholds for every case."""
    emulator_script: str | None = None
    """Emulator script (relative to this file) used to record the suite's cassettes."""
    approver: Approver = "scripted"
    """Approver used for every case (``scripted`` reads each case's ``approvals``)."""
    review: ReviewCost | None = None
    """Human-review cost per approval card (``{minutes_per_approval: 3, rate_per_hour: 60}``); unset:
    reviews cost nothing in cost per accepted task."""
    graders: list[GraderSpec] = []
    """Graders the cases name in ``expect.graders`` (rubric, judge, pairwise), with their calibration."""
    limits: dict[ProviderName, ProviderLimits] = {}
    """Per-provider concurrency, rate limits and retries for ``--live`` (``eval --limit`` overrides)."""
    cases: list[Case] = []
    """Inline cases."""
    case_files: list[str] = []
    """Files (relative to this file) holding one case, or a list of cases."""
    context_gate: ContextGate | None = None
    """Gate the candidate's context tokens against the baseline's (needs ``baseline`` and ``candidate``)."""

    @field_validator("providers")
    @classmethod
    def _unique_providers(cls, v: list[ProviderName]) -> list[ProviderName]:
        dup = repeated(v)
        if dup:
            raise ValueError(f"providers listed twice: {dup}")
        return v

    @model_validator(mode="after")
    def _agents_and_cases(self) -> Suite:
        pair = (self.baseline is not None, self.candidate is not None)
        if self.agent is not None and any(pair):
            raise ValueError("give either 'agent' or 'baseline' + 'candidate', not both")
        if self.agent is None and pair != (True, True):
            raise ValueError("give 'agent', or both 'baseline' and 'candidate'")
        if self.context_gate is not None and self.agent is not None:
            raise ValueError(
                "context_gate compares a candidate with a baseline: give 'baseline' and 'candidate'"
            )
        if not self.cases and not self.case_files:
            raise ValueError("a suite needs 'cases' or 'case_files'")
        ids = [c.case_id for c in self.cases]
        dup = repeated(ids)
        if dup:
            raise ValueError(f"duplicate case_id: {dup}")
        names = [g.name for g in self.graders]
        dup = repeated(names)
        if dup:
            raise ValueError(f"graders named twice: {dup}")
        return self

    def graders_of(self, case: Case) -> list[GraderSpec]:
        """The graders of ``case``: its inline ones and the suite's it names (``load_suite`` has checked
        every name)."""
        by_name = {g.name: g for g in self.graders}
        return [
            by_name[g] if isinstance(g, str) else g
            for g in case.expect.graders
            if not isinstance(g, str) or g in by_name
        ]

    @property
    def agent_refs(self) -> dict[str, str]:
        """Role → spec path as written: ``{"agent": …}`` or ``{"baseline": …, "candidate": …}``."""
        if self.agent is not None:
            return {"agent": self.agent}
        assert self.baseline is not None and self.candidate is not None
        return {"baseline": self.baseline, "candidate": self.candidate}
