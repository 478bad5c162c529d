"""``portagent sessions list|show|export|clear``: inspect, export and clear conversation threads.

Threads live in ``$PORTAGENT_HOME/sessions.db`` (``--home`` overrides); ``portagent run … --session ID``
continues one (docs/sessions.md).

Exit codes: 0 done · 2 usage error: unknown session id, a damaged store, an output file that cannot be
written.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("sessions", help="list, show, export and clear conversation threads (run --session)")
    p.add_argument("--home", metavar="DIR", help="state folder (default: $PORTAGENT_HOME or ./.portagent)")
    ssub = p.add_subparsers(dest="sessions_command", metavar="ACTION", required=True)

    ls = ssub.add_parser("list", help="list threads (most recently updated last)")
    ls.add_argument("--json", action="store_true", help="print JSON (one array)")

    show = ssub.add_parser("show", help="show a thread's turns")
    show.add_argument("session_id", metavar="ID")
    show.add_argument("--json", action="store_true", help="print the turns as JSON")

    export = ssub.add_parser("export", help="export a thread as portable JSON (or Markdown for a person)")
    export.add_argument("session_id", metavar="ID")
    export.add_argument("--out", metavar="FILE", help="write to FILE (default: standard output)")
    export.add_argument("--format", choices=("json", "markdown"), default="json")
    export.add_argument(
        "--handoff",
        action="store_true",
        help="export a handoff package compacted from the thread's traces, validated and checked against "
        "them (docs/handoff.md); exit 1, nothing written, when it is incomplete",
    )
    export.add_argument("--owner", help="with --handoff: who owns the work handed over (required)")
    export.add_argument(
        "--done-when", action="append", default=[], metavar="TEXT", help="with --handoff: a closing criterion"
    )
    export.add_argument(
        "--limit", action="append", default=[], metavar="TEXT", help="with --handoff: a limit"
    )
    export.add_argument(
        "--decision",
        action="append",
        default=[],
        metavar="DECISION: REASON",
        help="with --handoff: a decision and its reason",
    )

    check = ssub.add_parser(
        "check-handoff", help="validate a handoff package and check every claim against the traces it names"
    )
    check.add_argument("file", metavar="FILE")

    clear = ssub.add_parser("clear", help="delete a thread's turns (or every thread with --all)")
    target = clear.add_mutually_exclusive_group(required=True)
    target.add_argument("session_id", metavar="ID", nargs="?")
    target.add_argument("--all", action="store_true", help="delete every thread")


def run(args: argparse.Namespace) -> int:
    from portagent.contracts.errors import UsageError
    from portagent.core.home import portagent_home
    from portagent.core.terminal import printable
    from portagent.runtime.session_store import SESSIONS_DB, SqliteSessionStore, check_session_id

    if args.sessions_command == "check-handoff":
        return _check_handoff(args.file)
    sid: str | None = getattr(args, "session_id", None)
    if sid is not None:
        check_session_id(sid)
    home = portagent_home(args.home)
    path = home / SESSIONS_DB
    action = args.sessions_command
    if not path.exists():
        if action == "list":
            print("[]" if args.json else f"no sessions in {home}")
            return 0
        if action == "clear" and args.all:
            print("cleared 0 sessions")
            return 0
        raise UsageError(_unknown(sid or "", home))
    store = SqliteSessionStore(path)
    try:
        if action == "list":
            infos = store.sessions()
            if args.json:
                print(json.dumps([i.model_dump(mode="json") for i in infos], indent=2))
            elif not infos:
                print(f"no sessions in {home}")
            else:
                for i in infos:
                    print(
                        f"{i.session_id}  {i.turns} turns  providers={','.join(i.providers)}  updated {i.updated_at}"
                    )
            return 0
        if action == "clear" and args.all:
            infos = store.sessions()
            for i in infos:
                store.clear(i.session_id)
            print(f"cleared {len(infos)} sessions")
            return 0
        assert sid is not None
        turns = store.turns(sid)
        if not turns:
            raise UsageError(_unknown(sid, home))
        if action == "show":
            if args.json:
                print(json.dumps([t.model_dump(mode="json") for t in turns], indent=2, ensure_ascii=False))
            else:
                for t in turns:
                    by = f" ({t.provider}, {t.run_id})" if t.role == "assistant" else ""
                    print(f"#{t.seq} {t.role}{by}  {t.created_at}")
                    print("   " + printable(t.content, lines=True).replace("\n", "\n   "))
            return 0
        if action == "export" and args.handoff:
            return _export_handoff(sid, turns, args)
        if action == "export":
            return _export(sid, turns, args.format, args.out)
        if action == "clear":
            n = store.clear(sid)
            print(f"cleared session {sid} ({n} turns)")
            return 0
        raise AssertionError(action)
    finally:
        store.close()


def _unknown(session_id: str, home: Path) -> str:
    return f"no session {session_id!r} in {home}: 'portagent sessions list' shows the threads there"


def _export(session_id: str, turns: list[Any], fmt: str, out: str | None) -> int:
    from portagent.contracts.errors import UsageError
    from portagent.core.files import write_text_atomic
    from portagent.runtime.sessions import export_session

    if fmt == "json":
        text = json.dumps(export_session(session_id, turns), indent=2, ensure_ascii=False) + "\n"
    else:
        lines = [f"# Session {session_id}", ""]
        for t in turns:
            who = "User" if t.role == "user" else f"Assistant ({t.provider}, run {t.run_id})"
            lines += [f"## {t.seq}. {who}", "", t.content, ""]
        text = "\n".join(lines)
    if out is None:
        print(text, end="")
        return 0
    if not out.strip():
        raise UsageError("--out: the file name is empty")
    path = Path(out)
    if path.is_dir():
        raise UsageError(f"--out {out}: is a folder; give a file name")
    try:
        write_text_atomic(path, text)
    except OSError as e:
        raise UsageError(f"--out {out}: cannot write ({e.strerror or e})") from None
    print(f"exported session {session_id} ({len(turns)} turns) to {out}")
    return 0


def _export_handoff(session_id: str, turns: list[Any], args: argparse.Namespace) -> int:
    import sys

    from portagent.contracts.errors import UsageError
    from portagent.core.clock import SystemClock
    from portagent.runtime.sessions import session_events, transcript_hash
    from portagent.tracing.handoff import compact, validate, verify

    if not args.owner or not args.owner.strip():
        raise UsageError("--handoff needs --owner: who owns the work handed over")
    decisions = []
    for d in args.decision:
        decision, sep, reason = d.partition(":")
        if not sep or not decision.strip() or not reason.strip():
            raise UsageError(f"--decision {d!r}: write it as 'DECISION: REASON'")
        decisions.append((decision.strip(), reason.strip()))
    events, paths = session_events(turns)
    package = compact(
        events,
        owner=args.owner.strip(),
        clock=SystemClock(),
        done_when=[t for t in args.done_when if t.strip()],
        limits=[t for t in args.limit if t.strip()],
        decisions=decisions,
        trace_refs=paths,
        session=(session_id, transcript_hash(turns)),
    )
    problems = validate(package) + verify(package, events)
    if problems:
        sys.stderr.write(f"portagent: handoff incomplete: {'; '.join(problems)} (nothing written)\n")
        return 1
    text = package.model_dump_json(indent=2) + "\n"
    if args.out is None:
        print(text, end="")
        return 0
    _write(args.out, text)
    print(f"exported the handoff of session {session_id} ({len(package.runs)} runs) to {args.out}")
    return 0


def _check_handoff(file: str) -> int:
    import sys

    from pydantic import ValidationError

    from portagent.contracts.errors import UsageError
    from portagent.contracts.handoff import HandoffPackage
    from portagent.tracing.handoff import validate, verify
    from portagent.tracing.timeline import load_trace_file

    path = Path(file)
    if not path.is_file():
        raise UsageError(f"{file}: handoff file not found")
    try:
        package = HandoffPackage.model_validate_json(path.read_bytes())
    except ValidationError as e:
        first = e.errors(include_url=False)[0]
        where = ".".join(str(x) for x in first["loc"]) or "(file)"
        raise UsageError(f"{file}: not a handoff package: {where}: {first['msg']}") from None
    events: list[Any] = []
    for artifact in package.artifacts:
        if artifact.kind == "trace":
            trace = Path(artifact.ref.removeprefix("trace:"))
            if not trace.is_file():
                raise UsageError(f"{file}: the trace {trace} it names is not there")
            events += load_trace_file(trace)
    problems = validate(package) + verify(package, events)
    if problems:
        sys.stderr.write(f"portagent: {file}: {len(problems)} problem(s): {'; '.join(problems)}\n")
        return 1
    print(
        f"ok       {file}: every claim is backed by the trace ({len(events)} events, {len(package.runs)} runs)"
    )
    return 0


def _write(out: str, text: str) -> None:
    from portagent.contracts.errors import UsageError
    from portagent.core.files import write_text_atomic

    if not out.strip():
        raise UsageError("--out: the file name is empty")
    path = Path(out)
    if path.is_dir():
        raise UsageError(f"--out {out}: is a folder; give a file name")
    try:
        write_text_atomic(path, text)
    except OSError as e:
        raise UsageError(f"--out {out}: cannot write ({e.strerror or e})") from None
