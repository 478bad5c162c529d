"""RouterSpec: an explicit router over a capability registry (design source ch. 09).

A router decides *before* anything runs which route serves a request — a local tool, an MCP tool, a
remote A2A agent or a human reviewer — and leaves a receipt (``RouteDecision``): the chosen route, its
score, the reason, and every candidate with its gate and reasons. The decision itself lives in
``portagent.tools.router``; these are the data it reads and writes.

Effects use portagent's one vocabulary (``contracts.tool.Effect``). The design source's five effects map
onto it as ``read → read``, ``draft → prepare_change``, ``write → reversible_write``,
``send → external_effect``, ``publish → privileged_operation``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from portagent.contracts._base import Contract, repeated
from portagent.contracts.tool import EFFECTS, SEMVER_RE, Effect

RouteKind = Literal["local_tool", "mcp_tool", "a2a_agent", "human_review"]
"""What serves a route: a tool of this runtime, a tool of an MCP server, a remote A2A agent, a person."""
GateOutcome = Literal["run", "review", "stop"]
"""A candidate's gate (and a decision): run it, run it after a human approves, or never."""
Environment = Literal["dev", "staging", "prod"]
"""Where the request runs; effects that change the world need review in ``prod``."""
LatencyGate = Literal["advisory", "review", "stop"]
"""What a route whose p95 latency exceeds the request's budget gets (the design source only noted it)."""

ROUTE_ID_RE = r"^[A-Za-z][A-Za-z0-9_.:-]{0,127}$"

DEFAULT_EFFECT_RISK: dict[Effect, float] = {
    "read": 0.05,
    "compute": 0.10,
    "prepare_change": 0.15,
    "reversible_write": 0.45,
    "external_effect": 0.65,
    "privileged_operation": 0.80,
}
"""Operational risk per effect (the ``K`` signal): the design source's table, with ``compute`` between
``read`` and ``draft``."""


class _Finite(Contract):
    """A router input: every number finite. YAML's ``.inf``/``.nan`` pass ``ge=0`` checks but the decimal
    score cannot use them (``route`` failed with a traceback where ``validate`` had said ok)."""

    model_config = ConfigDict(allow_inf_nan=False)


def effect_rank(effect: Effect) -> int:
    """1 for ``read`` … 6 for ``privileged_operation``: the order of ``contracts.tool.EFFECTS``."""
    return EFFECTS.index(effect) + 1


class RouteWeights(_Finite):
    """``R = α·S + β·Q + γ·A − δ·L − ε·C − ζ·K`` (design source ch. 09), rounded half-up to ``places``.

    The defaults are the book's code (0.32/0.25/0.16/0.10/0.08/0.09, 3 places); its worked example uses
    0.30/0.25/0.15/0.10/0.10/0.10 and 2 places."""

    semantic: Annotated[float, Field(ge=0, le=10)] = 0.32
    """α: weight of the semantic fit (share of the request's tags the route offers)."""
    quality: Annotated[float, Field(ge=0, le=10)] = 0.25
    """β: weight of the route's expected quality."""
    availability: Annotated[float, Field(ge=0, le=10)] = 0.16
    """γ: weight of its availability."""
    latency: Annotated[float, Field(ge=0, le=10)] = 0.10
    """δ: penalty weight of its p95 latency, normalised by the request's latency budget."""
    cost: Annotated[float, Field(ge=0, le=10)] = 0.08
    """ε: penalty weight of its cost, normalised by the request's cost budget."""
    risk: Annotated[float, Field(ge=0, le=10)] = 0.09
    """ζ: penalty weight of its effect's operational risk."""
    places: Annotated[int, Field(ge=0, le=6)] = 3
    """Decimal places of a score (half-up: 0.455 → 0.46, as the book prints, not Python's 0.45)."""


class Capability(_Finite):
    """One entry of the capability registry: a route with what it costs, risks and needs."""

    route_id: Annotated[str, Field(pattern=ROUTE_ID_RE)]
    """Unique id, e.g. ``mcp.biblioteca.search_docs``."""
    kind: RouteKind
    """local_tool / mcp_tool / a2a_agent / human_review."""
    target: str = ""
    """What the route invokes: a ToolSpec name, ``server.tool`` of an MCP source, an A2A agent's card
    URL and skill (``https://host/#skill``), a review queue. Informative; the router never calls it."""
    tags: list[Annotated[str, Field(min_length=1)]] = []
    """What the route is good for; the semantic fit is the share of a request's tags found here."""
    owner: Annotated[str, Field(min_length=1)]
    """Who answers for the route."""
    version: Annotated[str, Field(pattern=SEMVER_RE)] = "1.0.0"
    """Version of the capability (recorded with every decision)."""
    input_contract: str = ""
    """Name or reference of the input schema the route accepts."""
    output_contract: str = ""
    """Name or reference of the output schema it returns."""
    p95_latency_ms: Annotated[float, Field(ge=0)]
    """Observed p95 latency."""
    cost_usd: Annotated[float, Field(ge=0)] = 0.0
    """Expected cost of one use."""
    quality: Annotated[float, Field(ge=0, le=1)]
    """Expected (historical) quality, 0–1."""
    availability: Annotated[float, Field(ge=0, le=1)] = 1.0
    """Availability, 0–1."""
    required_scope: list[Annotated[str, Field(min_length=1)]] = []
    """Scopes the caller must hold."""
    effect: Effect
    """The route's effect on the world (its least-privilege class)."""


