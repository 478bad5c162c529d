"""``portagent record SUITE|AGENT --providers P[,P…] (--emulator [SCRIPT] | --live) [--out DIR]``.

Records cassettes into the DESIGN §6 layout, ``<out>/<suite>/<agent>@<version>/<case>/<provider>/
r<repeat>/``: for a suite, every case × provider × repeat × agent version with the case's context and
scripted approvals; for an agent spec, one case given by ``--case`` and ``--input``. ``--missing``
records only absent folders; ``--drifted`` replays each recorded folder and re-records the ones that
drift. Every new recording is replayed once (``--no-verify`` skips it). ``--executor ray [--address]``
makes each recording and each replay a Ray task (``runtime.ray_executor``). The suite's ``limits:``,
``--limit`` and ``--max-spend-usd`` hold recordings and their requests as for ``eval --live``
(``runtime.limits``; docs/scale.md). Exit 0 when everything asked
for was recorded, 1 when a recording failed, 2 on usage errors (``--live`` without the key).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # types only: the CLI loads the eval core when a command runs
    from portagent.contracts.loaded_suite import LoadedSuite
    from portagent.runtime.eval_plan import RunTask
    from portagent.runtime.record_tasks import RecordOnly, RecordOutcome


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "record",
        help="record cassettes for a suite (or one agent run)",
        description="Record cassettes (vendor HTTP or Claude transport, trace.jsonl, run.json) into "
        "<out>/<suite>/<agent>@<version>/<case>/<provider>/r<repeat>/.",
    )
    p.add_argument("target", help="suite file, or an agent spec (then --case and --input are required)")
    p.add_argument("--providers", action="append", metavar="P[,P…]", help="providers (default: the suite's)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--emulator",
        nargs="?",
        const="",
        metavar="SCRIPT",
        help="record against the emulator (default script: the suite's emulator_script)",
    )
    src.add_argument("--live", action="store_true", help="record the real vendor APIs (needs their API keys)")
    p.add_argument("--out", default="cassettes", metavar="DIR", help="cassette root (default: ./cassettes)")
    p.add_argument(
        "--record-mode",
        default="all",
        choices=["none", "once", "new_episodes", "all"],
        help="vcrpy record mode (default: all — a folder is re-recorded whole)",
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument("--missing", action="store_true", help="record only folders that are not recorded yet")
    which.add_argument("--drifted", action="store_true", help="re-record only folders whose replay drifts")
    p.add_argument("--case", action="append", dest="cases", metavar="ID", help="only this case (repeatable)")
    p.add_argument("--repeats", type=int, metavar="N", help="repeats to record (default: the suite's)")
    p.add_argument(
        "--workers", type=int, default=2, metavar="N", help="worker processes for replay checks (default 2)"
    )
    p.add_argument("--no-verify", action="store_true", help="do not replay each new recording to check it")
    p.add_argument(
        "--executor",
        choices=["local", "ray"],
        default="local",
        help="local: record in this process, replay checks in worker processes (default); ray: each "
        "recording and replay check a Ray task (the ray extra)",
    )
    p.add_argument(
        "--address",
        metavar="ADDR",
        help="with --executor ray: the Ray cluster to join (default: RAY_ADDRESS, else a local Ray "
        "with --workers CPUs)",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="refuse to re-record over a folder whose tools changed without a version bump "
        "(default: a warning)",
    )
    from portagent._cli.eval import add_scheduling_args

    add_scheduling_args(
        p, "recordings", "the recording (judges included)", "fail with the reason (their folders are kept)"
    )
    agent = p.add_argument_group("recording one agent run (TARGET is an agent spec)")
    agent.add_argument(
        "--input", action="append", metavar="TEXT", help="user message (repeat for multi-turn)"
    )
    agent.add_argument("--suite-id", default="adhoc", help="suite folder name in the layout (default: adhoc)")
    agent.add_argument("--scope", dest="scopes", action="append", default=[], help="actor scope (repeatable)")
    agent.add_argument("--env", default="dev", choices=["lab", "dev", "staging", "prod"])
    agent.add_argument(
        "--approver", default="auto-deny", help="auto-approve | auto-deny | defer (default auto-deny)"
    )


def _kind(path: Path) -> str | None:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    return data.get("kind") if isinstance(data, dict) else None


def _agent_suite(
    args: argparse.Namespace, target: Path, providers: list[str] | None, script: Path | None
) -> LoadedSuite:
    """A one-case suite around an agent spec, so suites and single runs share one code path."""
    from portagent.contracts.errors import UsageError
    from portagent.contracts.loaded_suite import LoadedSuite
    from portagent.contracts.suite import Case, RunContext, Suite

    if not args.cases or len(args.cases) != 1 or not args.input:
        raise UsageError("recording an agent spec needs --case ID (once) and --input TEXT")
    if not providers:
        raise UsageError("recording an agent spec needs --providers")
    if args.emulator is not None and script is None:
        raise UsageError("recording an agent spec against the emulator needs --emulator SCRIPT")
    msgs = args.input
    case = Case(
        case_id=args.cases[0],
        input=msgs[0] if len(msgs) == 1 else msgs,
        why_it_exists="recorded with portagent record",
        context=RunContext(env=args.env, scopes=args.scopes),
    )
    suite = Suite(
        suite_id=args.suite_id,
        dataset_version="adhoc",
        owner="adhoc",
        agent=str(target),
        providers=providers,
        cases=[case],
        approver=args.approver,
    )
    scripts = {case.case_id: script} if script else {}
    return LoadedSuite(target, suite, (case,), {"agent": target.resolve()}, scripts)


def run(args: argparse.Namespace) -> int:
    import dataclasses

    from portagent._cli.eval import check_spend, split_csv
    from portagent.contracts.errors import UsageError
    from portagent.core.files import not_a_folder

    # the arguments first: a usage mistake is answered before the run path is imported (1-2 s)
    target = Path(args.target)
    if not target.is_file():
        raise UsageError(f"{args.target}: no such suite or agent spec")
    blocker = not_a_folder(Path(args.out))
    if blocker is not None:
        raise UsageError(f"--out {args.out}: {blocker} is a file, not a folder")
    if args.repeats is not None and args.repeats < 1:
        raise UsageError(f"--repeats must be at least 1, got {args.repeats}")
    if args.workers < 1:
        raise UsageError(f"--workers must be at least 1, got {args.workers}")
    if args.address and args.executor != "ray":
        raise UsageError("--address names a Ray cluster: use it with --executor ray")
    check_spend(args.max_spend_usd)
    script = Path(args.emulator).resolve() if args.emulator else None
    if script is not None and not script.is_file():
        raise UsageError(f"--emulator {args.emulator}: emulator script not found")
    kind = _kind(target)
    if kind == "suite" and args.input:
        raise UsageError("--input is for recording an agent spec; a suite's cases give their own input")
    from portagent.contracts.loaded_suite import load_suite
    from portagent.evals.report_terminal import console
    from portagent.runtime.eval_plan import (
        check_live_keys,
        check_providers_installed,
        plan_runs,
        select_providers,
    )
    from portagent.runtime.record_tasks import record_tasks

    if args.executor == "ray":
        from portagent.runtime.ray_executor import require_ray

        require_ray()
    providers = split_csv(args.providers)
    if kind == "suite":
        loaded = load_suite(target)
    elif kind == "agent":
        loaded = _agent_suite(args, target, providers, script)
    else:
        raise UsageError(f"{args.target}: expected a suite (kind: suite) or an agent spec (kind: agent)")
    chosen = select_providers(loaded, providers)
    check_providers_installed(chosen)
    source: Literal["emulator", "live"] = "live" if args.live else "emulator"
    if args.live:
        check_live_keys(chosen, list(loaded.agents.values()))
    elif script is None:
        lacking = sorted({c.case_id for c in loaded.cases if c.case_id not in loaded.emulator_scripts})
        if lacking:
            raise UsageError(f"{target}: no emulator_script for {', '.join(lacking)}; give --emulator SCRIPT")
    # this process owns the cassette root until its recordings are placed: a second record (or an eval's
    # --out) aiming at it is refused (exit 2) before anything is read to be replaced or written
    from portagent.core.files import own_folder

    with own_folder(Path(args.out), "--out"):
        tasks = plan_runs(
            loaded,
            mode=source,
            providers=chosen,
            repeats=args.repeats,
            cassettes=args.out,
            case_ids=split_csv(args.cases, "--case"),
            check=False,
        )
        if script is not None:
            tasks = [dataclasses.replace(t, emulator_script=script) for t in tasks]
        only: RecordOnly = "missing" if args.missing else "drifted" if args.drifted else "all"
        out = console()
        if only != "missing":  # re-recording over a folder: did a tool change without a version bump?
            _check_tool_versions(tasks, strict=args.strict, out=out)
        out.print(
            f"recording {len(tasks)} run folder(s) of {loaded.suite.suite_id} ({source}) into {args.out}/",
            markup=False,
        )
        counts = {"recorded": 0, "skipped": 0, "failed": 0}

        def show(o: RecordOutcome) -> None:
            counts[o.action] += 1
            if o.action == "skipped" and only == "missing":
                return
            colour = {"recorded": "green", "skipped": "dim", "failed": "red"}[o.action]
            out.print(f"[{colour}]{o.action:8}[/{colour}] {o.task.label}  ", end="")
            out.print(shown_detail(o), markup=False, highlight=False)

        from portagent.runtime.limits import Scheduler, merged_limits

        scheduler = Scheduler(
            merged_limits(loaded.suite.limits, args.limit),
            max_spend_usd=args.max_spend_usd,
            live=args.live,
            whole="the recording",
        )
        made = _absent_folders(Path(args.out))  # this invocation creates them: removed again if left empty
        try:
            record_tasks(
                tasks,
                source=source,
                only=only,
                record_mode=args.record_mode,
                emulator_script=script,
                verify=not args.no_verify,
                workers=args.workers,
                on_result=show,
                executor=args.executor,
                address=args.address,
                scheduler=scheduler,
            )
        finally:
            scheduler.close()
            _remove_if_empty(made)
        out.print(
            f"{counts['recorded']} recorded, {counts['skipped']} skipped, {counts['failed']} failed",
            markup=False,
        )
        return 1 if counts["failed"] else 0


def shown_detail(o: RecordOutcome) -> str:
    """The first line of an outcome's detail, whole (a refusal's remedy is at its end), naming the run's
    folder where the detail names its staging folder (``.r0.stage-…``: gone once the recording is placed
    or discarded)."""
    import re

    if not o.detail:
        return ""
    line = o.detail.splitlines()[0]
    folder = o.task.cassette
    if folder is not None:
        staging = re.escape(str(folder.parent / f".{folder.name}.stage-")) + r"[^/\\\s]*"
        line = re.sub(staging, lambda _m: str(folder), line)
    return line if len(line) <= 2000 else line[:2000] + " …"


def _absent_folders(out: Path) -> list[Path]:
    """``out`` and those of its parents that do not exist yet, deepest first."""
    absent = []
    for d in (out, *out.parents):
        if d.exists():
            break
        absent.append(d)
    return absent


def _remove_if_empty(folders: list[Path]) -> None:
    """Remove the folders this record created (deepest first) while they are empty: a recording that
    failed or was refused leaves no empty ``--out`` tree (its layout folders are pruned by
    ``runtime.record``). A folder that existed before is never touched."""
    for d in folders:
        try:
            d.rmdir()  # only an empty folder goes
        except FileNotFoundError:
            continue
        except OSError:
            return


def _check_tool_versions(tasks: list[RunTask], *, strict: bool, out: Any) -> None:
    """Compare the tools each recorded folder's ``run.json`` (and trace) holds with the current specs.
    A tool changed without a version bump is a warning, or with ``strict`` a ``RecordingError``
    raised before anything is written; a tool whose recorded version is unknown is said so."""
    from portagent.contracts.bundle import load_agent
    from portagent.contracts.errors import RecordingError
    from portagent.evals.tool_versions import (
        ToolChange,
        current_tools,
        read_folder_tools,
        unversioned_changes,
    )

    current: dict[Path, Any] = {}
    found: dict[ToolChange, list[str]] = {}
    for t in tasks:
        recorded = read_folder_tools(t.cassette) if t.cassette is not None else None
        if recorded is None:
            continue
        if t.agent.path not in current:
            current[t.agent.path] = current_tools(load_agent(t.agent.path))
        for change in unversioned_changes(recorded, current[t.agent.path], since="the recording"):
            found.setdefault(change, []).append(t.label)
    blocking = [c.message for c in found if strict and c.kind == "unversioned"]
    for c, labels in found.items():
        if c.message not in blocking:
            out.print(
                f"warning: {c.message} ({len(labels)} recorded folder(s), e.g. {labels[0]})", markup=False
            )
    if blocking:
        raise RecordingError(
            "refusing to re-record (--strict): "
            + "; ".join(blocking)
            + ". Bump the tool's version in its spec, or record without --strict"
        )
