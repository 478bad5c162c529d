"""``portagent memory list|show|search|add|import|edit|delete|restore|pause|resume``: the human controls of the memory store.

Works on ``$PORTAGENT_HOME/memory.db`` (``--home`` overrides), the store the memory tools (``remember``,
``recall``, ``forget``; docs/memory.md) write and read through the gateway.

Exit codes: 0 done · 1 ``import`` flagged some notes (not stored) · 2 usage error: unknown memory id, a
record without source/scope/expiry/confidence, bad values, a missing folder, a damaged store.
"""

from __future__ import annotations

import argparse
import getpass
import json
from typing import Any

SCOPES = ("user", "agent", "project")
TYPES = ("episodic", "semantic", "procedural", "artifact")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("memory", help="view, correct, delete and pause the governed memory store")
    p.add_argument("--home", metavar="DIR", help="state folder (default: $PORTAGENT_HOME or ./.portagent)")
    msub = p.add_subparsers(dest="memory_command", metavar="ACTION", required=True)

    ls = msub.add_parser("list", help="list memories (oldest first)")
    ls.add_argument("--scope", choices=SCOPES)
    ls.add_argument("--owner")
    ls.add_argument("--json", action="store_true", help="print JSON (one array)")

    show = msub.add_parser("show", help="one memory with its source and last retrieval")
    show.add_argument("memory_id", metavar="ID")
    show.add_argument("--json", action="store_true")

    search = msub.add_parser("search", help="rank memories for a query as recall would, with explanations")
    search.add_argument("query")
    search.add_argument("-k", type=int, default=5)
    search.add_argument("--include-stale", action="store_true", help="also expired, superseded, retired ones")
    search.add_argument("--json", action="store_true")

    add = msub.add_parser(
        "add", help="store a memory by hand (source, scope, expiry and confidence required)"
    )
    add.add_argument("--statement", required=True)
    add.add_argument("--source", required=True, help="file:line, URL, or who said it")
    add.add_argument("--scope", required=True, choices=SCOPES)
    add.add_argument("--expires", required=True, metavar="DATE|never")
    add.add_argument("--confidence", required=True, type=float)
    add.add_argument("--type", choices=TYPES, default="semantic")
    add.add_argument("--owner", help="default: $USER for user/project scope; required for agent scope")
    add.add_argument("--supersedes", metavar="ID")

    imp = msub.add_parser(
        "import",
        help="ingest Markdown notes (an Obsidian vault) whose front matter has type, status, date, source",
        description="Each *.md under DIR with front matter giving type (a memory type), status (active, "
        "approved, final or published), date and source becomes one record; every other note is flagged "
        "and not stored. Exit 0: all stored · 1: some notes flagged · 2: usage error.",
    )
    imp.add_argument(
        "folder", metavar="DIR", help="the notes' folder (searched recursively; .hidden skipped)"
    )
    imp.add_argument("--scope", required=True, choices=SCOPES)
    imp.add_argument("--owner", help="default: $USER for user/project scope; required for agent scope")
    until = imp.add_mutually_exclusive_group(required=True)
    until.add_argument(
        "--expires", metavar="DATE|never", help="every record's expiry (a note's 'expires:' wins)"
    )
    until.add_argument(
        "--ttl-days", type=int, metavar="N", help="each record expires N days after its note's date"
    )
    imp.add_argument("--confidence", required=True, type=float, help="0-1 (a note's 'confidence:' wins)")
    imp.add_argument("--dry-run", action="store_true", help="check and report, write nothing")
    imp.add_argument("--json", action="store_true", help="print JSON: stored, unchanged, flagged")

    edit = msub.add_parser("edit", help="correct a memory (re-validated)")
    edit.add_argument("memory_id", metavar="ID")
    edit.add_argument("--statement")
    edit.add_argument("--source")
    edit.add_argument("--expires", metavar="DATE|never")
    edit.add_argument("--confidence", type=float)
    edit.add_argument("--type", choices=TYPES)

    delete = msub.add_parser("delete", help="delete a memory for good")
    delete.add_argument("memory_id", metavar="ID")

    restore = msub.add_parser("restore", help="undo an agent's forget: the memory is recalled again")
    restore.add_argument("memory_id", metavar="ID")

    msub.add_parser("pause", help="refuse every memory write (remember, forget, add) until resume")
    msub.add_parser("resume", help="allow memory writes again")


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from portagent.contracts.errors import UsageError
    from portagent.contracts.memory import MemoryWrite
    from portagent.core.home import portagent_home
    from portagent.core.terminal import printable
    from portagent.tools.memory_store import MEMORY_DB, MemoryStore

    home = portagent_home(args.home)
    path = home / MEMORY_DB
    action = args.memory_command
    if action == "import":
        return _import(args, path)
    if not path.exists() and action in ("list", "search"):
        print("[]" if args.json else f"no memories in {home}")
        return 0
    if not path.exists() and action in ("show", "edit", "delete", "restore"):
        raise UsageError(f"no memory {args.memory_id!r} in {home}: 'portagent memory list' shows them")
    store = MemoryStore(path)
    try:
        if action == "list":
            records = store.records(scope=args.scope, owner=args.owner)
            if args.json:
                print(json.dumps([r.model_dump(mode="json") for r in records], indent=2, ensure_ascii=False))
            elif not records:
                print(f"no memories in {home}")
            for r in [] if args.json else records:
                print(printable(f"{r.memory_id}  {r.scope}:{r.owner}  {r.status:<10}  {r.statement}"))
            if store.paused and not args.json:
                print("(memory writes are paused: 'portagent memory resume')")
            return 0
        if action == "show":
            record = store._require(args.memory_id)
            if args.json:
                print(record.model_dump_json(indent=2))
            else:
                for key, value in record.model_dump().items():
                    print(printable(f"{key:<16} {value}"))
            return 0
        if action == "search":
            if args.k < 1:
                raise UsageError("-k must be at least 1")
            found = store.search(args.query, k=args.k, include_stale=args.include_stale, touch=False)
            if args.json:
                print(json.dumps([f.model_dump(mode="json") for f in found], indent=2, ensure_ascii=False))
            elif not found:
                print("no memory matches")
            for f in [] if args.json else found:
                print(printable(f"{f.score:.3f}  {f.record.memory_id}  {f.record.statement}"))
                print(
                    printable(f"       {f.explanation}; last retrieved {f.record.last_retrieved or 'never'}")
                )
            return 0
        if action == "add":
            if args.scope == "agent" and not args.owner:
                raise UsageError("--owner AGENT is required for an agent-scope memory")
            try:
                write = MemoryWrite(
                    statement=args.statement,
                    source=args.source,
                    scope=args.scope,
                    expires_at=args.expires,
                    confidence=args.confidence,
                    type=args.type,
                    supersedes=args.supersedes,
                )
            except ValidationError as e:
                raise UsageError(_first_problem(e)) from None
            owner = args.owner or _user()
            done = store.write_fact(write, owner=owner, written_by=f"cli:{_user()}")
            record = done.record
            said = {
                "stored": "",
                "updated": "  ("
                + ", ".join(f"{k} {old} -> {new}" for k, (old, new) in done.changes.items())
                + ")",
                "unchanged": "  (this fact from this source was already stored so)",
            }[done.outcome]
            print(f"{done.outcome} {record.memory_id}  {record.scope}:{record.owner}{said}")
            return 0
        if action == "edit":
            changes: dict[str, Any] = {
                k: v
                for k, v in (
                    ("statement", args.statement),
                    ("source", args.source),
                    ("expires_at", args.expires),
                    ("confidence", args.confidence),
                    ("type", args.type),
                )
                if v is not None
            }
            if not changes:
                raise UsageError(
                    "nothing to change: give --statement, --source, --expires, --confidence or --type"
                )
            try:
                record = store.edit(args.memory_id, **changes)
            except ValidationError as e:
                raise UsageError(_first_problem(e)) from None
            moved = (
                ""
                if record.memory_id == args.memory_id
                else f" (now {record.memory_id}: its content changed)"
            )
            print(f"edited {args.memory_id}{moved}")
            return 0
        if action == "delete":
            record = store.delete(args.memory_id)
            print(printable(f"deleted {record.memory_id}  ({record.statement})"))
            return 0
        if action == "restore":
            record = store.restore(args.memory_id)
            late = " (its expiry has passed: 'portagent memory edit --expires' to recall it)"
            print(
                printable(f"restored {record.memory_id}  ({record.statement})")
                + (late if record.expired(store.clock.now()) else "")
            )
            return 0
        if action in ("pause", "resume"):
            store.set_paused(action == "pause")
            print("memory writes paused" if action == "pause" else "memory writes resumed")
            return 0
        raise AssertionError(action)
    finally:
        store.close()


