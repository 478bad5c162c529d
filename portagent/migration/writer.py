"""Writing an ``ImportDraft`` as spec files, atomically.

Layout of the output folder::

    agent.yaml                 the root AgentSpec (sub-agents: <name>.yaml beside it)
    tools.yaml                 every imported ToolSpec (kind: tools), each under a REVIEW comment
    policy.yaml                the starting PermissionPolicy (the root's; sub-agents inherit it)
    portagent_shims_<agent>_<hash>.py  handler shims, only when a native function needs one (``shims``)
    import-report.md           what was imported, changed, left out, and what to review

Everything is written into a temporary folder beside ``--out`` (or in the nearest folder that exists,
when ``--out`` names new parent folders: they are made only at the end) and checked with the same loader
and static checks as ``portagent validate``; only then is it renamed into place, so a failure leaves
nothing on disk. An existing folder is refused unless ``overwrite`` (it is then moved aside, replaced, and
removed); the current folder, a folder holding it and a folder holding code the imported program loads
are refused either way (``output_target`` guards the output folder and swaps it into place).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from portagent.contracts._base import sha256_hex
from portagent.contracts.errors import SpecError, UsageError
from portagent.contracts.tool import ToolSpec
from portagent.core.files import staging_dir
from portagent.migration.draft import DraftAgent, DraftTool, ImportDraft
from portagent.migration.importing import shim_function, source_alias
from portagent.migration.output_target import output_problem, refuse_shadowed, source_files, swap_into_place

IMPORTED_EFFECT = "external_effect"
"""The conservative effect class every imported tool gets (cannot be inferred from code)."""


class _Dumper(yaml.SafeDumper):
    """Multi-line strings as literal blocks, so instructions stay readable."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str)


def dump_yaml(data: Any) -> str:
    return yaml.dump(
        data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100, default_flow_style=False
    )


# --- rendering -----------------------------------------------------------------------------------


def key_template(tool: DraftTool) -> str | None:
    """``"<tool>:{a}:{b}"`` over the arguments when every property is required (a template over optional
    ones could not be filled, or would merge calls that differ only in them); otherwise None, and the key
    is the tool name plus the arguments hash — also over every argument."""
    props = list(tool.input_schema.get("properties") or {})
    required = set(tool.input_schema.get("required") or [])
    if not props or set(props) != required or not all(re.fullmatch(r"[A-Za-z_]\w*", p) for p in props):
        return None
    return tool.name + ":" + ":".join("{" + p + "}" for p in props)


def tool_doc(tool: DraftTool, shim_module: str) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": tool.name,
        "version": "1.0.0",
        "owner": "imported",
        "description": tool.description.strip() or f"{tool.name} (imported without a description)",
        "effect": IMPORTED_EFFECT,
        "input_schema": tool.input_schema,
    }
    if tool.needs_approval:
        doc["requires_approval"] = True
    idem: dict[str, Any] = {"required": True}
    template = key_template(tool)
    if template:
        idem["key_template"] = template
    doc["idempotency"] = idem
    if tool.timeout_ms is not None:
        doc["budgets"] = {"timeout_ms": tool.timeout_ms}
    doc["handler"] = f"{shim_module}:{shim_function(tool.name)}" if tool.shim else tool.handler
    return doc


def _file_names(draft: ImportDraft) -> dict[int, str]:
    names: dict[int, str] = {}
    used = {"agent.yaml", "tools.yaml", "policy.yaml"}
    for agent in draft.agents():
        if agent is draft.root:
            names[id(agent)] = "agent.yaml"
            continue
        base, n = agent.name, 2
        fname = f"{base}.yaml"
        while fname in used:
            fname, n = f"{base}_{n}.yaml", n + 1
        used.add(fname)
        names[id(agent)] = fname
    return names


def module_folder(module: str) -> Path | None:
    """The folder ``module`` is imported from (what must be on ``sys.path``), or None for a module of
    the Python installation (standard library, site-packages) or one not loaded."""
    mod = sys.modules.get(module)
    file = getattr(mod, "__file__", None)
    if not file:
        return None
    path = Path(file).resolve()
    depth = module.count(".") + (2 if path.name == "__init__.py" else 1)
    folder = path.parents[depth - 1]
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix}:
        if folder.is_relative_to(Path(prefix).resolve()):
            return None
    return folder


