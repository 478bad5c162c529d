"""``portagent route``: the request's limits hold as written, a route runs no tool stronger than it says,
and what the router writes (cards, run summaries, ``--out``) says what really happened. What really ran
is read from the handlers' own log (``$ROUTE_TEST_LOG``), never from the trace alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _support import run_cli

from portagent.tracing.recorder import read_trace

TOOLS = """\
kind: tools
schema_version: 1
tools:
  - name: paid
    description: Costs money.
    effect: read
    cost_usd: 0.5
    input_schema: {type: object, properties: {q: {type: string}}, required: [q]}
    handler: h:ok
  - name: free
    description: Costs nothing.
    effect: read
    input_schema: {type: object, properties: {q: {type: string}}, required: [q]}
    handler: h:ok
  - name: flaky
    description: Always fails.
    effect: read
    input_schema: {type: object, properties: {q: {type: string}}, required: [q]}
    handler: h:boom
  - name: send_mail
    description: Sends an email.
    effect: external_effect
    idempotency: {required: true, key_template: "{q}"}
    input_schema: {type: object, properties: {q: {type: string}}, required: [q]}
    handler: h:ok
"""

HANDLERS = """\
import json, os


def ok(q):
    with open(os.environ["ROUTE_TEST_LOG"], "a") as f:
        f.write(json.dumps({"q": q}) + "\\n")
    return {"ok": q}


def boom(q):
    raise RuntimeError("down")
"""


@pytest.fixture
def ran(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The handlers' log: one JSON line per call that really reached a handler."""
    log = tmp_path / "handlers.jsonl"
    monkeypatch.setenv("ROUTE_TEST_LOG", str(log))
    monkeypatch.setenv("PORTAGENT_HOME", str(tmp_path / "home"))
    (tmp_path / "tools.yaml").write_text(TOOLS)
    (tmp_path / "h.py").write_text(HANDLERS)
    return log


def _calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _router(folder: Path, name: str, routes: list[str], extra: str = "") -> str:
    path = folder / f"{name}.router.yaml"
    lines = [f"kind: router\nschema_version: 1\nname: {name}\ntool_files: [tools.yaml]\n{extra}registry:"]
    lines += [f"  - {r}" for r in routes]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _requests(folder: Path, name: str, *requests: str) -> str:
    path = folder / name
    path.write_text("requests:\n" + "".join(f"  - {r}\n" for r in requests))
    return str(path)


def test_a_zero_cost_budget_runs_nothing_that_costs_money(ran: Path, tmp_path: Path) -> None:
    # the capability says it is free, its tool costs 0.5: the request's budget of 0 must still hold
    router = _router(
        tmp_path,
        "zero",
        [
            "{route_id: local.paid, kind: local_tool, target: paid, owner: o, p95_latency_ms: 10, quality: 0.9, effect: read}",
        ],
    )
    reqs = _requests(
        tmp_path,
        "req.yaml",
        "{request_id: broke, effect: read, max_latency_ms: 1000, max_cost_usd: 0, args: {q: broke}}",
        "{request_id: rich, effect: read, max_latency_ms: 1000, max_cost_usd: 1, args: {q: rich}}",
    )
    out = tmp_path / "o"
    code, printed, err = run_cli("route", router, reqs, "--execute", "--out", str(out))
    assert code == 0, err
    assert "paid failed: budget_exhausted" in printed
    done = read_trace(out / "broke" / "trace.jsonl")[-1]
    assert (done.status, done.stop_reason, done.cost_usd) == ("budget_exhausted", "max_cost_usd", 0.0)
    assert _calls(ran) == [{"q": "rich"}]  # the zero budget ran nothing; a budget of 1 paid 0.5


