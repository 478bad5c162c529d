"""Resolving an agent spec file into an ``AgentBundle``: its tools, policy and sub-agents, by path.

All problems are collected (undefined or duplicate tools, missing files, bad references) and raised
together as one ``SpecError``.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from portagent.contracts._base import short_hash
from portagent.contracts.agent import AgentSpec
from portagent.contracts.errors import SpecError, SpecProblem
from portagent.contracts.loader import load_spec_file, read_document
from portagent.contracts.policy import PermissionPolicy
from portagent.contracts.tool import ToolSet, ToolSpec


@dataclass(frozen=True)
class DelegationEdge:
    kind: str
    """``handoff`` or ``agent_as_tool``."""
    target: str
    """Name of the receiving agent."""
    description: str = ""
    context: str = "task"
    """What the sub-agent receives: ``task`` or ``handoff`` (a handoff package first; ``Delegate.context``)."""


@dataclass
class AgentNode:
    """One agent of a bundle with its resolved tools and policy."""

    spec: AgentSpec
    path: Path | None
    tools: dict[str, ToolSpec]
    policy: PermissionPolicy
    policy_path: Path | None
    edges: list[DelegationEdge] = field(default_factory=list)
    tool_folders: dict[str, Path] = field(default_factory=dict)
    """Tool name → the folder of the file that declared the tool: a tools file's folder for a tool from
    ``tool_files`` (a tools file shared by several agents keeps its handler module beside it), the spec's
    folder for an inline tool. A run looks for the tool's ``module:function`` references there first
    (ADR 0004). Tools from portagent's built-in tool files (``portagent:memory``) have no entry: their
    references name portagent's own modules."""

    @property
    def name(self) -> str:
        return self.spec.name


@dataclass
class AgentBundle:
    """The root agent and every agent reachable through delegation (a graph; cycles are kept)."""

    root: str
    agents: dict[str, AgentNode]

    @property
    def spec(self) -> AgentSpec:
        return self.agents[self.root].spec

    @property
    def node(self) -> AgentNode:
        return self.agents[self.root]

    @property
    def base_dir(self) -> Path:
        path = self.node.path
        return path.parent if path is not None else Path.cwd()

    def all_tools(self) -> dict[str, ToolSpec]:
        out: dict[str, ToolSpec] = {}
        for node in self.agents.values():
            out.update(node.tools)
        return out

    @property
    def spec_hash(self) -> str:
        """Hash over every agent spec in the graph (sorted by name)."""
        return self._hashes()[0]

    @property
    def policy_hash(self) -> str:
        return self._hashes()[1]

    def _hashes(self) -> tuple[str, str]:
        """``spec_hash`` and ``policy_hash``, worked out again only when an agent, its spec or its policy
        is not the very object it was (specs and policies are frozen; every run asks for both)."""
        parts = tuple((n, a.spec, a.policy) for n, a in self.agents.items())
        memo: tuple[tuple[Any, ...], tuple[str, str]] | None = self.__dict__.get("_hash_memo")
        if memo is not None and _same_parts(memo[0], parts):
            return memo[1]
        ordered = sorted(self.agents.items())
        hashes = (
            short_hash({n: a.spec.hash_payload() for n, a in ordered}),
            short_hash({n: a.policy.hash_payload() for n, a in ordered}),
        )
        self.__dict__["_hash_memo"] = (parts, hashes)
        return hashes

    def handler_plan(self, holds: Callable[[str, str], bool]) -> HandlerPlan:
        """Where a run looks for the tools' ``module:function`` references (``plan_handlers``): the agent
        specs' folders, the root's first; each tool declared in its ``tool_folders`` entry, or the spec's
        folder (an agent without a spec file adds nothing)."""
        folders: list[str] = []
        tools: list[tuple[ToolSpec, str]] = []
        for _, node in sorted(self.agents.items(), key=lambda item: item[0] != self.root):  # root first
            if node.path is None:
                continue
            spec_folder = folder_name(node.path.parent)
            folders.append(spec_folder)
            for name, tool in node.tools.items():
                declared = node.tool_folders.get(name)
                tools.append((tool, folder_name(declared) if declared is not None else spec_folder))
        return plan_handlers(folders, tools, holds)

    def tool_hashes(self) -> dict[str, str]:
        return {name: t.spec_hash for name, t in sorted(self.all_tools().items())}

    def delegation_cycle(self) -> list[str] | None:
        """A cycle in the delegation graph as a list of names (first repeated at the end), or None."""
        state: dict[str, int] = {}
        stack: list[str] = []

        def visit(name: str) -> list[str] | None:
            state[name] = 1
            stack.append(name)
            for edge in self.agents[name].edges:
                if state.get(edge.target) == 1:
                    return [*stack[stack.index(edge.target) :], edge.target]
                if edge.target not in state:
                    found = visit(edge.target)
                    if found:
                        return found
            stack.pop()
            state[name] = 2
            return None

        for name in self.agents:
            if name not in state:
                found = visit(name)
                if found:
                    return found
        return None