def _route_handlers(draft: ImportDraft, out: Path) -> list[str]:
    """Point every handler that lives outside the installation at the generated module beside the
    spec, which imports the original (unchanged, the same function object) through a path relative to
    the output folder — so ``portagent run`` finds it wherever it is started. Returns those paths."""
    rels: dict[str, None] = {}
    base = out.resolve()
    for agent in draft.agents():
        for tool in agent.tools:
            if tool.shim is not None or not tool.handler:
                continue
            mod, _, attr = tool.handler.partition(":")
            if module_folder(mod.split(".")[0]) is None:
                continue
            alias = source_alias(mod)
            draft.shim_imports.append(f"import {mod} as {alias}")
            tool.shim = f"{shim_function(tool.name)} = {alias}.{attr}\n"
    modules = {line.split()[1] for line in draft.shim_imports}
    for m in sorted(modules):
        folder = module_folder(m)
        if folder is None:
            continue
        refuse_shadowed(m, folder)
        if folder == base:
            continue
        try:
            rels[Path(os.path.relpath(folder, base)).as_posix()] = None
        except ValueError:  # another drive (Windows)
            rels[folder.as_posix()] = None
    return list(rels)


def render(draft: ImportDraft, out: Path | None = None) -> dict[str, str]:
    """File name → text. Tools that the ToolSpec contract refuses are reported, not written."""
    report = draft.report
    draft.shim_imports = list(dict.fromkeys(draft.shim_imports))
    paths = _route_handlers(draft, out) if out is not None else []
    # The shim module's name carries a hash of its content: two imports with the same root name (in one
    # process, handlers are cached by "module:function") never resolve to each other's shims.
    candidates = [t for a in draft.agents() for t in a.tools if t.shim]
    shim_source = _shim_text(draft, candidates, paths) if candidates else ""
    shim_module = f"portagent_shims_{draft.root.name}_{sha256_hex(shim_source)[:8]}"
    files: dict[str, str] = {}
    valid: dict[str, dict[str, Any]] = {}
    _drop_bad_output_schemas(draft)
    for agent in draft.agents():
        for tool in agent.tools:
            if tool.name in valid:
                continue
            doc = tool_doc(tool, shim_module)
            try:
                ToolSpec.model_validate({"kind": "tool", "schema_version": 1, **doc})
            except ValidationError as e:
                report.add(
                    "not_portable",
                    f"tool {tool.name}",
                    f"not imported: the ToolSpec contract refuses it ({e.errors()[0]['msg']})",
                )
                continue
            valid[tool.name] = doc
            report.add(
                "review",
                f"tool {tool.name} ({tool.origin})",
                f"effect: {IMPORTED_EFFECT} (imported default), approval required"
                + (f" ({tool.approval_reason})" if tool.needs_approval else " by the effect default")
                + ", idempotency key "
                + (
                    f"{doc['idempotency']['key_template']!r}"
                    if "key_template" in doc["idempotency"]
                    else "tool name + arguments hash"
                )
                + ": set the real effect class (read, compute, …) in tools.yaml",
            )
    names = _file_names(draft)
    for agent in draft.agents():
        files[names[id(agent)]] = _agent_text(draft, agent, names, valid)
    if valid:
        files["tools.yaml"] = _tools_text(list(valid.values()))
    rules = [r for r in draft.rules if r.tool in valid or r.tool in _builtins(draft)]
    files["policy.yaml"] = _policy_text(draft, rules)
    if any(t.name in valid for t in candidates):
        files[f"{shim_module}.py"] = shim_source
    _summarise(draft, valid, rules, names)
    return files


def _drop_bad_output_schemas(draft: ImportDraft) -> None:
    """An output schema that is not valid JSON Schema is left out and listed (the agent is imported
    without it) rather than failing the whole import."""
    from portagent.contracts.checks import schema_problems

    for agent in draft.agents():
        problems = schema_problems(agent.output_schema, agent.name, "output_schema")
        if problems:
            agent.output_schema = None
            draft.report.add(
                "not_portable",
                f"output schema of agent {agent.name}",
                f"not imported: {problems[0].message} (at {problems[0].path}); the agent answers in "
                "text until you write a valid output_schema",
            )


def _builtins(draft: ImportDraft) -> set[str]:
    return {b for a in draft.agents() for b in a.builtin_tools}


