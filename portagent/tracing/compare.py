"""Comparing normalized traces across providers and versions.

``VOLATILE_FIELDS`` is the one list of fields that legitimately differ between two runs of the same
script: ids, timestamps, latencies, vendor ids and anything under ``provider_details``. ``normalize``
removes exactly those; ``equivalent`` compares what must match across providers (tool sequence,
arguments, results, permission decisions, approvals, route, final output, status) and reports each
difference readably. A test mutates every other field and checks that the traces then differ.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

VOLATILE_FIELDS: frozenset[str] = frozenset(
    {
        "run_id",
        "trace_id",
        "span_id",
        "parent_span_id",
        "ts",
        "latency_ms",
        "duration_ms",
        "cold_start",  # timing provenance: whether the process had run this provider before
        "response_id",
        "provider_details",
        "approval_id",
    }
)
"""Removed before any comparison or byte-identical replay check (documented in docs/traces.md)."""

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


def normalize(events: list[Any], *, drop: frozenset[str] = VOLATILE_FIELDS) -> list[dict[str, Any]]:
    """Events as dicts without the volatile fields (order kept)."""
    return [{k: v for k, v in _as_dict(e).items() if k not in drop} for e in events]


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
