"""``portagent export AGENT --to openai|adk|claude|anthropic|langgraph [--out FILE] [--overwrite]``: a readable, runnable Python
module that builds the agent natively with that SDK, its tool bodies calling portagent's gateway.
Exit 0 when written, 1 when the target cannot run the spec (port-check finds a lack), 2 on usage errors."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from portagent.contracts.providers import PROVIDERS


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "export",
        help="write a native SDK program for an agent spec (gateway calls kept)",
        description="Write a Python module that builds the agent directly with the target SDK "
        "(for teams leaving portagent, or to see what it does). Tool bodies call "
        "portagent's ToolGateway so the policy still applies; the module writes a "
        "normalized trace. Exit 0 when written, 1 when the target cannot run the spec, "
        "2 on usage errors.",
    )
    p.add_argument("agent", help="agent spec file")
    p.add_argument("--to", dest="target", required=True, choices=PROVIDERS, help="target SDK")
    p.add_argument(
        "--out", metavar="FILE", help="module to write (default: <spec folder>/<agent>_<target>.py)"
    )
    p.add_argument("--overwrite", action="store_true", help="replace an existing file")


def _agent_files(bundle: Any) -> list[Path]:
    """Every file of the agent (specs, tool files, policies) and the handler modules beside them, which
    the exported module reads or imports: none may be what --out replaces."""
    files: list[Path] = []
    for node in bundle.agents.values():
        if node.path is None:
            continue
        folder = node.path.parent
        files.append(node.path)
        if node.policy_path is not None:
            files.append(node.policy_path)
        files += [folder / f for f in node.spec.tool_files]
        for tool in node.tools.values():
            module = (tool.handler or "").partition(":")[0]
            if module:
                files.append(folder / (module.replace(".", "/") + ".py"))
    return files


def run(args: argparse.Namespace) -> int:
    import os

    from portagent.contracts.bundle import load_agent
    from portagent.contracts.errors import UsageError
    from portagent.migration.export import export_agent

    source, path = export_agent(args.agent, args.target, args.out)
    bundle = load_agent(args.agent)
    if path.is_dir():
        raise UsageError(
            f"{path}: is a folder; --out names the module file to write, e.g. "
            f"{path / f'{bundle.root}_{args.target}.py'} (nothing was written)"
        )
    real = Path(os.path.realpath(path))
    for f in _agent_files(bundle):
        if f.exists() and real == Path(os.path.realpath(f)):
            raise UsageError(
                f"{path}: is a file of the agent being exported ({f}), which an export never replaces; "
                "choose another --out (nothing was written)"
            )
    if path.exists() and not args.overwrite:
        raise UsageError(f"{path}: already exists; pass --overwrite to replace it (nothing was written)")
    from portagent.core.files import write_text_atomic

    write_text_atomic(path, source)
    print(
        f'wrote {path} ({args.target}); run it: python {path} "your question" --base-url URL --trace trace.jsonl'
    )
    return 0