@dataclass(frozen=True)
class HandlerPlan:
    """Where the ``module:function`` references of a run are looked for before ``sys.path`` (ADR 0004):
    ``tools/handlers.py`` resolves by it, ``validate``, ``eval --reuse`` and ``port-check`` read it."""

    folders: tuple[str, ...]
    """The agent specs' folders, the root's first, then the folders of the files that declared tools."""
    prefer: Mapping[str, str] = field(default_factory=dict)
    """Reference → the folder looked in first: that of the file that declared its tool."""
    clash: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Reference → the folders that each hold their own module of its name, when tools declared in those
    folders share it (two tools files saying ``tools:get``): a run resolves a reference string once, not
    per tool, so such a reference cannot stand for both (its calls fail with a ``handler_error`` naming
    the folders; ``validate`` reports it first)."""

    def order(self, ref: str) -> tuple[str, ...]:
        """The folders ``ref`` is looked for in, in order (then ``sys.path``)."""
        first = self.prefer.get(ref)
        return tuple(dict.fromkeys([first, *self.folders])) if first else self.folders


def references(tool: ToolSpec) -> tuple[str, ...]:
    """The ``module:function`` strings a tool names: its handler, reconcile function and precondition
    checks."""
    named = (tool.handler, tool.idempotency.reconcile, *(p.check for p in tool.preconditions))
    return tuple(ref for ref in named if ref)


def plan_handlers(
    spec_folders: Iterable[str], tools: Iterable[tuple[ToolSpec, str]], holds: Callable[[str, str], bool]
) -> HandlerPlan:
    """The plan for specs in ``spec_folders`` (resolved, the root's first) and tools each declared in a
    (resolved) folder: a reference is looked for in its tool's folder, then the spec folders, then the
    other tools' folders. A reference that tools of several folders share goes to the one folder that
    holds its module (``holds(module, folder)``: found without running anything); two folders holding
    one each is a clash."""
    declared: dict[str, list[str]] = {}
    for tool, folder in tools:
        for ref in references(tool):
            where = declared.setdefault(ref, [])
            if folder not in where:
                where.append(folder)
    folders = tuple(dict.fromkeys([*spec_folders, *(f for where in declared.values() for f in where)]))
    prefer: dict[str, str] = {}
    clash: dict[str, tuple[str, ...]] = {}
    for ref, where in declared.items():
        if len(where) > 1:  # (rare: only these cost a look at the folders)
            module = ref.partition(":")[0]
            found = (next((f for f in (first, *folders) if holds(module, f)), None) for first in where)
            held = tuple(dict.fromkeys(f for f in found if f is not None))
            if len(held) > 1:
                clash[ref] = held
                continue
            where = [*held, *where]
        prefer[ref] = where[0]
    return HandlerPlan(folders, prefer, clash)


def clash_message(ref: str, folders: Iterable[str]) -> str:
    module = ref.partition(":")[0]
    return (
        f"{ref!r} is named by tools declared in folders that each hold their own module {module!r} "
        f"({', '.join(folders)}): a run resolves a reference once, not per tool, so it cannot tell them "
        "apart — rename one of the modules and its tools' references"
    )


def folder_name(folder: Path) -> str:
    """``folder`` resolved: an absolute one once per process (a few system calls; every run asks), a
    relative one each time (it depends on the working folder)."""
    return _resolved_folder(folder) if folder.is_absolute() else str(folder.resolve())


@functools.lru_cache(maxsize=256)
def _resolved_folder(folder: Path) -> str:
    return str(folder.resolve())


def _same_parts(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return len(a) == len(b) and all(
        x[0] == y[0] and x[1] is y[1] and x[2] is y[2] for x, y in zip(a, b, strict=True)
    )


def _load_tools_file(path: Path, label: str) -> list[tuple[str, ToolSpec]]:
    """The tools of a ``kind: tool`` or ``kind: tools`` file, each with its field path in the file."""
    data = load_spec_file(path)
    if isinstance(data, ToolSpec):
        return [("", data)]
    if isinstance(data, ToolSet):
        return [(f"tools.{j}", t) for j, t in enumerate(data.tools)]
    raise SpecError(
        [SpecProblem(label, "kind", f"expected kind 'tool' or 'tools', got {getattr(data, 'kind', None)!r}")]
    )


def _present(path: Path) -> bool:
    """Does ``path`` exist? A name the system refuses to look up (longer than it allows, a NUL) does not."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def _rel(base: Path, ref: str) -> Path:
    p = Path(ref)
    return p if p.is_absolute() else base / p


BUILTIN_TOOL_FILES = Path(__file__).resolve().parent / "builtin"
"""Tool files portagent ships, named ``portagent:<name>`` in ``tool_files`` (``portagent:memory``)."""


def _tool_file(base: Path, ref: str) -> Path:
    if ref.startswith("portagent:"):
        return BUILTIN_TOOL_FILES / f"{ref.removeprefix('portagent:')}.yaml"
    return _rel(base, ref)


def _tool_schemas_malformed(tool: ToolSpec, label: str, at: str) -> list[SpecProblem]:
    """``_malformed`` of a tool's input and output schemas, the tool at field path ``at`` of ``label``."""
    out: list[SpecProblem] = []
    for field_name in ("input_schema", "output_schema"):
        where = ".".join(part for part in (at, field_name) if part)
        out += _malformed(getattr(tool, field_name), label, where, f"tool {tool.name!r}")
    return out


def _malformed(schema: dict[str, Any] | None, label: str, where: str, what: str) -> list[SpecProblem]:
    """``schema`` (a tool's input or output schema, an agent's output schema) when it is not itself a valid
    JSON Schema: every call of the tool, or every structured answer, would fail, and the run would end on a
    confusing tool or provider error instead of at load (``validate`` reports the same; ``contracts.checks``)."""
    if schema is None:
        return []
    from portagent.contracts.schema_faults import schema_faults_cached

    out = []
    for fault in schema_faults_cached(schema):
        path = ".".join(part for part in (where, *(str(p) for p in fault.path)) if part)
        out.append(SpecProblem(label, path, f"{what}: malformed JSON Schema: {fault.message}"))
    return out


def load_agent(path: str | Path, *, default_policy: PermissionPolicy | None = None) -> AgentBundle:
    """Load an agent spec file and everything it references. Raises ``SpecError`` with all problems."""
    problems: list[SpecProblem] = []
    agents: dict[str, AgentNode] = {}
    by_path: dict[Path, str] = {}

    def load_one(
        p: Path, label: str, inherited_policy: tuple[PermissionPolicy, Path | None] | None
    ) -> str | None:
        key = p.resolve()
        if key in by_path:
            return by_path[key]
        if key in broken:  # reported once, however its name is spelt (../agents/a.yaml, a delegation loop)
            return None
        try:
            spec = load_spec_file(p, AgentSpec)
        except SpecError as e:
            problems.extend(e.problems)
            named_by_broken(p, key)
            return None
        problems.extend(_malformed(spec.output_schema, label, "output_schema", "the agent's output_schema"))
        base = p.parent
        tools: dict[str, ToolSpec] = {}
        available: dict[str, ToolSpec] = {}
        declared_in: dict[str, Path] = {}
        from_file: dict[str, tuple[Path, str]] = {}  # each available tool's file and field path there
        tool_folders: dict[str, Path] = {}
        listed: dict[Path, int] = {}  # each tools file (resolved) → where tool_files first names it
        for i, ref in enumerate(spec.tool_files):
            tp = _tool_file(base, ref)
            if not _present(tp):
                problems.append(SpecProblem(label, f"tool_files.{i}", f"file not found: {ref}"))
                continue
            first = listed.setdefault(tp.resolve(), i)
            if first != i:  # its tools would all be "duplicates", blamed on a file that has none
                problems.append(
                    SpecProblem(
                        label,
                        f"tool_files.{i}",
                        f"{ref} is listed twice: it is the file tool_files.{first} names ({spec.tool_files[first]})",
                    )
                )
                continue
            clashes: dict[str, list[str]] = {}  # another file, as tool_files names it → the tools both define
            try:
                for at, t in _load_tools_file(tp, str(tp)):
                    if t.name in available and from_file[t.name][0] != tp:
                        other = spec.tool_files[listed[from_file[t.name][0].resolve()]]
                        clashes.setdefault(other, []).append(t.name)
                    elif t.name in available:
                        problems.append(SpecProblem(str(tp), "tools", f"duplicate tool name {t.name!r}"))
                    available[t.name] = t
                    from_file[t.name] = (tp, at)
                    if ref.startswith("portagent:"):
                        declared_in.pop(t.name, None)
                    else:
                        declared_in[t.name] = tp.parent
            except SpecError as e:
                problems.extend(e.problems)
            for other, names in clashes.items():
                listed_names = ", ".join(repr(n) for n in names)
                problems.append(
                    SpecProblem(
                        label,
                        f"tool_files.{i}",
                        f"{ref} defines {'tools' if len(names) > 1 else 'tool'} {listed_names}, which {other} "
                        "defines too (a tool name must be defined once)",
                    )
                )
        for i, entry in enumerate(spec.tools):
            folder: Path | None = base
            if isinstance(entry, ToolSpec):
                tool = entry
            else:
                found = available.get(entry)
                if found is None:
                    close = difflib.get_close_matches(entry, list(available), n=1)
                    hint = f" (did you mean {close[0]!r}?)" if close else ""
                    where = (
                        f" in {', '.join(spec.tool_files)}" if spec.tool_files else " (no tool_files given)"
                    )
                    problems.append(
                        SpecProblem(label, f"tools.{i}", f"undefined tool {entry!r}{hint}: not found{where}")
                    )
                    continue
                tool, folder = found, declared_in.get(entry)
            if tool.name in tools:
                problems.append(
                    SpecProblem(label, f"tools.{i}", f"duplicate tool {tool.name!r} in the agent")
                )
                continue
            tools[tool.name] = tool
            if folder is not None:
                tool_folders[tool.name] = folder
            file, at = (Path(label), f"tools.{i}") if isinstance(entry, ToolSpec) else from_file[entry]
            problems.extend(_tool_schemas_malformed(tool, str(file), at))
        policy: PermissionPolicy
        policy_path: Path | None = None
        if isinstance(spec.policy, PermissionPolicy):
            policy = spec.policy
        elif isinstance(spec.policy, str):
            policy_path = _rel(base, spec.policy)
            if not _present(policy_path):
                problems.append(SpecProblem(label, "policy", f"file not found: {spec.policy}"))
                policy = PermissionPolicy()
            else:
                try:
                    policy = load_spec_file(policy_path, PermissionPolicy)
                except SpecError as e:
                    problems.extend(e.problems)
                    policy = PermissionPolicy()
        elif inherited_policy is not None:
            policy, policy_path = inherited_policy
        else:
            policy = default_policy or PermissionPolicy()
        if spec.name in agents:
            problems.append(SpecProblem(label, "name", f"two agents in one bundle are named {spec.name!r}"))
            return None
        node = AgentNode(
            spec=spec, path=p, tools=tools, policy=policy, policy_path=policy_path, tool_folders=tool_folders
        )
        agents[spec.name] = node
        by_path[key] = spec.name
        for i, d in enumerate(spec.delegation):
            dp = _rel(base, d.agent)
            if not _present(dp):
                problems.append(SpecProblem(label, f"delegation.{i}.agent", f"file not found: {d.agent}"))
                continue
            target = load_one(dp, str(dp), (policy, policy_path))
            if target is not None:
                node.edges.append(DelegationEdge(d.kind, target, d.description, d.context))
        return spec.name

    broken: set[Path] = set()

    def named_by_broken(p: Path, key: Path) -> None:
        """An agent spec that does not load still names its tools files, policy and sub-agents: what is wrong
        with each of them is reported now, not once the spec's own fields are fixed (each file's problems
        as its own load states them, each file once; a name that is not a plain string, or no file, is the
        spec's own problem, reported when it loads)."""
        if key in broken:
            return
        broken.add(key)
        try:
            data, _ = read_document(p)
        except SpecError:
            return
        if not isinstance(data, dict):
            return
        base = p.parent
        seen: set[Path] = set()

        def named(ref: Any, tools: bool = False) -> Path | None:
            """The file ``ref`` names, once, if it is one (a name too long for the system is none)."""
            if not isinstance(ref, str):
                return None
            try:
                f = _tool_file(base, ref) if tools else _rel(base, ref)
                if not f.is_file() or f.resolve() in seen:
                    return None
                seen.add(f.resolve())
            except (OSError, ValueError):
                return None
            return f

        refs = data.get("tool_files")
        for ref in refs if isinstance(refs, list) else []:
            tp = named(ref, tools=True)
            if tp is None:
                continue
            try:
                for at, t in _load_tools_file(tp, str(tp)):
                    problems.extend(_tool_schemas_malformed(t, str(tp), at))
            except SpecError as e:
                problems.extend(e.problems)
        policy = named(data.get("policy"))
        if policy is not None:
            try:
                load_spec_file(policy, PermissionPolicy)
            except SpecError as e:
                problems.extend(e.problems)
        delegation = data.get("delegation")
        for d in delegation if isinstance(delegation, list) else []:
            sub = named(d.get("agent")) if isinstance(d, dict) else None
            if sub is not None:
                load_one(sub, str(sub), None)

    p = Path(path)
    root = load_one(p, str(path), None)
    if problems or root is None:
        raise SpecError(_dedupe(problems))
    return AgentBundle(root=root, agents=agents)


def _dedupe(problems: list[SpecProblem]) -> list[SpecProblem]:
    seen: set[tuple[str, str, str]] = set()
    out = []
    for pr in problems:
        k = (pr.file, pr.path, pr.message)
        if k not in seen:
            seen.add(k)
            out.append(pr)
    return out