def _import(args: argparse.Namespace, path: Any) -> int:
    """``memory import``: check every note first, then write the ready ones (exit 1 when any was flagged)."""
    from pathlib import Path

    from portagent.contracts.errors import UsageError
    from portagent.core.terminal import printable
    from portagent.tools.memory_import import apply_import, plan_import
    from portagent.tools.memory_store import MemoryStore

    if args.scope == "agent" and not args.owner:
        raise UsageError("--owner AGENT is required for an agent-scope memory")
    owner = args.owner or _user()
    folder = Path(args.folder).expanduser()
    # the store is created only to write to it: without one every note is new, and a dry run, a usage
    # error or an import with nothing to store leaves no memory.db behind
    store = MemoryStore(path) if path.exists() else None
    try:
        plan = plan_import(
            folder,
            scope=args.scope,
            owner=owner,
            confidence=args.confidence,
            expires=args.expires,
            ttl_days=args.ttl_days,
            store=store,
        )
        if not args.dry_run and plan.to_write:
            store = store or MemoryStore(path)
            apply_import(plan, store, written_by=f"cli:{_user()}")
    finally:
        if store is not None:
            store.close()
    stored = [
        {
            "note": n.note,
            "memory_id": n.memory_id,
            "statement": n.write.statement,
            "source": n.write.source,
            "supersedes": n.write.supersedes,
        }
        for n in plan.to_write
        if not n.update
    ]
    updated: list[dict[str, Any]] = [
        {"note": n.note, "memory_id": n.memory_id, "changes": n.update} for n in plan.to_write if n.update
    ]
    unchanged = [{"note": n.note, "memory_id": n.memory_id} for n in plan.ready if n.unchanged]
    flagged = [{"note": f.note, "reason": f.reason} for f in plan.flagged]
    if args.json:
        doc = {
            "folder": str(folder),
            "scope": args.scope,
            "owner": owner,
            "dry_run": args.dry_run,
            "stored": stored,
            "updated": updated,
            "unchanged": unchanged,
            "flagged": flagged,
        }
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        verb = "would store" if args.dry_run else "stored"
        for s in stored:
            replaces = f"  (supersedes {s['supersedes']})" if s["supersedes"] else ""
            print(printable(f"{verb:<11} {s['memory_id']}  {s['note']}  {s['statement']}{replaces}"))
        for u in updated:
            changes = ", ".join(f"{k}={v}" for k, v in u["changes"].items())
            done = "would update" if args.dry_run else "updated"
            print(printable(f"{done:<11} {u['memory_id']}  {u['note']}  {changes}"))
        for n in unchanged:
            print(printable(f"{'unchanged':<11} {n['memory_id']}  {n['note']}  (already stored)"))
        for f in flagged:
            print(printable(f"{'flagged':<11} {f['note']}  {f['reason']}"))
        total = len(stored) + len(updated) + len(unchanged) + len(flagged)
        print(
            f"{total} notes: {len(stored)} {verb}, "
            + (f"{len(updated)} {'would update' if args.dry_run else 'updated'}, " if updated else "")
            + f"{len(unchanged)} unchanged, {len(flagged)} flagged"
            + (" (flagged notes are not stored)" if flagged else "")
        )
    return 1 if flagged else 0


def _first_problem(e: Any) -> str:
    first = e.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "memory"
    names = {
        "expires_at": "--expires",
        "statement": "--statement",
        "source": "--source",
        "confidence": "--confidence",
    }
    return f"{names.get(where, where)}: {first['msg']}"


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return "user"
