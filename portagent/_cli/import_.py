"""``portagent import MODULE:OBJECT --from openai|adk|claude|anthropic|langgraph [--out DIR] [--overwrite] [--model P=ID]``.

Reads a native agent definition (an openai-agents ``Agent``, a google-adk ``LlmAgent``, a Claude
``ClaudeAgentOptions`` or ``AgentDefinition``, an anthropic tool runner's keyword-argument dict, a LangGraph
``create_react_agent`` graph) and writes portable specs plus ``import-report.md``
(docs/migration.md). The module is imported the way ``python -m`` would: the current folder first.
Exit 0 when written, 1 when the written specs would not validate, 2 on usage errors (module not
importable, object of the wrong type, output folder exists without ``--overwrite``).
"""

from __future__ import annotations

import argparse
from typing import Any

from portagent.contracts.providers import PROVIDERS


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "import",
        help="import a native openai-agents / ADK / Claude / anthropic / LangGraph agent into portable specs",
        description="Read a native agent definition and write an AgentSpec, ToolSpecs, a starting "
        "PermissionPolicy and import-report.md (what was imported, changed, left out, "
        "and what to review). Exit 0 when written, 2 on usage errors.",
    )
    p.add_argument(
        "target",
        metavar="MODULE:OBJECT",
        help="where the native object lives, e.g. shop_agents:desk; or the program's file (prog.py, "
        "prog.py:OBJECT), or a module without :OBJECT (anthropic, langgraph: the agent is looked for in it)",
    )
    p.add_argument(
        "--from",
        dest="sdk",
        required=True,
        choices=PROVIDERS,
        help="which SDK the object belongs to",
    )
    p.add_argument("--out", metavar="DIR", help="output folder (default: ./imported_<OBJECT>)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output folder")
    p.add_argument(
        "--name", help="name of the root agent (default: the native one, or OBJECT for Claude options)"
    )
    p.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="PROVIDER=ID",
        help="a model id for another provider (repeatable), e.g. --model adk=gemini-2.5-flash",
    )


def _models(values: list[str]) -> dict[str, str]:
    from portagent.contracts.errors import UsageError

    out: dict[str, str] = {}
    for item in values:
        provider, sep, model = item.partition("=")
        if not sep or provider not in PROVIDERS or not model.strip():
            raise UsageError(
                f"--model {item!r}: expected PROVIDER=ID with PROVIDER one of {', '.join(PROVIDERS)}"
            )
        out[provider] = model.strip()
    return out


def _check_target(target: str) -> None:
    """``pkg/mod:AGENT`` (a package path written with slashes, not a ``.py`` file): one message naming the
    form that works. A ``.py`` file is read as the program (``importing.file_module``)."""
    from pathlib import Path, PurePath

    from portagent.contracts.errors import UsageError

    module, _, attr = target.partition(":")
    if module.endswith(".py") or not ("/" in module or "\\" in module):
        return
    path = PurePath(module.replace("\\", "/"))
    if path.suffix or Path(module).exists():
        return  # a file (importing.file_module says what is wrong with it)
    dotted = ".".join(path.parts)
    raise UsageError(
        f"{target!r}: MODULE is a Python module name, not a path; use '{dotted}:{attr or 'OBJECT'}' "
        "(or give the program's .py file)"
    )


def _program_files(target: str) -> list[str]:
    """Where MODULE's top-level module or package is, found without running it (none when not found)."""
    import importlib.util
    from pathlib import Path

    module = target.partition(":")[0]
    if module.endswith(".py"):
        return [str(Path(module).resolve())]
    top = module.split(".")[0]
    try:
        spec = importlib.util.find_spec(top) if top else None
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    origin = [spec.origin] if spec.has_location and spec.origin else []
    return [*(spec.submodule_search_locations or []), *origin]


def run(args: argparse.Namespace) -> int:
    import os
    import sys
    from pathlib import Path

    from portagent.contracts.errors import UsageError
    from portagent.migration.importing import import_native
    from portagent.migration.output_target import output_problem
    from portagent.migration.writer import write_import

    models = _models(args.model)
    _check_target(args.target)
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # MODULE is found from the current folder, as with `python -m`
    module, _, obj = args.target.partition(":")
    default = (
        obj.split(".")[-1] if obj else Path(module).stem if module.endswith(".py") else module.split(".")[-1]
    )
    out = Path(args.out) if args.out else Path(f"imported_{default}")
    # before the (slow) import of the program
    problem = output_problem(out, overwrite=args.overwrite, sources=_program_files(args.target))
    if problem is not None:
        raise UsageError(problem)
    draft = import_native(args.target, args.sdk, models=models, name=args.name)
    root = write_import(draft, out, overwrite=args.overwrite)
    report = draft.report
    s = report.summary
    print(
        f"wrote {out}/: {s['agents']} agent(s), {s['tools imported']} tool(s), {s['delegation edges']} "
        f"delegation edge(s), {s['policy rules']} policy rule(s)"
    )
    print(
        f"  not imported: {s['not imported']} · to review: {s['to review']} — see {out / 'import-report.md'}"
    )
    for f in report.of("not_portable"):
        print(f"  - not imported: {f.subject}")
    import shlex

    # a command that works as printed (paths quoted): port-check a provider the spec has a model id for
    spec = shlex.quote(str(root))
    models = draft.root.models
    other = next((p for p in PROVIDERS if p != args.sdk and models.get(p)), None)
    if other is not None:
        print(f"next: portagent validate {spec} && portagent port-check {spec} --to {other}")
    else:
        target = next(p for p in PROVIDERS if p != args.sdk)
        print(f"next: portagent validate {spec}")
        print(
            f"  then set models.{target} in it (or import again with --model {target}=ID) and run "
            f"portagent port-check {spec} --to {target}"
        )
    return 0