def test_a_zero_cost_budget_still_runs_a_free_tool(ran: Path, tmp_path: Path) -> None:
    router = _router(
        tmp_path,
        "zero",
        [
            "{route_id: local.free, kind: local_tool, target: free, owner: o, p95_latency_ms: 10, quality: 0.9, effect: read}",
        ],
    )
    reqs = _requests(
        tmp_path,
        "req.yaml",
        "{request_id: q1, effect: read, max_latency_ms: 1000, max_cost_usd: 0, args: {q: hi}}",
    )
    code, _, err = run_cli("route", router, reqs, "--execute", "--out", str(tmp_path / "o"))
    assert code == 0, err
    done = read_trace(tmp_path / "o" / "q1" / "trace.jsonl")[-1]
    assert (done.status, done.stop_reason) == ("completed", "route_executed")
    assert _calls(ran) == [{"q": "hi"}]


def test_a_route_declared_weaker_than_its_tool_is_refused_before_anything_runs(
    ran: Path, tmp_path: Path
) -> None:
    # declared read, the tool sends mail: a read request would pass the least-privilege gate and send it
    router = _router(
        tmp_path,
        "eff",
        [
            "{route_id: local.lookup, kind: local_tool, target: send_mail, owner: o, p95_latency_ms: 10, quality: 0.9, effect: read}",
        ],
    )
    reqs = _requests(
        tmp_path,
        "req.yaml",
        "{request_id: q1, effect: read, max_latency_ms: 1000, max_cost_usd: 1, args: {q: hi}}",
    )
    out = tmp_path / "o"
    code, printed, err = run_cli("route", router, reqs, "--execute", "--out", str(out))
    assert code == 2 and printed == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert (
        "route local.lookup is declared effect read, but its tool 'send_mail' has effect external_effect"
        in err
    )
    assert _calls(ran) == [] and not out.exists()
    # a route declaring its tool's effect (or higher) is accepted
    Path(router).write_text(Path(router).read_text().replace("effect: read}", "effect: external_effect}"))
    assert run_cli("route", router, reqs, "--execute", "--out", str(out))[0] == 0


def test_a_fallback_routes_approval_card_gives_that_routes_reason_for_review(
    ran: Path, tmp_path: Path
) -> None:
    # the best route runs and fails; its fallback is over the latency budget, so it needs review
    router = _router(
        tmp_path,
        "rev",
        [
            "{route_id: local.fast, kind: local_tool, target: flaky, owner: o, p95_latency_ms: 10, quality: 0.9, effect: read}",
            "{route_id: local.slow, kind: local_tool, target: free, owner: o, p95_latency_ms: 5000, quality: 0.4, effect: read}",
        ],
    )
    reqs = _requests(
        tmp_path,
        "req.yaml",
        "{request_id: q1, effect: read, max_latency_ms: 1000, max_cost_usd: 1, args: {q: hi}}",
    )
    code, printed, err = run_cli("route", router, reqs, "--execute")
    assert code == 0, err
    assert "local.slow → free waits for approval" in printed
    code, listed, err = run_cli("approvals", "list", "--json")
    assert code == 0, err
    (card,) = json.loads(listed)
    assert card["reason"] == "router rev: route local.slow needs review (over the p95 latency budget)"
    assert _calls(ran) == []


def test_a_review_in_prod_card_names_the_effect_and_environment(ran: Path, tmp_path: Path) -> None:
    router = _router(
        tmp_path,
        "prod",
        [
            "{route_id: local.mail, kind: local_tool, target: send_mail, owner: o, p95_latency_ms: 10, quality: 0.9, effect: external_effect}",
        ],
    )
    reqs = _requests(
        tmp_path,
        "req.yaml",
        "{request_id: q1, effect: external_effect, environment: prod, max_latency_ms: 1000, max_cost_usd: 1, args: {q: hi}}",
    )
    assert run_cli("route", router, reqs, "--execute")[0] == 0
    (card,) = json.loads(run_cli("approvals", "list", "--json")[1])
    assert card["reason"] == "router prod: route local.mail needs review (external_effect effect in prod)"