class RouteRequest(_Finite):
    """What is asked of the router: ``q`` and the budget ``B`` of ``o(q, s, C, P, B)``."""

    request_id: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")]
    """The request (letters, digits, ``_ . -``: it names the request's folder under ``--out``)."""
    text: str = ""
    """The request as a person wrote it (kept in the receipt; scoring uses ``required_tags``)."""
    required_tags: list[Annotated[str, Field(min_length=1)]] = []
    """What the request needs; compared with each route's ``tags``."""
    effect: Effect
    """The effect the request needs; a route of lower effect cannot serve it, one of higher effect must
    not (least privilege)."""
    environment: Environment = "dev"
    """dev / staging / prod."""
    max_latency_ms: Annotated[float, Field(gt=0)]
    """Latency budget."""
    max_cost_usd: Annotated[float, Field(ge=0)]
    """Cost budget."""
    user_scope: list[Annotated[str, Field(min_length=1)]] = []
    """Scopes the caller holds."""
    args: dict[str, Any] = {}
    """The arguments the chosen route is called with when the router executes it (``route --execute``)."""


class RouterSpec(_Finite):
    """``kind: router``: a capability registry, the score's weights and the gates' settings."""

    kind: Literal["router"] = "router"
    """Spec kind."""
    schema_version: Literal[1] = 1
    """Spec format version."""
    name: Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")]
    """Router name (the ``agent`` of its trace events)."""
    version: Annotated[str, Field(pattern=SEMVER_RE)] = "1.0.0"
    """Router version."""
    description: str = ""
    """What it routes."""
    weights: RouteWeights = RouteWeights()
    """Score weights and rounding."""
    effect_risk: dict[Effect, Annotated[float, Field(ge=0, le=1)]] = DEFAULT_EFFECT_RISK
    """Operational risk per effect (missing effects take the default table's value)."""
    min_semantic: Annotated[float, Field(ge=0, le=1)] = 0.5
    """Below this semantic fit a candidate's reasons say so (advisory, as in the design source)."""
    latency_gate: LatencyGate = "review"
    """What a route over the request's latency budget gets: ``review`` (default), ``stop``, or
    ``advisory`` (only a reason, as the design source's code does)."""
    review_in_prod: list[Effect] = ["reversible_write", "external_effect", "privileged_operation"]
    """Effects that need a human's approval in ``prod``."""
    review_a2a: list[Effect] = ["external_effect", "privileged_operation"]
    """Effects that need approval on an ``a2a_agent`` route in any environment."""
    registry: Annotated[list[Capability], Field(min_length=1)]
    """The candidates."""
    tool_files: list[str] = []
    """Tools files (relative to this spec) whose ToolSpecs the ``local_tool`` routes name as ``target``:
    what ``portagent route --execute`` runs through the gateway."""
    policy: str | None = None
    """Permission policy file (relative to this spec) for executed routes; default: the effect-class
    defaults. A route whose gate is ``review`` always needs an approval, whatever the policy allows."""

    @field_validator("effect_risk")
    @classmethod
    def _fill_risk(cls, v: dict[Effect, float]) -> dict[Effect, float]:
        return {**DEFAULT_EFFECT_RISK, **v}

    @model_validator(mode="after")
    def _unique_routes(self) -> RouterSpec:
        seen: set[str] = set()
        for c in self.registry:
            if c.route_id in seen:
                raise ValueError(f"registry: route_id {c.route_id!r} appears twice; route ids are unique")
            seen.add(c.route_id)
        return self


class RouteRequests(Contract):
    """A file of requests for ``portagent route`` (``requests:`` list, no ``kind:`` needed)."""

    requests: Annotated[list[RouteRequest], Field(min_length=1)]
    """The requests, decided in order."""

    @model_validator(mode="after")
    def _unique_ids(self) -> RouteRequests:
        ids = [r.request_id for r in self.requests]
        dup = repeated(ids)
        if dup:
            raise ValueError(f"request_id must be unique; repeated: {', '.join(dup)}")
        return self


class RouteAlternative(Contract):
    """One candidate as the router judged it."""

    route_id: str
    """The route."""
    kind: RouteKind
    """Its kind."""
    effect: Effect
    """Its effect."""
    version: str = "1.0.0"
    """The capability's version."""
    score: float
    """Its score."""
    gate: GateOutcome
    """run / review / stop."""
    reasons: list[str]
    """Why (every reason found, in gate order; ``valid candidate`` when none)."""


class RouteDecision(Contract):
    """The receipt of one routing decision (the design source's ``RouteDecision``)."""

    request_id: str
    """The request."""
    decision: GateOutcome
    """run / review / stop."""
    selected_route: str | None
    """The chosen route (None when the decision is ``stop``)."""
    selected_kind: RouteKind | None
    """Its kind."""
    selected_effect: Effect | None = None
    """Its effect."""
    score: float | None
    """Its score (None when ``stop``)."""
    reason: str
    """Why this decision."""
    alternatives: list[RouteAlternative]
    """Every candidate, best score first (the book kept three and lost the fourth)."""
    fallbacks: list[str] = []
    """Routes to try, in order, if the chosen one fails before producing a useful result: only passing
    candidates whose effect is equal to or lower than the chosen route's."""
    router: str = ""
    """Router name."""
    router_version: str = ""
    """Router version."""