def _agent_text(draft: ImportDraft, agent: DraftAgent, names: dict[int, str], valid: dict[str, Any]) -> str:
    doc: dict[str, Any] = {"kind": "agent", "schema_version": 1, "name": agent.name, "version": "1.0.0"}
    if agent.description:
        doc["description"] = agent.description
    doc["instructions"] = agent.instructions
    if agent.models:
        doc["models"] = agent.models
    tools = [t.name for t in agent.tools if t.name in valid]
    if tools:
        doc["tool_files"] = ["tools.yaml"]
        doc["tools"] = list(dict.fromkeys(tools))
    if agent.builtin_tools:
        doc["builtin_tools"] = agent.builtin_tools
    if agent.mcp_servers:
        doc["mcp_servers"] = agent.mcp_servers
    if agent.output_schema is not None:
        doc["output_schema"] = agent.output_schema
    if agent.edges:
        doc["delegation"] = [
            {
                "agent": names[id(e.target)],
                "kind": e.kind,
                **({"description": e.description} if e.description else {}),
            }
            for e in agent.edges
        ]
    if agent.budget:
        doc["budget"] = agent.budget
    if agent is draft.root:
        doc["policy"] = "policy.yaml"
    head = (
        f"# Imported by `portagent import {draft.report.source} --from {draft.sdk}` "
        f"({draft.report.sdk}); see import-report.md.\n"
    )
    if agent is not draft.root:
        head += "# No policy here: this sub-agent inherits the root agent's (policy.yaml).\n"
    return head + dump_yaml(doc)


def _tools_text(docs: list[dict[str, Any]]) -> str:
    out = [
        "# Imported tools. Effect classes cannot be inferred from code: every tool below is",
        f"# {IMPORTED_EFFECT} (approval required, never repeated: idempotency key over its arguments)",
        "# until you set its real class. Handlers point at the original functions.",
        "kind: tools",
        "schema_version: 1",
        "tools:",
    ]
    for doc in docs:
        out.append(
            f"# REVIEW {doc['name']}: effect {IMPORTED_EFFECT} is an imported default — read? compute? "
            "reversible_write?"
        )
        body = dump_yaml([doc]).rstrip("\n")
        out.append(body)
    return "\n".join(out) + "\n"


def _policy_text(draft: ImportDraft, rules: list[Any]) -> str:
    doc: dict[str, Any] = {
        "kind": "policy",
        "schema_version": 1,
        "name": f"{draft.root.name}-imported",
        "version": "1",
    }
    if rules:
        doc["rules"] = [
            {
                "id": r.id,
                "decision": r.decision,
                "reason": r.reason,
                "tool": r.tool,
                **({"when": r.when} if r.when else {}),
            }
            for r in rules
        ]
    head = (
        "# Starting policy written by `portagent import`. With no rule, effect-class defaults apply:\n"
        "# read/compute/prepare_change allow; reversible_write/external_effect approval_required;\n"
        "# privileged_operation deny. Rules below carry over what the native definition decided.\n"
    )
    return head + dump_yaml(doc)