@pytest.mark.parametrize(
    ("route_latency", "request_latency", "where"),
    [(".inf", "1000", "registry.0.p95_latency_ms"), ("10", ".inf", "requests.0.max_latency_ms")],
)
def test_an_infinite_number_is_one_clear_problem_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, route_latency: str, request_latency: str, where: str
) -> None:
    monkeypatch.setenv("PORTAGENT_HOME", str(tmp_path / "home"))
    router = _router(
        tmp_path,
        "u",
        [
            f"{{route_id: a, kind: mcp_tool, owner: o, p95_latency_ms: {route_latency}, quality: 0.5, effect: read}}"
        ],
    )
    reqs = _requests(
        tmp_path,
        "req.yaml",
        f"{{request_id: r1, effect: read, max_latency_ms: {request_latency}, max_cost_usd: 1}}",
    )
    out = tmp_path / "o"
    code, printed, err = run_cli("route", router, reqs, "--out", str(out))
    assert code == 1 and printed == "" and "Traceback" not in err
    assert f"[{where}]: Input should be a finite number (got inf)" in err
    assert not out.exists()


def test_validate_refuses_non_finite_numbers_in_a_router(tmp_path: Path) -> None:
    router = tmp_path / "nan.router.yaml"
    router.write_text(
        "kind: router\nschema_version: 1\nname: w\nweights: {semantic: .nan}\neffect_risk: {read: .inf}\n"
        "registry:\n  - {route_id: a, kind: mcp_tool, owner: o, p95_latency_ms: 1, cost_usd: .inf, quality: .nan,"
        " effect: read}\n"
    )
    code, printed, err = run_cli("validate", str(router))
    printed += err
    assert code == 1
    for where in ("weights.semantic", "effect_risk.read", "registry.0.cost_usd", "registry.0.quality"):
        assert f"[{where}]: Input should be a finite number" in printed


