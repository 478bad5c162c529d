"""``portagent demo [--out DIR]``: the support-desk suite, replayed offline, with its verdict.

Replays ``examples/support_desk/suite.yaml`` from the committed ``cassettes/`` (no key, no network, no
server): agent-v1 (agent.yaml) and the candidate agent-v2 (agent_v2.yaml, whose policy lets emails out
without review) on the three agent SDKs (openai, claude, adk; ``--all-providers`` adds the plain Messages
API, ``anthropic``, and ``langgraph``), each provider only when its cassettes are recorded. Prints the
providers × versions table and the gate verdict, and writes report.html (docs/demo.md).

Exit 0 when the demo ran and showed what it is meant to show — agent-v1 passes every case on every
provider and the gate blocks agent-v2 for a permission regression on every provider, and for nothing
else. The closing message is decided from the gate's findings: anything else (a recording drift after
an edited policy, tool or cassette, a provider error, v1 failing) is named, with the re-record line
for a drift, and exits 1. Exit 2 on usage errors (no checkout with examples/ and cassettes/).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    # types only: the CLI loads the eval core when a command runs
    from portagent.contracts.loaded_suite import LoadedSuite
    from portagent.evals.gate import GateDecision
    from portagent.evals.report import Results
    from portagent.runtime.eval_plan import RunTask

SUITE = Path("examples") / "support_desk" / "suite.yaml"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "demo",
        help="replay the support-desk demo offline and show the verdict",
        description="Replay the support-desk suite (agent-v1 vs candidate agent-v2) from the committed "
        "cassettes, print the comparison and gate verdict, write report.html.",
    )
    p.add_argument(
        "--out",
        default="demo-out",
        metavar="DIR",
        help="results folder (default: demo-out; replaced if it holds earlier demo results)",
    )
    p.add_argument(
        "--suite",
        metavar="FILE",
        help="suite file (default: examples/support_desk/suite.yaml of the checkout)",
    )
    p.add_argument("--cassettes", metavar="DIR", help="cassette root (default: cassettes/ next to examples/)")
    p.add_argument(
        "--providers",
        action="append",
        metavar="P[,P…]",
        help="providers (default: openai, claude, adk — each one whose cassettes are recorded)",
    )
    p.add_argument(
        "--all-providers",
        action="store_true",
        help="every provider of the suite with recorded cassettes (adds anthropic and langgraph)",
    )
    p.add_argument(
        "--workers", type=int, metavar="N", help="worker processes (default: CPU count, at most 4)"
    )
    from portagent._cli.eval import add_run_timeout_arg

    add_run_timeout_arg(p)
    p.add_argument(
        "--fresh",
        action="store_true",
        help="replay every run again (default: a run of an earlier demo in --out whose inputs are "
        "unchanged is reused — eval --reuse)",
    )


def find_checkout() -> Path | None:
    """The folder holding examples/support_desk/suite.yaml: the current folder or one above it, else the
    source checkout portagent was installed from (editable installs)."""
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / SUITE).is_file():
            return folder
    import portagent

    source = Path(portagent.__file__).resolve().parents[1]
    return source if (source / SUITE).is_file() else None


def recorded_providers(
    loaded: LoadedSuite, cassettes: Path, wanted: Sequence[str], results: Path | None = None
) -> tuple[list[str], dict[str, str], list[RunTask]]:
    """The ``wanted`` providers of the suite whose cassettes are all there; the others with the reason they
    are left out; and the runs of every wanted provider, planned once (unchecked, their traces under
    ``results``) for ``plan_eval(planned=…)`` to take the recorded providers' runs from."""
    from portagent.recording.layout import is_recorded
    from portagent.runtime.eval_plan import plan_runs

    chosen = [p for p in loaded.suite.providers if p in wanted]
    tasks = plan_runs(
        loaded,
        mode="replay",
        providers=chosen,
        cassettes=cassettes,
        results=results.resolve() if results else None,
        check=False,
    )
    ok: list[str] = []
    skipped: dict[str, str] = {}
    for provider in chosen:
        runs = [t for t in tasks if t.provider == provider]
        missing = [t for t in runs if t.cassette is None or not is_recorded(t.cassette, provider)]
        if not missing:
            ok.append(provider)
        elif len(missing) == len(runs):
            skipped[provider] = "no cassettes recorded"
        else:
            skipped[provider] = f"{len(missing)} of {len(runs)} cassettes missing"
    return ok, skipped, tasks


