"""``portagent export AGENT --to P``: a readable, runnable Python module that builds the agent natively.

The module is generated from the spec (one ``export_<sdk>`` module per SDK renders it): agents,
instructions, models, delegation and output type are written out as native SDK code; tools are
native tool objects whose bodies call portagent's ``ToolGateway`` (through ``exported.ExportedRun``),
so the ToolSpecs and the policy still decide every call. The module refers to the spec by a path
relative to itself, loads the ToolSpecs and policy from it at run time, and writes a normalized trace.

A spec the target cannot run (``port-check`` finds a lack) is refused: the export would not run.
"""

from __future__ import annotations

import os
import pprint
from pathlib import Path
from typing import Any

from portagent.adapters.portability import verdict
from portagent.contracts.bundle import AgentBundle, load_agent
from portagent.contracts.errors import UnsupportedFeatureError, UsageError

TARGETS = ("openai", "adk", "claude", "anthropic", "langgraph")


def literal(value: Any, indent: int = 0) -> str:
    """A Python literal for ``value`` (JSON-able data), indented to sit inside generated code."""
    text = pprint.pformat(value, width=100 - indent, sort_dicts=False)
    return text.replace("\n", "\n" + " " * indent)


def string_literal(text: str, indent: int) -> str:
    """A string literal for generated code: one ``repr`` when short, else implicitly concatenated
    pieces (split after spaces, text unchanged) inside parentheses."""
    if len(text) <= 70:
        return repr(text)
    pieces: list[str] = []
    current = ""
    for word in text.split(" "):
        candidate = f"{current} {word}" if current else word
        if len(candidate) > 70 and current:
            pieces.append(current + " ")
            current = word
        else:
            current = candidate
    pieces.append(current)
    pad = " " * (indent + 4)
    return "(\n" + "".join(f"{pad}{p!r}\n" for p in pieces) + " " * indent + ")"


def spec_path_expr(spec: Path, out: Path) -> str:
    """How the exported module finds the spec: relative to itself when possible."""
    try:
        rel = os.path.relpath(spec.resolve(), out.resolve().parent)
    except ValueError:  # another drive on Windows
        return f"Path({str(spec.resolve())!r})"
    return f"Path(__file__).resolve().parent / {rel.replace(os.sep, '/')!r}"


def export_agent(agent: str | Path, target: str, out: str | Path | None = None) -> tuple[str, Path]:
    """Render the module for ``target``; returns its source and where it goes (not written)."""
    if target not in TARGETS:
        raise UsageError(f"unknown target {target!r}; expected one of: {', '.join(TARGETS)}")
    spec = Path(agent)
    if not spec.is_file():
        raise UsageError(f"{agent}: agent spec not found")
    bundle = load_agent(spec)
    found = verdict(bundle, target)  # the one portability verdict (what port-check lists)
    if found.lacks:
        lacks = "; ".join(f"{x.feature}: {x.detail}" for x in found.lacks)
        raise UnsupportedFeatureError(target, "this spec", f"port-check finds: {lacks}")
    if any(n.spec.mcp_servers for n in bundle.agents.values()):
        raise UnsupportedFeatureError(
            target,
            "an export of mcp_servers",
            "exported modules do not open MCP tool sources yet; run it with portagent",
        )
    path = Path(out) if out else spec.with_name(f"{bundle.root}_{target}.py")
    if target == "openai":
        from portagent.migration.export_openai import render
    elif target == "adk":
        from portagent.migration.export_adk import render
    elif target == "anthropic":
        from portagent.migration.export_anthropic import render
    elif target == "langgraph":
        from portagent.migration.export_langgraph import render
    else:
        from portagent.migration.export_claude import render
    return render(bundle, spec_path_expr(spec, path), str(spec), module=path.name), path


def models_for(bundle: AgentBundle, provider: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, node in bundle.agents.items():
        model = node.spec.models.for_provider(provider) or bundle.spec.models.for_provider(provider)
        assert model, "port-check refuses a spec without a model id for the target"
        out[name] = model
    return out


def creation_order(bundle: AgentBundle) -> list[str]:
    """Agents with the root last (readers see the specialists first)."""
    return [n for n in bundle.agents if n != bundle.root] + [bundle.root]


def main_block(
    api_key_help: str,
    base_url_env: str | None = None,
    base_url_help: str = "endpoint root (portagent's emulator: http://127.0.0.1:PORT)",
    extra: tuple[str, str] | None = None,
) -> str:
    """The ``if __name__ == "__main__":`` block that ends every exported module: the command line
    (messages, endpoint, key, approver, trace, source), one run of ``main`` and its outcome as JSON.

    ``base_url_env`` is the environment variable ``--base-url`` defaults to (none: no default);
    ``extra`` is one more option of the runtime: its ``add_argument`` arguments and the keyword
    passed to ``main`` (e.g. ``('"--cwd", help="..."', "cwd=args.cwd")``). Plain text, no braces to
    escape: append it after any ``str.format`` of the template."""
    base_url = f'"--base-url", default=os.environ.get("{base_url_env}"),' if base_url_env else '"--base-url",'
    line = f'    parser.add_argument({base_url} help="{base_url_help}")'
    if len(line) > 120:
        line = f'    parser.add_argument({base_url}\n                        help="{base_url_help}")'
    extra_arg = f"    parser.add_argument({extra[0]})\n" if extra else ""
    extra_kwarg = f", {extra[1]}" if extra else ""
    return (
        'if __name__ == "__main__":\n'
        "    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])\n"
        '    parser.add_argument("message", nargs="+", help="user message(s): several make a multi-turn conversation")\n'
        f"{line}\n"
        f'    parser.add_argument("--api-key", help="{api_key_help}")\n'
        '    parser.add_argument("--approver", default="auto-deny", choices=["auto-approve", "auto-deny", "interactive"],\n'
        '                        help="who decides approval cards (a paused run is not kept here: no defer)")\n'
        '    parser.add_argument("--trace", default="trace.jsonl", help="where the normalized trace goes")\n'
        '    parser.add_argument("--source", default="live", choices=["live", "emulator"], help="label written in the trace")\n'
        f"{extra_arg}"
        "    args = parser.parse_args()\n"
        "    from portagent.contracts.errors import PortagentError\n"
        "\n"
        "    try:\n"
        "        out = asyncio.run(main(args.message, base_url=args.base_url, api_key=args.api_key,\n"
        f"                               approver=args.approver, trace=args.trace, source=args.source{extra_kwarg}))\n"
        "    except PortagentError as e:  # a usage mistake: one message, no traceback\n"
        '        parser.exit(2, f"{parser.prog}: error: {e}\\n")\n'
        '    print(json.dumps({k: out[k] for k in ("status", "stop_reason", "final_output")}, ensure_ascii=False, indent=2))\n'
        '    if out["status"] == "failed":  # a provider or SDK error: one line, the trace written, exit 3\n'
        "        parser.exit(3, f\"{parser.prog}: the run failed: {out.get('error', 'see the trace')}\\n\")\n"
    )
