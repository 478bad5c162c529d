"""``portagent approvals list|show|approve|reject|edit``: decide approval cards after the fact.

Works on ``$PORTAGENT_HOME/approvals.db`` (``--home`` overrides). A deferred run waits in
``waiting_approval`` until its card is decided here; a decision prints the one step that then carries on
what asked for the card (``runtime.resume.next_step``: ``portagent resume RUN`` for a command-line run, a
message on the task for an A2A task, the same tool call for an ``mcp serve`` client).

``show`` prints the card with its evidence: the run's user input(s) and earlier tool results (masked
excerpts), the run's spend so far, and what runs on approval (tool, effect, arguments, idempotency key).
``edit`` checks the edited arguments the way the resumed run will — the tool's input schema, the
policy (with the run's actor, scopes, env and context), the idempotency key — from the tool spec and
policy stored with the card when it was made, and refuses what the run would refuse.

Exit codes: 0 done · 1 the run would refuse the edited arguments (schema, policy or idempotency key;
one message naming every problem, the card stays pending) · 2 usage error: unknown approval id, a card that is not pending (already decided, expired), bad
``--args`` JSON.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

STATUSES = ("pending", "approved", "edited", "rejected", "expired", "superseded")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("approvals", help="list and decide approval cards (approve, reject, edit)")
    p.add_argument("--home", metavar="DIR", help="state folder (default: $PORTAGENT_HOME or ./.portagent)")
    asub = p.add_subparsers(dest="approvals_command", metavar="ACTION", required=True)

    ls = asub.add_parser("list", help="list approval cards (newest last)")
    ls.add_argument("--status", choices=STATUSES, help="only cards in this state")
    ls.add_argument("--scope", help="only cards of this run scope")
    ls.add_argument("--json", action="store_true", help="print JSON (one array)")

    show = asub.add_parser("show", help="show one card in full")
    show.add_argument("approval_id", metavar="ID")
    show.add_argument("--json", action="store_true", help="print the card as JSON")

    for name, text in (("approve", "approve a pending card"), ("reject", "reject a pending card")):
        d = asub.add_parser(name, help=text)
        d.add_argument("approval_id", metavar="ID")
        _decider_args(d)

    edit = asub.add_parser(
        "edit",
        help="approve a pending card with changed arguments (checked now: schema, policy, idempotency key)",
    )
    edit.add_argument("approval_id", metavar="ID")
    edit.add_argument(
        "--args",
        required=True,
        metavar="JSON",
        dest="new_args",
        help="the arguments to run instead, as a JSON object",
    )
    edit.add_argument(
        "--merge",
        action="store_true",
        help="merge --args into the proposed arguments instead of replacing them",
    )
    _decider_args(edit)


def _decider_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reviewer", default=None, help="who decides (default: $USER)")
    p.add_argument("--note", default="", help="a note kept on the card")


def run(args: argparse.Namespace) -> int:
    from portagent.core.home import APPROVALS_DB, portagent_home
    from portagent.tools.approvals import ApprovalStore

    home = portagent_home(args.home)
    path = home / APPROVALS_DB
    action = args.approvals_command
    if action == "edit":
        _parse_args_json(args.new_args)  # a usage error first, whatever the store holds
    if not path.exists():
        if action == "list":
            print("[]" if args.json else f"no approval cards (no store at {path})")
            return 0
        from portagent.contracts.errors import ApprovalError

        raise ApprovalError(
            f"unknown approval id {args.approval_id!r}: there is no approvals store at {path} "
            "(set PORTAGENT_HOME or --home to the folder the run used)"
        )
    store = ApprovalStore(path)
    try:
        return _dispatch(store, args)
    finally:
        store.close()


def _dispatch(store: Any, args: argparse.Namespace) -> int:
    action = args.approvals_command
    if action == "list":
        cards = store.list(status=args.status, scope=args.scope)
        if args.json:
            print(json.dumps([c.model_dump(mode="json") for c in cards], ensure_ascii=False, indent=2))
        else:
            print(_table(cards))
        return 0
    if action == "show":
        card = store.get(args.approval_id)
        if args.json:
            print(card.model_dump_json(indent=2))
        else:
            from portagent.tools.approvers import render_card

            print(render_card(card, store.consumed_by(card.approval_id)))
        return 0
    reviewer = args.reviewer or os.environ.get("USER") or "cli"
    if action == "approve":
        card = store.approve(args.approval_id, reviewer=reviewer, note=args.note)
    elif action == "reject":
        card = store.reject(args.approval_id, reviewer=reviewer, note=args.note)
    else:
        new_args = _parse_args_json(args.new_args)
        if args.merge:
            new_args = {**store.get(args.approval_id).args, **new_args}
        card = store.edit(args.approval_id, new_args, reviewer=reviewer, note=args.note)
    from portagent.runtime.resume import next_step
    from portagent.runtime.runstore import RUNS_DB

    # the step depends on what asked for the card (a CLI run, an A2A task, an mcp serve client)
    step = next_step(card, store.path.parent / RUNS_DB)
    print(f"{card.approval_id}: {card.status} by {card.reviewer}. Next: {step}.")
    return 0


def _parse_args_json(text: str) -> dict[str, Any]:
    from portagent.contracts.errors import UsageError

    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"--args is not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})") from None
    except RecursionError:
        raise UsageError("--args is nested too deeply to be tool arguments") from None
    if not isinstance(value, dict):
        raise UsageError(f"--args must be a JSON object, got {type(value).__name__}")
    if _depth(value) > MAX_ARGS_DEPTH:
        raise UsageError(f"--args is nested more than {MAX_ARGS_DEPTH} levels deep; tool arguments are not")
    return value


MAX_ARGS_DEPTH = 64
"""Nesting limit of ``--args`` (deeper values break schema checks and encoders further on)."""


def _depth(value: Any) -> int:
    """Nesting depth of a parsed JSON value, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict | list):
            deepest = max(deepest, d)
            if d <= MAX_ARGS_DEPTH:
                stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


def _table(cards: list[Any]) -> str:
    from portagent.core.terminal import printable

    if not cards:
        return "no approval cards"
    rows = [("ID", "STATUS", "TOOL", "SCOPE", "EXPIRES", "REASON")]
    rows += [
        (c.approval_id, c.status, c.tool, c.scope, c.expires_at, printable(c.reason[:60])) for c in cards
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join(
        "  ".join(v.ljust(w) for v, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1] for r in rows
    )
