"""One self-contained ``report.html``: no network, every style, script and chart inline.

Sections: the gate verdict; pass rate per provider (one row per provider, a column per agent version,
Wilson 95 % interval drawn as a bar); cost and latency distributions (one strip per provider ×
version, every run a dot, p50/p95 marked); a tool × case heatmap per agent version; the comparison
(deltas, trajectory divergences, regressions to keep); failing cases with their notes; and a trace
timeline for every run (model calls with tokens and latency, tool calls, permission decisions,
approvals, handoffs, errors). Every run shows its provenance (``live`` / ``emulator``).

Charts are SVG written here; the only script filters the run list. Nothing is fetched.
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from portagent.evals.aggregate import cold_start_line
from portagent.evals.findings import CATEGORY_LABELS
from portagent.evals.report_md import fmt_ms, fmt_pct, fmt_usd, role_of, sources_line

if TYPE_CHECKING:
    from portagent.evals.aggregate import GroupStats
    from portagent.evals.compare import Comparison
    from portagent.evals.gate import GateDecision
    from portagent.evals.report import Results
    from portagent.evals.scoring import RunScore

e = html.escape

CSS = """
:root{--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;--muted:#57606a;--line:#d0d7de;--bg:#f6f8fa;--accent:#0969da}
*{box-sizing:border-box}
body{font:14px/1.45 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0;color:#1f2328;background:#fff}
header{padding:20px 28px;border-bottom:1px solid var(--line);background:var(--bg)}
main{padding:8px 28px 40px;max-width:1400px}
h1{font-size:22px;margin:0 0 6px}h2{font-size:18px;margin:28px 0 10px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:15px;margin:18px 0 8px}
.meta{color:var(--muted)}
.verdict{display:inline-block;margin-top:10px;padding:8px 14px;border-radius:6px;font-weight:600}
.verdict.pass{background:#dafbe1;color:var(--ok)}.verdict.block{background:#ffebe9;color:var(--bad)}
table{border-collapse:collapse;margin:6px 0 12px}
th,td{border:1px solid var(--line);padding:5px 9px;text-align:left;vertical-align:top}
th{background:var(--bg);font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:var(--ok)}.fail{color:var(--bad)}.blocking{color:var(--bad);font-weight:600}
.badge{display:inline-block;padding:0 7px;border-radius:10px;font-size:12px;border:1px solid var(--line);background:#fff}
.badge.emulator{background:#ddf4ff;border-color:#54aeff}.badge.live{background:#fff8c5;border-color:#d4a72c}
.badge.unknown{background:#eee}.badge.endpoint{background:#fbefff;border-color:#c297ff}
.badge.replay{background:#eaeef2;border-color:#8c959f}
.badge.ok{background:#dafbe1;border-color:#4ac26b}.badge.ko{background:#ffebe9;border-color:#ff8182}
ul.reasons li{margin:3px 0}
.heat td.h{text-align:center;min-width:44px;font-variant-numeric:tabular-nums}
.heat td.forbidden{outline:2px solid var(--bad);outline-offset:-2px}
.controls{margin:8px 0;display:flex;gap:12px;flex-wrap:wrap;align-items:center}
.controls select,.controls input{font:inherit}
details.run{border:1px solid var(--line);border-radius:6px;margin:5px 0;background:#fff}
details.run>summary{cursor:pointer;padding:6px 10px;list-style:none;display:flex;gap:10px;align-items:center;flex-wrap:wrap}
details.run>summary::-webkit-details-marker{display:none}
details.run[open]>summary{border-bottom:1px solid var(--line);background:var(--bg)}
.tl{margin:8px 12px 12px;padding:0;list-style:none}
.tl li{display:grid;grid-template-columns:150px 1fr 130px;gap:8px;padding:3px 0;border-bottom:1px dashed #eee;align-items:center}
.tl .kind{font-weight:600}.tl .k-tool{color:#8250df}.tl .k-model{color:var(--accent)}.tl .k-approval{color:var(--warn)}
.tl .k-error,.tl .k-budget{color:var(--bad)}.tl .k-handoff{color:#bc4c00}
.tl .bar{height:8px;background:var(--accent);border-radius:4px;opacity:.6}
.tl code{font-size:12px;word-break:break-all}
.notes{margin:6px 12px;color:var(--bad)}
svg text{font:11px sans-serif;fill:#57606a}
.small{font-size:12px;color:var(--muted)}
"""

JS = """
(function(){
  var runs = document.querySelectorAll('details.run');
  var sel = {provider: document.getElementById('f-provider'), version: document.getElementById('f-version'),
             status: document.getElementById('f-status')};
  var count = document.getElementById('f-count');
  function apply(){
    var shown = 0;
    for (var i = 0; i < runs.length; i++) {
      var r = runs[i];
      var ok = (!sel.provider.value || r.dataset.provider === sel.provider.value)
            && (!sel.version.value || r.dataset.version === sel.version.value)
            && (!sel.status.value || r.dataset.status === sel.status.value);
      r.style.display = ok ? '' : 'none';
      if (ok) shown++;
    }
    count.textContent = shown + ' of ' + runs.length + ' runs';
  }
  ['provider','version','status'].forEach(function(k){ sel[k].addEventListener('change', apply); });
  apply();
})();
"""


def _badge(source: str | None, label: str | None = None) -> str:
    s = source or "unknown"
    return f'<span class="badge {e(s)}" title="provenance">{e(label or s)}</span>'


def _ok(passed: bool) -> str:
    return '<span class="badge ok">pass</span>' if passed else '<span class="badge ko">fail</span>'


def _interval_svg(g: GroupStats, width: int = 160) -> str:
    """Pass rate as a dot with its Wilson interval as a bar, on [0, 1]."""

    def x(v: float) -> float:
        return 4 + v * (width - 8)

    colour = "#1a7f37" if g.pass_rate == 1 else "#cf222e" if g.pass_rate < 0.5 else "#9a6700"
    return (
        f'<svg width="{width}" height="18" role="img" aria-label="pass rate {g.pass_rate:.2f}, Wilson 95% '
        f'[{g.wilson_low:.3f}, {g.wilson_high:.3f}]"><line x1="4" y1="9" x2="{width - 4}" y2="9" stroke="#d0d7de"/>'
        f'<rect x="{x(g.wilson_low):.1f}" y="5" width="{max(1.0, x(g.wilson_high) - x(g.wilson_low)):.1f}" height="8" '
        f'rx="3" fill="{colour}" opacity=".3"/><circle cx="{x(g.pass_rate):.1f}" cy="9" r="4" fill="{colour}"/></svg>'
    )


def _strip_svg(
    rows: Sequence[tuple[str, list[float], float | None, float | None]], unit: str, fmt: Any
) -> str:
    """One horizontal strip per row: every value a dot, p50 and p95 as ticks, on a shared axis."""
    values = [v for _, vs, _, _ in rows for v in vs]
    if not values:
        return '<p class="small">No values recorded.</p>'
    hi = max(values) or 1.0
    left, width, row_h = 190, 460, 24
    height = row_h * len(rows) + 26

    def x(v: float) -> float:
        return left + (v / hi) * width

    parts = [
        f'<svg width="{left + width + 90}" height="{height}" role="img" aria-label="{e(unit)} distribution">'
    ]
    for i, (label, vs, p50, p95) in enumerate(rows):
        y = 14 + i * row_h
        parts.append(f'<text x="4" y="{y + 4}">{e(label)}</text>')
        parts.append(f'<line x1="{left}" y1="{y}" x2="{left + width}" y2="{y}" stroke="#eaeef2"/>')
        for v in vs:
            parts.append(
                f'<circle cx="{x(v):.1f}" cy="{y}" r="3" fill="#0969da" opacity=".45"><title>{e(fmt(v))}</title></circle>'
            )
        for q, name, colour in ((p50, "p50", "#1f2328"), (p95, "p95", "#cf222e")):
            if q is not None:
                parts.append(
                    f'<line x1="{x(q):.1f}" y1="{y - 8}" x2="{x(q):.1f}" y2="{y + 8}" stroke="{colour}" '
                    f'stroke-width="2"><title>{name} {e(fmt(q))}</title></line>'
                )
        parts.append(f'<text x="{left + width + 8}" y="{y + 4}">p95 {e(fmt(p95))}</text>')
    axis_y = height - 8
    parts.append(
        f'<text x="{left}" y="{axis_y}">0</text><text x="{left + width - 40}" y="{axis_y}">{e(fmt(hi))}</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


def _provider_table(results: Results) -> str:
    r = results.result
    versions = r.agent_versions
    by = {(g.provider, g.agent_version): g for g in r.by_provider}
    head = "".join(
        f'<th colspan="3">{e(v)}{f" ({e(role_of(results, v))})" if role_of(results, v) else ""}</th>'
        for v in versions
    )
    sub = "<th>passed</th><th>Wilson 95 %</th><th>interval</th>" * len(versions)
    rows = []
    for p in r.providers:
        cells = []
        for v in versions:
            g = by.get((p, v))
            if g is None:
                cells.append('<td colspan="3" class="small">not run</td>')
                continue
            cls = "pass" if g.passed == g.runs else "fail"
            cells.append(
                f'<td class="num {cls}">{g.passed}/{g.runs} ({fmt_pct(g.pass_rate)})</td>'
                f'<td class="num">[{g.wilson_low:.3f}, {g.wilson_high:.3f}]</td><td>{_interval_svg(g)}</td>'
            )
        srcs = sorted(
            {(x.provenance.source, x.provenance.label()) for x in r.runs if x.provenance.provider == p},
            key=str,
        )
        rows.append(
            f'<tr class="provider-row" data-provider="{e(p)}"><th>{e(p)} '
            f"{''.join(_badge(s, lab) for s, lab in srcs)}</th>{''.join(cells)}</tr>"
        )
    detail = []
    for g in sorted(r.by_provider, key=lambda g: (g.provider, g.agent_version)):
        k = max(g.pass_hat_k) if g.pass_hat_k else None
        detail.append(
            f"<tr><td>{e(g.provider)}</td><td>{e(g.agent_version)}</td>"
            f'<td class="num">{"–" if k is None else f"{g.pass_at_k[k]:.2f} / {g.pass_hat_k[k]:.2f} (k={k})"}</td>'
            f'<td class="num">{fmt_pct(g.flake_rate)}</td><td class="num">{g.mean_final:.3f}</td>'
            f'<td class="num">{g.mean_trajectory:.3f}</td><td class="num">{g.permission_violations}</td>'
            f'<td class="num">{fmt_usd(g.total_cost_usd)}</td><td class="num">{fmt_usd(g.cost_per_accepted_task_usd)}</td>'
            f'<td class="num">{fmt_ms(g.latency_p50_ms)} / {fmt_ms(g.latency_p95_ms)}</td>'
            f'<td class="num">{g.usage.input_tokens:,} / {g.usage.output_tokens:,}</td></tr>'
        )
    return (
        f'<table id="providers"><thead><tr><th rowspan="2">provider</th>{head}</tr><tr>{sub}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
        "<h3>Aggregates</h3><table><thead><tr><th>provider</th><th>agent</th><th>pass@k / pass^k</th><th>flake</th>"
        "<th>quality</th><th>trajectory</th><th>permission violations</th><th>cost</th><th>cost / accepted</th>"
        "<th>latency p50 / p95</th><th>tokens in / out</th></tr></thead>"
        f"<tbody>{''.join(detail)}</tbody></table>"
    )


def _distributions(results: Results) -> str:
    r = results.result
    groups = sorted(r.by_provider, key=lambda g: (g.provider, g.agent_version))
    cost_rows, lat_rows = [], []
    for g in groups:
        runs = [
            x
            for x in r.runs
            if (x.provenance.provider, x.provenance.agent_version) == (g.provider, g.agent_version)
        ]
        label = f"{g.provider} · {g.agent_version}"
        cost_rows.append(
            (label, [x.cost_usd for x in runs if x.cost_usd is not None], g.cost_p50_usd, g.cost_p95_usd)
        )
        lat_rows.append(
            (
                label,
                [x.latency_ms for x in runs if x.latency_ms is not None],
                g.latency_p50_ms,
                g.latency_p95_ms,
            )
        )
    return (
        "<h3>Cost per run</h3>"
        + _strip_svg(cost_rows, "cost", fmt_usd)
        + "<h3>Latency per run</h3>"
        + _strip_svg(lat_rows, "latency", fmt_ms)
        + '<p class="small">Every dot is a run; black tick p50, red tick p95 (nearest rank). Replayed runs show '
        f"the latency recorded with the cassette. {html.escape(cold_start_line(groups))}</p>"
    )


def _heatmap(results: Results) -> str:
    r = results.result
    out = []
    for version in r.agent_versions:
        runs = [x for x in r.runs if x.provenance.agent_version == version]
        tools = sorted({t for x in runs for t in x.tools})
        cases = sorted({x.provenance.case_id for x in runs})
        if not tools:
            continue
        calls: dict[tuple[str, str], list[int]] = defaultdict(list)
        per_case: dict[str, int] = defaultdict(int)
        forbidden: set[tuple[str, str]] = set()
        for x in runs:
            per_case[x.provenance.case_id] += 1
            for t in tools:
                calls[(x.provenance.case_id, t)].append(x.tools.count(t))
            for t in x.forbidden_called:
                forbidden.add((x.provenance.case_id, t))
        peak = max((sum(v) / len(v) for v in calls.values() if v), default=1.0) or 1.0
        head = "".join(f"<th>{e(t)}</th>" for t in tools)
        rows = []
        for c in cases:
            cells = []
            for t in tools:
                v = calls.get((c, t), [])
                mean = sum(v) / len(v) if v else 0.0
                alpha = 0.0 if mean == 0 else 0.15 + 0.75 * mean / peak
                cls = "h forbidden" if (c, t) in forbidden else "h"
                title = f"{c} × {t}: {mean:.2f} calls per run" + (
                    " — forbidden tool called" if (c, t) in forbidden else ""
                )
                cells.append(
                    f'<td class="{cls}" style="background:rgba(130,80,223,{alpha:.2f})" title="{e(title)}">'
                    f"{'' if mean == 0 else f'{mean:.2g}'}</td>"
                )
            rows.append(f"<tr><th>{e(c)}</th>{''.join(cells)}</tr>")
        role = role_of(results, version)
        out.append(
            f'<h3>{e(version)}{f" ({e(role)})" if role else ""}</h3><table class="heat"><thead><tr><th>case \\ tool</th>'
            f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        )
    return (
        (
            "".join(out)
            + '<p class="small">Mean calls per run over every provider and repeat; a red outline marks a '
            "forbidden tool that was called.</p>"
        )
        if out
        else '<p class="small">No tool was called.</p>'
    )


def _comparison(decision: GateDecision, comparison: Comparison | None) -> str:
    parts = []
    if comparison is not None:
        cls = "pass" if comparison.passed else "fail"
        parts.append(f'<p class="{cls}"><strong>{e(comparison.verdict)}</strong></p>')
        rows = []
        for pair in comparison.pairs:
            for d in pair.deltas:
                rows.append(
                    f'<tr class="{"blocking" if d.blocking else ""}"><td>{e(pair.pair)}</td><td>{e(d.metric)}</td>'
                    f'<td class="num">{"–" if d.baseline is None else f"{d.baseline:g}"}</td>'
                    f'<td class="num">{"–" if d.candidate is None else f"{d.candidate:g}"}</td>'
                    f'<td class="num">{"–" if d.delta is None else f"{d.delta:+g}"}</td><td>{e(d.rule) or "–"}</td>'
                    f"<td>{'blocks' if d.blocking else ''}</td></tr>"
                )
        parts.append(
            "<table><thead><tr><th>pair</th><th>metric</th><th>baseline</th><th>candidate</th><th>Δ</th>"
            f"<th>rule</th><th></th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        )
        div = [(p.pair, c) for p in comparison.pairs for c in p.cases if c.divergence]
        if div:
            parts.append(
                "<h3>Trajectory differences</h3><table><thead><tr><th>pair</th><th>case</th><th>status</th><th>category</th>"
                "<th>first divergence</th><th>baseline tools</th><th>candidate tools</th></tr></thead><tbody>"
                + "".join(
                    f"<tr><td>{e(p)}</td><td>{e(c.case_id)}</td><td>{e(c.status)}</td>"
                    f"<td>{e(CATEGORY_LABELS[c.category]) if c.category else ''}</td>"
                    f"<td>{e(c.divergence or '')}</td><td>{e(' → '.join(c.baseline_tools))}</td>"
                    f"<td>{e(' → '.join(c.candidate_tools))}</td></tr>"
                    for p, c in div
                )
                + "</tbody></table>"
            )
    if decision.regressions:
        parts.append(
            "<h3>Regressions to keep in the dataset</h3><table><thead><tr><th>case</th><th>pair</th><th>factors</th>"
            "<th>permanent</th><th>why it exists</th><th>notes</th></tr></thead><tbody>"
            + "".join(
                f"<tr><td>{e(g.case_id)}</td><td>{e(g.pair)}</td><td>{e(', '.join(g.factors))}</td>"
                f"<td>{'yes' if g.permanent else 'no'}</td><td>{e(g.why_it_exists)}</td>"
                f"<td>{e('; '.join(g.notes))}</td></tr>"
                for g in decision.regressions
            )
            + "</tbody></table>"
        )
    if not parts:
        parts.append(
            '<p class="small">One agent version: no comparison. The gate judged the result on its own.</p>'
        )
    return "".join(parts)


def _trace_diffs(results: Results, decision: GateDecision) -> str:
    """``trace diff`` of baseline vs candidate for every regression and drift."""
    from portagent.evals.report import finding_diffs

    diffs = finding_diffs(results, decision)
    if not diffs:
        return ""
    return (
        "<h2 id='trace-diffs'>Trace diffs</h2><p class='small'>Baseline → candidate, aligned: = same, "
        "~ changed, - only in the baseline, + only in the candidate.</p>"
        + "".join(
            f"<details class='trace-diff'><summary>{e(h)}</summary><pre>{e(d.render('baseline', 'candidate'))}</pre></details>"
            for h, d in diffs
        )
    )


def _failing(results: Results) -> str:
    r = results.result
    bad = [x for x in r.runs if not x.passed]
    if not bad:
        return '<p class="pass">Every run passed.</p>'
    seen: dict[tuple[str, str, str], RunScore] = {}
    counts: dict[tuple[str, str, str], int] = defaultdict(int)
    for x in bad:
        k = (x.provenance.agent_version, x.provenance.case_id, x.provenance.provider)
        seen.setdefault(k, x)
        counts[k] += 1
    rows = "".join(
        f"<tr><td>{e(v)}</td><td>{e(c)}</td><td>{e(p)} {_badge(x.provenance.source, x.provenance.label())}</td>"
        f"<td class='num'>{counts[(v, c, p)]}</td><td>{e(', '.join(x.failed_factors))}</td>"
        f"<td>{e('; '.join(x.notes))}</td></tr>"
        for (v, c, p), x in sorted(seen.items())
    )
    return (
        "<table><thead><tr><th>agent</th><th>case</th><th>provider</th><th>failed runs</th><th>factors</th>"
        f"<th>notes (first failed run)</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _event_row(ev: Any, tools: dict[str, str], peak: float) -> str:
    t = ev.type
    lat = getattr(ev, "latency_ms", None)
    bar = (
        f'<div class="bar" style="width:{max(2.0, 100 * lat / peak):.0f}%" title="{lat:g} ms"></div>'
        if isinstance(lat, int | float) and lat and peak
        else ""
    )
    if t == "model.call":
        kind, cls = "model call", "k-model"
        what = f"{ev.agent} · {ev.model} · {ev.input_tokens} in / {ev.output_tokens} out tokens"
    elif t == "context.manifest":  # what the next model call was given (docs/context.md)
        kind, cls = "context", "k-model"
        budget = f"/{ev.max_context_tokens}" if ev.max_context_tokens is not None else ""
        parts = " · ".join(f"{p.type} {p.source} {p.tokens}" for p in ev.parts)
        left = "".join(f" · excluded {x.source} ({x.reason})" for x in ev.excluded)
        what = e(f"call {ev.call_index}: {ev.total_tokens}{budget} tokens ({ev.token_count}) · {parts}{left}")
    elif t == "tool.call":
        kind, cls = "tool call", "k-tool"
        what = (
            f"<code>{e(ev.tool)}({e(json.dumps(ev.args, ensure_ascii=False, sort_keys=True)[:300])})</code>"
        )
        return f'<li><span class="kind {cls}">{kind}</span><span>{what}</span><span>{bar}</span></li>'
    elif t == "permission.decision":
        kind, cls = "decision", "k-tool"
        what = f"{tools.get(ev.call_id, ev.call_id)}: {ev.decision} ({ev.rule}: {ev.reason})"
    elif t == "approval.requested":
        kind, cls = "approval asked", "k-approval"
        card = ev.card if isinstance(ev.card, dict) else {}
        after = [
            str(x.get("id"))
            for x in [*card.get("inputs", []), *card.get("prior_results", [])]
            if isinstance(x, dict)
        ]
        what = (
            f"{tools.get(ev.call_id, ev.call_id)} · {ev.approval_id}"
            + (f" · evidence {e(', '.join(after))}" if after else "")
            + (f" · key {e(str(card['idempotency_key']))}" if card.get("idempotency_key") else "")
        )
    elif t == "approval.resolved":
        kind, cls = "approval", "k-approval"
        what = (
            f"{tools.get(ev.call_id, ev.call_id)}: {ev.status}"
            + (f" by {ev.reviewer}" if ev.reviewer else "")
            + (
                f" → {json.dumps(ev.effective_args, ensure_ascii=False, sort_keys=True)[:200]}"
                if ev.status == "edited"
                else ""
            )
        )
    elif t == "tool.result":
        kind, cls = "tool result", "k-tool"
        state = "ok" if ev.ok else f"error {ev.error}"
        what = f"{tools.get(ev.call_id, ev.call_id)}: {state}" + (
            " (duplicate: no new effect)" if ev.duplicate else ""
        )
    elif t == "handoff":
        kind, cls = "handoff", "k-handoff"
        what = f"{ev.from_agent} → {ev.to_agent} ({ev.kind})"
    elif t == "handoff.package":  # what the sub-agent was given (docs/handoff.md "Delegation")
        kind, cls = "handoff package", "k-handoff"
        what = f"{ev.handoff_id} → {ev.to_agent} ({ev.tokens} tokens, estimate)"
    elif t == "budget.exceeded":
        kind, cls = "budget", "k-budget"
        what = f"{ev.limit}: {ev.observed:g} over the limit {ev.limit_value:g}"
    elif t == "error":
        kind, cls = "error", "k-error"
        what = f"{ev.error_type}: {ev.message[:300]}"
    elif t == "run.started":
        kind, cls = "started", ""
        what = f"{ev.agent}@{ev.agent_version} · {ev.sdk} {ev.sdk_version} · {ev.model}"
    elif t == "run.completed":
        kind, cls = "completed", ""
        cost = "unknown" if ev.cost_usd is None else f"${ev.cost_usd:.5f}"
        what = f"{ev.status} ({ev.stop_reason}) · {cost} · {ev.duration_ms} ms"
    else:
        kind, cls, what = t, "", ""
    return f'<li><span class="kind {cls}">{e(kind)}</span><span>{e(what)}</span><span>{bar}</span></li>'


def _runs(results: Results) -> str:
    from portagent.evals.report import load_events

    r = results.result
    items = []
    for x in r.runs:
        p = x.provenance
        path = results.trace_path(p.agent, p.agent_version, p.case_id, p.provider, p.repeat)
        events = load_events(path)
        tools = {ev.call_id: ev.tool for ev in events if ev.type == "tool.call"}
        lats = [ev.latency_ms for ev in events if isinstance(getattr(ev, "latency_ms", None), int | float)]
        peak = max(lats, default=0.0)
        body = (
            "".join(_event_row(ev, tools, peak) for ev in events)
            if events
            else '<li><span class="small">no trace in this results folder</span></li>'
        )
        notes = f'<div class="notes">{e("; ".join(x.notes))}</div>' if x.notes else ""
        status = "pass" if x.passed else "fail"
        cost = fmt_usd(x.cost_usd)
        items.append(
            f'<details class="run" data-provider="{e(p.provider)}" data-version="{e(p.agent_version)}" '
            f'data-status="{status}"><summary>{_ok(x.passed)} <strong>{e(p.case_id)}</strong> '
            f"<span>{e(p.provider)}</span> <span>{e(p.agent_version)}</span> <span>r{p.repeat}</span> "
            f'{_badge(p.source, p.label())} <span class="small">{e(" → ".join(x.tools) or "no tools")} · {cost} · '
            f"{fmt_ms(x.latency_ms)} · {x.usage.input_tokens + x.usage.output_tokens} tokens</span></summary>"
            f'{notes}<ol class="tl">{body}</ol></details>'
        )

    def opts(vals: Iterable[str]) -> str:
        return "".join(f'<option value="{e(v)}">{e(v)}</option>' for v in vals)

    controls = (
        f'<div class="controls"><label>provider <select id="f-provider"><option value="">all</option>'
        f'{opts(r.providers)}</select></label><label>agent <select id="f-version"><option value="">all</option>'
        f'{opts(r.agent_versions)}</select></label><label>status <select id="f-status"><option value="">all'
        f'</option><option value="pass">pass</option><option value="fail">fail</option></select></label>'
        f'<span id="f-count" class="small"></span></div>'
    )
    return controls + "".join(items)


def render_html(results: Results, decision: GateDecision, comparison: Comparison | None) -> str:
    r = results.result
    meta = results.meta
    facts = [
        f"dataset {e(r.dataset_version)}",
        f"{len(r.runs)} runs",
        f"provenance: {e(sources_line(results))}",
    ]
    if meta:
        facts = [
            f"mode <strong>{e(meta.mode)}</strong>",
            f"providers {e(', '.join(meta.providers))}",
            f"repeats {meta.repeats}",
            *facts,
        ]
        if meta.started_at:
            facts.append(f"run {e(meta.started_at)}")
    cls = "pass" if decision.passed else "block"
    verdict = "Gate: PASS" if decision.passed else "Gate: BLOCK"
    if decision.verdict:
        verdict += f" — {decision.verdict}"
    reasons = (
        ("<ul class='reasons'>" + "".join(f"<li>{e(x)}</li>" for x in decision.reasons) + "</ul>")
        if decision.reasons
        else ""
    )
    if decision.blocked_by:
        reasons = (
            "<p id='blocked-by'>Blocked by: "
            + e(", ".join(CATEGORY_LABELS[c] for c in decision.blocked_by))
            + "</p>"
            + reasons
        )
    if decision.fixes:
        reasons += "<p>Re-record the drifted runs (a stale recording, not the agent):</p>" + "".join(
            f"<pre class='fix'>{e(f)}</pre>" for f in decision.fixes
        )
    warnings = (
        (
            "<details><summary class='small'>"
            + f"{len(decision.warnings)} warning(s)</summary><ul class='small'>"
            + "".join(f"<li>{e(w)}</li>" for w in decision.warnings)
            + "</ul></details>"
        )
        if decision.warnings
        else ""
    )
    errors = ""
    if meta and meta.errors:
        errors = (
            "<h2>Runs that could not be made</h2><ul class='reasons'>"
            + "".join(f"<li>{e(x)}</li>" for x in meta.errors[:100])
            + "</ul>"
        )
    title = f"portagent eval · {r.suite_id}"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{e(title)}</title><style>{CSS}</style></head>
<body><header><h1>{e(title)}</h1><div class="meta">{" · ".join(facts)}</div>
<div class="verdict {cls}" id="verdict">{e(verdict)}</div></header>
<main>
<h2>Gate</h2>{reasons or '<p class="pass">No blocking finding.</p>'}{warnings}
<h2>Pass rate per provider</h2>{_provider_table(results)}
<h2>Cost and latency</h2>{_distributions(results)}
<h2>Tools × cases</h2>{_heatmap(results)}
<h2>Comparison</h2>{_comparison(decision, comparison)}
<h2>Failing cases</h2>{_failing(results)}
{_trace_diffs(results, decision)}
{errors}
<h2>Runs</h2>{_runs(results)}
</main><script>{JS}</script></body></html>
"""
