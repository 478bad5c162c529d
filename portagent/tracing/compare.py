"""Comparing normalized traces across providers and versions.

``VOLATILE_FIELDS`` is the one list of fields that legitimately differ between two runs of the same
script: ids, timestamps, latencies, the repeat number, vendor ids and anything under
``provider_details``, wherever they are nested (an approval card, a tool's output, a final output
quoting it). ``normalize`` rewrites exactly those — an id as its kind and order of first appearance, so
a different *structure* of ids still shows — and ``equivalent`` compares what must match across
providers (tool sequence, arguments, results, permission decisions, approvals, route, final output,
status) and reports each difference readably. A test mutates every other field and checks that the
traces then differ.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

ID_FIELDS: frozenset[str] = frozenset(
    {
        "run_id",
        "trace_id",
        "span_id",
        "parent_span_id",
        "response_id",
        "approval_id",
        "effect_id",
    }
)
"""Per-run ids: drawn afresh by every run, so only *which* id a value is matters (the same approval
resolved, the same effect reused), never its text."""

TIMING_FIELDS: frozenset[str] = frozenset(
    {
        "ts",
        "created_at",
        "expires_at",
        "decided_at",
        "latency_ms",
        "duration_ms",
        "cold_start",  # timing provenance: whether the process had run this provider before
        "repeat",  # which repeat of the case this run was (r0, r1 …)
    }
)
"""Per-run clock readings and run counters: only whether they are set matters."""

VOLATILE_FIELDS: frozenset[str] = (ID_FIELDS - {"effect_id"}) | TIMING_FIELDS | {"provider_details"}
"""The fields that legitimately differ between two runs of the same script (documented in
docs/traces.md). ``normalize`` first rewrites every id and timing at any depth (an approval card, a
tool's output, a final output quoting it) — an id as its kind and order of first appearance
(``<approval_id#1>``), so that which id is which still counts while its text does not; a timing as
``<ts>``; ``provider_details`` (vendor mechanics) goes — then removes these from the events' top
level, the trace's own bookkeeping (which run, span and time an event belongs to, which the event
order already carries). ``effect_id`` is kept, rewritten: whether a call made an effect and which
one a duplicate call reused is behaviour."""

# Per-run values inside free text (a final output quoting a tool result, a vendor's hand-back text).
_ID_IN_TEXT = re.compile(r"\b(run|apr|eff)_[0-9a-f]{12,32}\b")
_ID_PREFIX_KIND = {"run": "run_id", "apr": "approval_id", "eff": "effect_id"}
_AGENT_ID_IN_TEXT = re.compile(r"\b(agentId: )([0-9a-f]{8,})\b")  # Claude Code's subagent hand-back
_TIMING_IN_TEXT = re.compile(r"\b(duration_ms|latency_ms): \d+(?:\.\d+)?")
_CARD_SCOPE = "scope"  # an approval card's scope names the run (…:openai:r0)

PROVIDER_FIELDS: frozenset[str] = frozenset(
    {"provider", "sdk", "sdk_version", "model", "source", "recorded_source", "mode"}
)
"""Differ by construction between providers; ``equivalent(..., across_providers=True)`` ignores them."""

# What must match across providers: events carrying behaviour, not vendor mechanics.
BEHAVIOUR_EVENTS: tuple[str, ...] = (
    "run.started",
    "tool.call",
    "permission.decision",
    "approval.requested",
    "approval.resolved",
    "tool.result",
    "handoff",
    "route.decision",
    "budget.exceeded",
    "run.completed",
)
# Token counts and cost depend on each vendor's accounting; model calls are compared by count only.
PROVIDER_DEPENDENT: frozenset[str] = frozenset(
    {
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "reasoning_tokens",
        "cost_usd",
        "cost_source",
        "model_calls",
        "spec_hash",
        "policy_hash",
        "card",
    }
)


def _as_dict(event: dict[str, Any] | BaseModel) -> dict[str, Any]:
    if isinstance(event, dict):
        return dict(event)
    return event.model_dump(mode="json")


class _Ids:
    """The per-run ids of one trace, each mapped to its kind and order of first appearance."""

    def __init__(self) -> None:
        self.tokens: dict[str, str] = {}
        self._counts: dict[str, int] = {}

    def add(self, kind: str, value: Any) -> None:
        if not isinstance(value, str) or not value or value in self.tokens:
            return
        self._counts[kind] = self._counts.get(kind, 0) + 1
        self.tokens[value] = f"<{kind}#{self._counts[kind]}>"

    def collect(self, value: Any, key: str | None = None, parent: str | None = None) -> None:
        if isinstance(value, dict):
            for k in sorted(value):
                if k != "provider_details":
                    self.collect(value[k], k, key)
        elif isinstance(value, list):
            for v in value:
                self.collect(v, key, parent)
        elif isinstance(value, str):
            if key in ID_FIELDS:
                self.add(key, value)
            elif key == _CARD_SCOPE and parent == "card":
                self.add("scope", value)
            for m in _ID_IN_TEXT.finditer(value):
                self.add(_ID_PREFIX_KIND[m.group(1)], m.group(0))
            for m in _AGENT_ID_IN_TEXT.finditer(value):
                self.add("agent_id", m.group(2))

    def rewrite(self, value: Any, key: str | None = None, parent: str | None = None) -> Any:
        if isinstance(value, dict):
            return {k: self.rewrite(v, k, key) for k, v in value.items() if k != "provider_details"}
        if isinstance(value, list):
            return [self.rewrite(v, key, parent) for v in value]
        if value is None:  # an id or timing that is not set stays distinct from one that is
            return value
        if key in TIMING_FIELDS:
            return f"<{key}>"
        if not isinstance(value, str):
            return value
        if value in self.tokens and (key in ID_FIELDS or (key == _CARD_SCOPE and parent == "card")):
            return self.tokens[value]
        return self._text(value)

    def _text(self, text: str) -> str:
        text = _ID_IN_TEXT.sub(lambda m: self.tokens.get(m.group(0), m.group(0)), text)
        text = _AGENT_ID_IN_TEXT.sub(lambda m: m.group(1) + self.tokens.get(m.group(2), m.group(2)), text)
        return _TIMING_IN_TEXT.sub(lambda m: f"{m.group(1)}: <{m.group(1)}>", text)


def canonical(events: list[Any]) -> list[dict[str, Any]]:
    """Events as dicts with every per-run id and timing rewritten (see ``VOLATILE_FIELDS``) and
    ``provider_details`` removed at any depth; every other field kept."""
    ds = [_as_dict(e) for e in events]
    ids = _Ids()
    for d in ds:
        ids.collect(d)
    return [ids.rewrite(d) for d in ds]


def normalize(events: list[Any], *, drop: frozenset[str] = VOLATILE_FIELDS) -> list[dict[str, Any]]:
    """Events as canonical dicts (``canonical``) without the volatile fields at top level (order kept)."""
    return [{k: v for k, v in e.items() if k not in drop} for e in canonical(events)]


def normalized_jsonl(events: list[Any]) -> str:
    """The canonical text used for byte-identical replay checks."""
    return "".join(json.dumps(e, sort_keys=True, ensure_ascii=False) + "\n" for e in normalize(events))


@dataclass
class Equivalence:
    differences: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return not self.differences

    def report(self) -> str:
        return "equivalent" if not self.differences else "\n".join(f"- {d}" for d in self.differences)


def _view(events: list[Any], across_providers: bool) -> list[dict[str, Any]]:
    drop = VOLATILE_FIELDS | (
        PROVIDER_FIELDS | PROVIDER_DEPENDENT | {"seq"} if across_providers else frozenset()
    )
    out = []
    for e in normalize(events, drop=drop):
        if across_providers and e["type"] not in BEHAVIOUR_EVENTS:
            continue
        out.append(e)
    return out


def _label(e: dict[str, Any]) -> str:
    bits = [e["type"]]
    for key in ("call_id", "tool", "to_agent", "limit", "status"):
        if key in e and e[key] not in (None, ""):
            bits.append(f"{key}={e[key]}")
    return " ".join(bits)


def equivalent(a: list[Any], b: list[Any], *, across_providers: bool = True) -> Equivalence:
    """Compare two traces. With ``across_providers`` the vendor mechanics (model-call events, tokens,
    cost, provider/sdk/model names) are ignored; without it everything but volatile fields counts."""
    va, vb = _view(a, across_providers), _view(b, across_providers)
    result = Equivalence()
    if across_providers:
        ca = sum(1 for e in a if _as_dict(e)["type"] == "model.call")
        cb = sum(1 for e in b if _as_dict(e)["type"] == "model.call")
        if ca != cb:
            result.differences.append(f"model calls: {ca} vs {cb}")
    for i in range(max(len(va), len(vb))):
        ea = va[i] if i < len(va) else None
        eb = vb[i] if i < len(vb) else None
        if ea is None or eb is None:
            present = ea or eb
            assert present is not None
            side = "first" if ea is not None else "second"
            result.differences.append(f"event {i}: only in the {side} trace: {_label(present)}")
            continue
        if ea == eb:
            continue
        if ea["type"] != eb["type"]:
            result.differences.append(f"event {i}: {_label(ea)} vs {_label(eb)}")
            continue
        for key in sorted(set(ea) | set(eb)):
            if ea.get(key) != eb.get(key):
                va_, vb_ = (
                    json.dumps(ea.get(key), ensure_ascii=False),
                    json.dumps(eb.get(key), ensure_ascii=False),
                )
                result.differences.append(f"event {i} ({_label(ea)}): {key}: {va_[:200]} vs {vb_[:200]}")
    return result