def test_reusing_an_out_folder_needs_overwrite_and_leaves_no_stale_request_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PORTAGENT_HOME", str(tmp_path / "home"))
    router = _router(
        tmp_path,
        "u",
        ["{route_id: a, kind: mcp_tool, owner: o, p95_latency_ms: 10, quality: 0.5, effect: read}"],
    )
    first = _requests(
        tmp_path,
        "first.yaml",
        "{request_id: old1, effect: read, max_latency_ms: 100, max_cost_usd: 1}",
        "{request_id: old2, effect: read, max_latency_ms: 100, max_cost_usd: 1}",
    )
    second = _requests(
        tmp_path, "second.yaml", "{request_id: new1, effect: read, max_latency_ms: 100, max_cost_usd: 1}"
    )
    out = tmp_path / "o"
    assert run_cli("route", router, first, "--out", str(out))[0] == 0
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    # without --overwrite: refused, as eval --out is, and nothing in the folder changes
    code, printed, err = run_cli("route", router, second, "--out", str(out))
    assert code == 2 and printed == "" and "Traceback" not in err
    assert "folder is not empty; pass --overwrite to replace the results in it" in err
    assert {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    # with --overwrite: the folder holds the new route only
    assert run_cli("route", router, second, "--out", str(out), "--overwrite")[0] == 0
    assert sorted(p.name for p in out.iterdir()) == ["decisions.json", "new1"]
    assert [d["request_id"] for d in json.loads((out / "decisions.json").read_text())] == ["new1"]


def test_the_approval_hint_says_how_to_rerun_into_the_same_out_folder(ran: Path, tmp_path: Path) -> None:
    router = _router(
        tmp_path,
        "prod",
        [
            "{route_id: local.mail, kind: local_tool, target: send_mail, owner: o, p95_latency_ms: 10, quality: 0.9, effect: external_effect}",
        ],
    )
    reqs = _requests(
        tmp_path,
        "req.yaml",
        "{request_id: q1, effect: external_effect, environment: prod, max_latency_ms: 1000, max_cost_usd: 1, args: {q: hi}}",
    )
    out = str(tmp_path / "o")
    code, printed, _ = run_cli("route", router, reqs, "--execute", "--out", out)
    assert code == 0 and "then run this command again with --overwrite)" in printed
    (card,) = json.loads(run_cli("approvals", "list", "--json")[1])
    assert run_cli("approvals", "approve", card["approval_id"], "--reviewer", "ana")[0] == 0
    code, printed, _ = run_cli("route", router, reqs, "--execute", "--out", out, "--overwrite")
    assert code == 0 and "local.mail → send_mail ok" in printed
    assert _calls(ran) == [{"q": "hi"}]


def test_a_failed_local_route_handed_on_to_an_mcp_fallback_says_so_in_run_completed(
    ran: Path, tmp_path: Path
) -> None:
    router = _router(
        tmp_path,
        "rr",
        [
            "{route_id: local.flaky, kind: local_tool, target: flaky, tags: [faq], owner: o, p95_latency_ms: 10, quality: 0.9, effect: read}",
            "{route_id: mcp.x, kind: mcp_tool, target: x.y, tags: [faq], owner: o, p95_latency_ms: 10, quality: 0.5, effect: read}",
        ],
    )
    reqs = _requests(
        tmp_path,
        "q.yaml",
        "{request_id: q1, required_tags: [faq], effect: read, max_latency_ms: 1000, max_cost_usd: 0.1, args: {q: hi}}",
    )
    out = tmp_path / "o"
    code, printed, err = run_cli("route", router, reqs, "--execute", "--out", str(out))
    assert code == 0, err
    done = read_trace(out / "q1" / "trace.jsonl")[-1]
    execution = done.final_output["execution"]
    assert [(s["route"], s.get("ok"), s.get("executed", True)) for s in execution["routes"]] == [
        ("local.flaky", False, True),
        ("mcp.x", None, False),
    ]
    # it moved on to the MCP route, which is handed on as when the router chooses it first
    assert (done.status, done.stop_reason, execution["fell_back"]) == ("completed", "route_decided", True)
    assert done.tool_calls == 1


def test_a_route_approval_binds_the_request_it_was_given_for(ran: Path, tmp_path: Path) -> None:
    router = _router(
        tmp_path,
        "prod",
        [
            "{route_id: local.mail, kind: local_tool, target: send_mail, owner: o, p95_latency_ms: 10, quality: 0.9, effect: external_effect}",
        ],
    )
    ask = "effect: external_effect, environment: prod, max_latency_ms: 1000, max_cost_usd: 1, args: {q: hi}"
    mine = _requests(
        tmp_path, "mine.yaml", f"{{request_id: q1, text: mail my advisor, user_scope: [me], {ask}}}"
    )
    other = _requests(
        tmp_path, "other.yaml", f"{{request_id: q2, text: mail the dean, user_scope: [them], {ask}}}"
    )
    same_id = _requests(
        tmp_path, "same_id.yaml", f"{{request_id: q1, text: mail the dean, user_scope: [them], {ask}}}"
    )
    assert run_cli("route", router, mine, "--execute")[0] == 0
    (card,) = json.loads(run_cli("approvals", "list", "--json")[1])
    assert "mail my advisor" in card["inputs"][0]["excerpt"]
    assert run_cli("approvals", "approve", card["approval_id"], "--reviewer", "ana")[0] == 0
    # another request with the same tool and arguments (other id, or same id and other input) asks anew
    for requests in (other, same_id):
        code, printed, err = run_cli("route", router, requests, "--execute")
        assert code == 0 and "waits for approval" in printed, err
    assert _calls(ran) == []
    cards = json.loads(run_cli("approvals", "list", "--json")[1])
    assert [(c["status"], c["approval_id"] == card["approval_id"]) for c in cards] == [
        ("approved", True),
        ("pending", False),
        ("pending", False),
    ]
    # the request it was given for, run again, uses it
    code, printed, _ = run_cli("route", router, mine, "--execute")
    assert code == 0 and "local.mail → send_mail ok" in printed
    assert _calls(ran) == [{"q": "hi"}]
    assert [c["scope"].split(":")[:3] for c in cards] == [
        ["route", "prod", "q1"],
        ["route", "prod", "q2"],
        ["route", "prod", "q1"],
    ]
