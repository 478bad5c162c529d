"""The OTel export of a resumed run counts each model exchange once, as the run does.

A resumed attempt replays the earlier attempt's model exchanges from the run journal, and its
``run.completed`` totals already include them; the export used to add every attempt's totals (and price
every chat span), so the agent span said more tokens and cost than ``run.json``. The trace is the real
two-attempt run of ``test_otel_export`` (openai-agents against the emulator on a free port).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _support import run_cli

pytest.importorskip("opentelemetry.sdk")
from test_otel_export import resumed_trace  # noqa: F401  (the module-scoped two-attempt run)


def _spans(trace: Path, out: Path) -> list[dict[str, Any]]:
    code, _, err = run_cli("trace", "export", str(trace), "--otel-json", str(out))
    assert code == 0, err
    data = json.loads(out.read_text())
    return [s for rs in data["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]


def _attrs(span: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span["attributes"]:
        (value,) = kv["value"].values()
        out[kv["key"]] = int(value) if "intValue" in kv["value"] else value
    return out


def test_agent_span_totals_are_the_runs_own(resumed_trace: Path, tmp_path: Path) -> None:  # noqa: F811
    run = json.loads((resumed_trace.parent / "run.json").read_text())["result"]
    events = [json.loads(x) for x in resumed_trace.read_text().splitlines() if x.strip()]
    (boundary,) = [e for e in events if e["type"] == "attempt.started"]
    assert boundary["replays"] >= 1  # the second attempt did replay an exchange of the first

    spans = _spans(resumed_trace, tmp_path / "spans.json")
    root = _attrs(next(s for s in spans if not s.get("parentSpanId")))
    assert root["gen_ai.usage.input_tokens"] == run["usage"]["input_tokens"]
    assert root["gen_ai.usage.output_tokens"] == run["usage"]["output_tokens"]
    assert root["portagent.cost_usd"] == pytest.approx(run["cost_usd"])
    assert root["portagent.cost_source"] == run["cost_source"]

    # The replayed exchanges are marked on their chat spans and carry neither usage nor cost, so the
    # chat spans add up to the run's totals (a backend summing spans counts each exchange once).
    chats = [_attrs(s) for s in spans if s["name"].startswith("chat ")]
    replayed = [a for a in chats if a.get("portagent.replayed")]
    assert len(replayed) == boundary["replays"]
    assert not any(k.startswith("gen_ai.usage.") or k == "portagent.cost_usd" for a in replayed for k in a)
    assert sum(a.get("gen_ai.usage.input_tokens", 0) for a in chats) == run["usage"]["input_tokens"]
    assert sum(a.get("portagent.cost_usd", 0.0) for a in chats) == pytest.approx(run["cost_usd"])