def _shim_text(draft: ImportDraft, tools: list[DraftTool], paths: list[str] | None = None) -> str:
    path_lines = []
    if paths:
        path_lines = [
            "import sys as _sys",
            "from pathlib import Path as _Path",
            "",
            "# The folders the original modules were imported from, relative to this file: the imported",
            "# folder runs wherever `portagent run` is started (keep both folders where they are).",
            f"for _rel in {tuple(paths)!r}:",
            "    _dir = str((_Path(__file__).resolve().parent / _rel).resolve())",
            "    if _dir not in _sys.path:",
            "        _sys.path.append(_dir)",
            "",
        ]
    lines = [
        f'"""Handler shims written by `portagent import {draft.report.source} --from {draft.sdk}` (import-report.md).',
        "",
        "portagent calls a handler as handler(**args) and takes its return value as the output. Each",
        "function below calls an original native function unchanged and converts only the calling",
        "convention (portagent.migration.shims explains each conversion).",
        '"""',
        "",
        *path_lines,
        "from portagent.migration.shims import (  # noqa: F401",
        "    adk_context,",
        "    call_anthropic_tool,",
        "    call_langchain_tool,",
        "    call_mcp_handler,",
        "    call_original,",
        "    openai_context,",
        "    placeholder_keys,",
        ")",
        "from portagent.tools.tool_context import ToolContext  # noqa: F401",
        "",
        *_source_imports(draft.shim_imports),
    ]
    seen: set[str] = set()
    for tool in tools:
        if tool.name in seen or tool.shim is None:
            continue
        seen.add(tool.name)
        lines += ["", tool.shim.rstrip("\n"), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _source_imports(imports: list[str]) -> list[str]:
    """The shim module's imports of the original modules, under ``placeholder_keys``: a program that builds
    an SDK client or a chat model at its top level (``ChatOpenAI()`` raises without a key) was imported
    that way by ``portagent import``, and an emulator or replay run, which needs no key, must import it too
    (without, every call of the run was a ``handler_error`` naming the missing key)."""
    if not imports:
        return []
    return [
        "# A client built at the top level of an original module needs an API key to be built; each key",
        "# variable not set holds a placeholder during these imports only (portagent calls the tool",
        "# functions, never that client).",
        "with placeholder_keys():",
        *(f"    {line}" for line in sorted(set(imports))),
        "",
    ]


def _summarise(draft: ImportDraft, valid: dict[str, Any], rules: list[Any], names: dict[int, str]) -> None:
    report = draft.report
    agents = draft.agents()
    report.summary = {
        "agents": len(agents),
        "tools imported": len(valid),
        "delegation edges": sum(len(a.edges) for a in agents),
        "policy rules": len(rules),
        "not imported": len(report.of("not_portable")),
        "to review": len(report.of("review")),
    }
    modules = {str(d["handler"]).partition(":")[0] for d in valid.values()}
    modules |= {line.split()[1] for line in draft.shim_imports}
    places = []
    for m in sorted(modules):
        folder = module_folder(m)
        if folder is not None and not m.startswith("portagent_shims_"):
            places.append(f"`{m}` ({folder})")
    if places:
        report.add(
            "note",
            "handler modules",
            "handlers import " + ", ".join(places) + ": the generated portagent_shims_* module beside "
            "agent.yaml finds that folder by a path relative to itself, so `portagent run` works from "
            "any folder; keep both folders where they are (or set PYTHONPATH after moving one)",
        )


# --- writing -------------------------------------------------------------------------------------

COMBINED_SCHEMA = "portagent.schema.json"
"""The combined schema ``portagent schema`` writes (into ``./schemas`` by default)."""


def schema_modeline(folder: str | Path) -> str:
    """``# yaml-language-server: $schema=…`` for a file in ``folder``: the combined schema where
    ``portagent schema`` writes it by default (``./schemas``), as a path relative to ``folder``."""
    target = Path.cwd() / "schemas" / COMBINED_SCHEMA
    try:
        ref = os.path.relpath(target, Path(folder).resolve())
    except ValueError:  # another drive (Windows)
        ref = str(target)
    return f"# yaml-language-server: $schema={Path(ref).as_posix()}"


def write_import(draft: ImportDraft, out: str | Path, *, overwrite: bool = False) -> Path:
    """Render, check and write the draft into ``out``. Returns the root agent file. Nothing is left on
    disk when it fails: not the folder, nor a parent folder it would have made."""
    from portagent.contracts.bundle import load_agent
    from portagent.runtime.validate import bundle_problems

    given = Path(out)
    target = given.resolve()
    problem = output_problem(given, overwrite=overwrite, sources=source_files(draft))
    if problem is not None:
        raise UsageError(problem)
    files = render(draft, target)
    draft.report.written = [*files, "import-report.md"]
    # staged in the nearest folder that exists: a parent folder --out names is made only at the end
    ancestor = target if target.exists() else next(p for p in target.parents if p.exists())
    base = target.parent if target.exists() else ancestor
    try:
        tmp = staging_dir(base, f".{target.name}.tmp-")
    except OSError as e:
        raise UsageError(f"{given}: cannot write in {base}: {e.strerror or e} (nothing was written)") from e
    made: list[Path] = []
    try:
        modeline = schema_modeline(target)
        for name, text in files.items():
            if name.endswith(".yaml"):  # editors validate and complete it (`portagent schema` writes it)
                text = f"{modeline}\n{text}"
            (tmp / name).write_text(text, encoding="utf-8")
        (tmp / "import-report.md").write_text(draft.report.render(), encoding="utf-8")
        try:
            problems, _ = bundle_problems(load_agent(tmp / "agent.yaml"), None)
        except SpecError as e:
            problems = list(e.problems)
        if problems:  # named as the files would have been: the staging folder is gone when this is read
            raise SpecError(
                [
                    dataclasses.replace(
                        p,
                        file=str(given / Path(p.file).relative_to(tmp))
                        if Path(p.file).is_relative_to(tmp)
                        else p.file,
                        message=p.message + " (in what the import would write; nothing was written)",
                    )
                    for p in problems
                ]
            )
        for parent in reversed(target.parents):
            if not parent.exists():
                parent.mkdir()
                made.append(parent)
        swap_into_place(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        for parent in reversed(made):
            with contextlib.suppress(OSError):
                parent.rmdir()
        raise
    return given / "agent.yaml"
