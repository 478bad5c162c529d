"""``portagent route ROUTER REQUESTS [--out DIR [--overwrite]] [--json] [--execute]``: decide requests with an explicit router.

ROUTER is a ``kind: router`` spec (capability registry, weights, gates); REQUESTS a YAML/JSON file with
``requests:``. Prints each decision with every candidate's score, gate and reasons; ``--out`` writes
``decisions.json`` and one run folder per request (``<request_id>/trace.jsonl``, readable by
``trace show`` and scored by the evals). Exit 0 whatever the decisions (a ``stop`` is an answer);
2 for a bad flag or folder (a non-empty ``--out`` needs ``--overwrite``, which empties only an earlier
route folder); 1 for an invalid spec or requests file. docs/router.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "route",
        help="decide requests with an explicit router (kind: router) and print the receipts",
        description="Score every capability of the router's registry for each request, gate it (effect "
        "both ways — least privilege —, scope, cost, latency, review in prod), and print the decision "
        "with every alternative. With --execute, each chosen local_tool route then runs through the "
        "gateway in the request's run (route.decision, tool.call, tool.result in one trace).",
    )
    p.add_argument("router", help="kind: router spec")
    p.add_argument("requests", help="YAML/JSON file with a 'requests:' list")
    p.add_argument("--out", help="write decisions.json and <request_id>/trace.jsonl here")
    p.add_argument("--json", action="store_true", help="print the decisions as JSON")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the results of an earlier route in a non-empty --out folder",
    )
    p.add_argument(
        "--execute",
        action="store_true",
        help="run each chosen local_tool route (the router's tool_files) through the gateway, in the "
        "request's run: policy, approvals (a 'review' decision needs one), fallbacks on failure",
    )


def _load_requests(path: str) -> Any:
    from pydantic import ValidationError

    from portagent.contracts.errors import SpecError, SpecProblem
    from portagent.contracts.loader import read_document
    from portagent.contracts.router import RouteRequests
    from portagent.contracts.validation_problems import problems_from_validation

    data, node = read_document(Path(path))
    if not isinstance(data, dict):
        raise SpecError([SpecProblem(path, "", "expected a mapping with a 'requests:' list")])
    try:
        return RouteRequests.model_validate(data)
    except ValidationError as e:
        raise SpecError(problems_from_validation(e, path, node, RouteRequests, data=data)) from None


def _check_out(out: str, *, overwrite: bool) -> Path:
    """``--out`` as ``eval --out`` takes it, checked before anything is decided or run: an empty or new
    folder; a non-empty one only with ``--overwrite``, and then only an earlier route folder (it has
    ``decisions.json``) — ``--overwrite`` never empties an arbitrary folder."""
    from portagent.contracts.errors import UsageError

    if not out.strip():
        raise UsageError("--out: the folder name is empty")
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise UsageError(f"--out {out}: exists and is not a folder")
    if path.is_dir() and any(path.iterdir()):
        if not overwrite:
            raise UsageError(
                f"--out {out}: folder is not empty; pass --overwrite to replace the results in it, "
                "or choose another folder"
            )
        if not (path / "decisions.json").is_file():
            raise UsageError(
                f"--out {out}: not a route results folder (no decisions.json); "
                "refusing to empty it even with --overwrite"
            )
    return path


def _empty_out(path: Path) -> None:
    """Empty an earlier route folder (checked by ``_check_out``) just before the new results are written,
    so no request folder of an earlier route stays beside the new ``decisions.json``."""
    import shutil

    if not path.is_dir():
        return
    for child in path.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def _render(routed: Any, again: str = "run this command again") -> str:
    lines: list[str] = []
    for r in routed:
        d = r.decision
        chosen = (
            f"{d.selected_route} ({d.selected_kind}, score {d.score})" if d.selected_route else "no route"
        )
        lines.append(f"{d.request_id}: {d.decision.upper()} {chosen} — {d.reason}")
        for a in d.alternatives:
            lines.append(
                f"    {a.score:>7}  {a.gate:<6}  {a.route_id} [{a.kind}, {a.effect}]  {'; '.join(a.reasons)}"
            )
        if d.fallbacks:
            lines.append(f"    fallbacks: {', '.join(d.fallbacks)}")
        execution = (r.events[-1].final_output or {}).get("execution") if r.events else None
        for step in (execution or {}).get("routes", []):
            if not step.get("executed", True):
                lines.append(f"    executed: nothing — {step['why']}")
            elif step["ok"]:
                lines.append(f"    executed: {step['route']} → {step['tool']} ok")
            elif step.get("approval_id"):
                lines.append(
                    f"    executed: {step['route']} → {step['tool']} waits for approval {step['approval_id']} "
                    f"(`portagent approvals approve {step['approval_id']}`, then {again})"
                )
            else:
                lines.append(f"    executed: {step['route']} → {step['tool']} failed: {step['error']}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from portagent.contracts.errors import UsageError
    from portagent.contracts.loader import load_spec_file
    from portagent.contracts.router import RouterSpec
    from portagent.runtime.route import decide, write_routed

    for what, path in (("router spec", args.router), ("requests file", args.requests)):
        if not Path(path).is_file():  # a file named on the command line: a usage error, not a spec problem
            raise UsageError(f"{path}: {what} not found")
    out = _check_out(args.out, overwrite=args.overwrite) if args.out is not None else None
    spec = load_spec_file(args.router, RouterSpec)
    requests = _load_requests(args.requests)
    executor = None
    if args.execute:
        from portagent.runtime.route import load_executor

        executor = load_executor(spec, args.router)
    routed = decide(spec, requests.requests, executor=executor)
    if out is not None:
        _empty_out(out)
        write_routed(routed, out)
    if args.json:
        print(json.dumps([r.decision.model_dump(mode="json") for r in routed], indent=2, ensure_ascii=False))
    else:
        again = "run this command again" + (
            " with --overwrite" if out is not None and not args.overwrite else ""
        )
        print(_render(routed, again))
    return 0