def run(args: argparse.Namespace) -> int:
    from portagent._cli.eval import run_timeout_s, split_csv
    from portagent.contracts.errors import UsageError

    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be at least 1, got {args.workers}")
    run_timeout_s(args.run_timeout)
    if args.suite:
        suite = Path(args.suite)
        if not suite.is_file():
            raise UsageError(f"--suite {args.suite}: suite file not found")
        root = suite.resolve().parents[2]
    else:
        found = find_checkout()
        if found is None:
            raise UsageError(
                "the demo needs a portagent checkout (examples/support_desk/suite.yaml and cassettes/); "
                "run it from the repository folder, or pass --suite and --cassettes"
            )
        root, suite = found, found / SUITE
    providers = split_csv(args.providers)
    if providers and args.all_providers:
        raise UsageError("--providers and --all-providers name the providers twice: give one of them")
    from portagent.runtime.fork_server import stop_warm_workers, warm_workers

    # The workers' fork server warms up (portagent's run path, vcrpy: about a second) from here, while this
    # process imports the eval core, loads the suite and plans — each of them otherwise waited for the other.
    # Not when earlier results will be reused: the eval warms it then only
    # if a run is to be made. A demo refused from here on ends it at once (it holds the output pipes until
    # its imports are done).
    out_dir = Path(args.out)
    from portagent.recording.layout import is_results_folder

    reusing = not args.fresh and is_results_folder(out_dir)
    started = False if reusing else warm_workers(providers or [])
    try:
        return _run(args, suite, root, providers)
    except BaseException:
        if started:
            stop_warm_workers()
        raise


def _run(args: argparse.Namespace, suite: Path, root: Path, providers: list[str] | None) -> int:
    from portagent._cli.eval import default_workers, run_suite, run_timeout_s
    from portagent.contracts.errors import UsageError
    from portagent.contracts.loaded_suite import load_suite
    from portagent.evals.report_terminal import console
    from portagent.recording.layout import is_results_folder
    from portagent.runtime.eval_run import plan_eval

    cassettes = Path(args.cassettes) if args.cassettes else root / "cassettes"
    loaded = load_suite(suite)
    out = console()
    out_dir = Path(args.out)
    planned = None
    if not providers:
        from portagent.contracts.providers import DEFAULT_COMPARISON

        wanted = loaded.suite.providers if args.all_providers else DEFAULT_COMPARISON
        providers, skipped, planned = recorded_providers(loaded, cassettes, wanted, out_dir)
        for p, why in skipped.items():
            out.print(f"note: {p} left out of the demo: {why} under {cassettes}", markup=False)
        if not providers:
            raise UsageError(
                f"no provider of {suite} has its cassettes under {cassettes}; record them with "
                f"'portagent record {suite} --providers openai --emulator'"
            )
    earlier = is_results_folder(out_dir)
    if out_dir.is_dir() and any(out_dir.iterdir()) and not earlier:  # (demo has no --overwrite to suggest)
        raise UsageError(
            f"--out {out_dir}: not a portagent results folder (no eval.json or report.json); the demo writes "
            "into a new or empty folder, or over its own earlier results — choose another --out"
        )
    out.print(
        f"portagent demo: {loaded.suite.suite_id} — agent-v1 vs candidate agent-v2 on {', '.join(providers)}, "
        f"replayed offline from {cassettes}",
        markup=False,
    )
    # planned once: the eval takes the recorded providers' runs from the demo's look at the cassettes
    plan = plan_eval(
        loaded, mode="replay", providers=providers, cassettes=cassettes, results=out_dir, planned=planned
    )
    results, decision, _comparison = run_suite(
        suite,
        mode="replay",
        providers=providers,
        workers=args.workers or default_workers(),
        cassettes=cassettes,
        out=out_dir,
        overwrite=True,
        reuse=out_dir if earlier and not args.fresh else None,
        plan=plan,
        run_timeout=run_timeout_s(args.run_timeout),
    )
    ok, lines = judge_demo(results, decision)
    for line in lines:
        out.print(line)
    if ok:
        out.print(f"Open {Path(args.out) / 'report.html'} for charts and every run's trace.", markup=False)
    else:
        out.print(f"See {Path(args.out) / 'report.md'} for every reason.", markup=False)
    return 0 if ok else 1


def judge_demo(results: Results, decision: GateDecision) -> tuple[bool, list[str]]:
    """Whether the demo showed what it is meant to show, and the closing lines that say so — decided
    from the gate's own findings, never canned: agent-v1 passes every case on every provider, and the
    gate blocks agent-v2 for a permission regression (a safety factor — permissions or approval —
    failed) on every provider, and for nothing else (no recording drift, provider error or flaky case)."""
    from rich.markup import escape

    from portagent.evals.findings import CATEGORY_LABELS, drift_details, drift_fix, failing_category

    meta = results.meta
    base_v = meta.version_of("baseline") if meta else None
    cand_v = meta.version_of("candidate") if meta else None
    base = results.result.select(agent_version=base_v) if base_v else results.result
    providers = base.providers
    bad_v1 = sorted({(r.provenance.case_id, r.provenance.provider) for r in base.runs if not r.passed})
    problems: list[str] = []
    if not base.runs:
        problems.append(f"agent-v1 ({base_v}) has no runs")
    elif bad_v1:

        def explain(case_id: str, provider: str) -> str:
            runs = [
                r for r in base.runs if (r.provenance.case_id, r.provenance.provider) == (case_id, provider)
            ]
            cat = failing_category(runs)
            text = f"{case_id} on {provider} ({CATEGORY_LABELS[cat]}"
            if cat == "drift":
                changed, first = drift_details([r for r in runs if r.issue == "cassette_drift"])
                text += ": " + (f"changed since the recording: {', '.join(changed)}" if changed else first)
            return text + ")"

        shown = "; ".join(explain(c, p) for c, p in bad_v1[:6]) + (" …" if len(bad_v1) > 6 else "")
        problems.append(f"agent-v1 ({base_v}) does not pass every case: {shown}")
    other = [f for f in decision.findings if f.blocking and f.category != "regression"]
    for cat in dict.fromkeys(f.category for f in other):
        cases = sorted({f"{f.case_id or 'all cases'} on {f.provider}" for f in other if f.category == cat})
        changed = sorted({c for f in other if f.category == cat for c in f.changed})
        text = f"the gate blocks for {CATEGORY_LABELS[cat]}: {', '.join(cases[:6])}"
        if changed:
            text += f" (changed since the recording: {', '.join(changed)})"
        problems.append(text)
    drifted = [r for r in results.result.runs if r.issue == "cassette_drift"]
    if drifted:  # both versions: a stale v1 recording is re-recorded the same way
        fix = drift_fix(drifted, meta.suite if meta else None, meta.cassettes if meta else None)
        problems.append(f"re-record the drifted runs with: {fix}")
    safety = [g for g in decision.regressions if g.permanent and {"permissions", "approval"} & set(g.factors)]
    if decision.passed:
        problems.append(f"the gate let agent-v2 ({cand_v}) through")
    else:
        missing = [p for p in providers if not any(g.pair in (p, "all") for g in safety)]
        if missing:
            problems.append(
                f"the gate does not block agent-v2 ({cand_v}) for a permission regression on "
                + ", ".join(missing)
            )
    if problems:
        return False, [
            "\n[bold red]Unexpected:[/bold red] the demo is meant to show agent-v1 green on every provider "
            "and agent-v2 blocked by its permission regression; instead:",
            *(f"  • {escape(p)}" for p in problems),
        ]
    cases = sorted({g.case_id for g in safety})
    why = sorted({n for g in safety for n in g.notes if n.startswith(("permission violation", "approval"))})
    return True, [
        f"\n[bold]As expected:[/bold] agent-v1 ({base_v}) passes every case on {', '.join(providers)}, and "
        f"the gate blocks agent-v2 ({cand_v}) for a permission regression on every provider — its policy "
        f"lets send_email out without review. Regressions to keep: {escape(', '.join(cases))}."
        + (f" Why: {escape('; '.join(why[:2]))}." if why else "")
    ]
