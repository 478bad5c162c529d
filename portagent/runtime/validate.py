"""``portagent validate``: every problem of spec files, suites and emulator scripts, plus the
portability verdict when a provider is named (``--provider``)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from portagent.adapters.portability import verdict
from portagent.contracts.bundle import AgentBundle, load_agent
from portagent.contracts.checks import spec_problems, tool_problems
from portagent.contracts.errors import SpecError, SpecProblem, UsageError
from portagent.contracts.loader import KINDS, iter_spec_files, load_spec_file, loading_once, read_document
from portagent.contracts.providers import PROVIDERS
from portagent.contracts.tool import ToolSet, ToolSpec

if TYPE_CHECKING:
    from portagent.contracts.loaded_suite import LoadedSuite


@dataclass
class FileResult:
    path: str
    kind: str | None
    problems: list[SpecProblem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None
    """Met in a folder walk and recognisably not a spec (a recorded run's files, a cassette, an eval's
    output, a suite's case file): what it is. Not counted as checked."""
    case_files: list[Path] = field(default_factory=list)
    """A suite's ``case_files``, resolved (they are checked with the suite)."""

    @property
    def ok(self) -> bool:
        return not self.problems


OUTPUT_KINDS = {
    "eval-run": "eval.json",
    "suite-result": "report.json",
    "comparison": "comparison.json",
    "gate-decision": "ci_gate.json",
}
"""Kinds of the files ``eval``/``gate`` write, never specs (a test keeps this equal to the models)."""


RECORDING_FILES = frozenset({"cassette.yaml", "mcp.json", "a2a.json", "inputs.json"})
"""The other files a recording or an eval writes beside a run's ``run.json`` (vcrpy cassette, MCP and A2A
cassettes, the ``--reuse`` fingerprint); a test keeps it equal to the writers' constants."""


def not_a_spec(path: Path, case_files: dict[Path, str]) -> str | None:
    """What a file that failed to load as a spec recognisably is instead, or None (then it is a broken
    spec). A recording's file by its name beside a ``run.json``; a suite's case file by the suite; else by
    a shape no spec has (portagent's eval output kinds, a vcrpy cassette, a JSON Schema). Never a file
    that does not parse, nor a mapping with a ``kind:`` or ``schema_version:`` of its own — a spec with a
    typo in its kind, or one that lost its ``kind:``, is still reported."""
    if path.name in RECORDING_FILES and (path.parent / "run.json").is_file():
        return f"part of the recorded run in {path.parent}"  # by name: a long cassette may be over the size limit
    suite = case_files.get(path.resolve())
    if suite is not None:
        return f"a case file of {suite} (checked with it)"
    try:
        data, _ = read_document(path)
    except SpecError:
        return None
    if not isinstance(data, dict):
        return None
    kind = data.get("kind")
    if isinstance(kind, str) and kind in OUTPUT_KINDS:
        return f"portagent's eval output ({OUTPUT_KINDS[kind]}, kind {kind!r})"
    if "kind" in data or "schema_version" in data:
        return None
    if isinstance(data.get("interactions"), list) and "version" in data:
        return "a recorded HTTP cassette (vcrpy)"
    if isinstance(data.get("$schema"), str) and "json-schema.org" in data["$schema"]:
        return "a JSON Schema document"
    return None


def bundle_problems(
    bundle: AgentBundle, provider: str | None, *, list_mcp: bool = False
) -> tuple[list[SpecProblem], list[str]]:
    """Spec-level problems plus the portability verdict: with ``provider`` its lacks are problems (each
    with its field path); without, each provider that cannot run the agent is a note.

    Rules may name the tools of a declared MCP source: its last live listing (kept by every run) makes
    that check exact; ``list_mcp`` lists the servers now (starting them) instead."""
    listings: dict[str, list[str]] = {}
    if any(n.spec.mcp_servers for n in bundle.agents.values()):
        from portagent.tools.mcp.sources import list_live, remembered_listings

        if list_mcp:
            import asyncio

            listings = asyncio.run(list_live(bundle))
        else:
            listings = remembered_listings(bundle)
    problems = spec_problems(bundle, listings) + handler_problems(bundle)
    notes: list[str] = []
    for p in [provider] if provider else list(PROVIDERS):
        found = verdict(bundle, p)
        if provider:
            problems += found.problems()
            notes += found.notes
        else:
            notes += [problem.message for problem in found.problems()]
    return problems, notes


def handler_problems(bundle: AgentBundle) -> list[SpecProblem]:
    """A tool whose handler module cannot be found fails every call at run time (``handler_error``): found
    here without running anything, looked up as the runner resolves handlers (``AgentBundle.handler_plan``,
    ``tools/handlers.py``) — in the folder of the file that declared the tool (a shared tools file's, or the
    agent spec's), then the agent specs' folders, then the other tools files' folders, then
    ``sys.path``; a module that raises on import or a missing function still shows only when a call
    imports it. A reference that tools of two folders share while each folder holds its own module is
    reported too: a run resolves a reference once, so those calls fail."""
    import sys

    from portagent.contracts.bundle import clash_message, folder_name, references
    from portagent.core import handler_folders

    scope = bundle.handler_plan(lambda module, folder: handler_folders.holds(module, folder) is not None)
    out: list[SpecProblem] = []
    seen: set[tuple[str | None, str]] = set()
    clashed: set[str] = set()
    for node in bundle.agents.values():
        own = node.path.parent.resolve() if node.path is not None else None
        label = str(node.path) if node.path is not None else node.name
        for spec in node.tools.values():
            declared = node.tool_folders.get(spec.name)
            where = Path(folder_name(declared)) if declared is not None else own
            for ref in references(spec):
                if ref in scope.clash and ref not in clashed:
                    clashed.add(ref)
                    out.append(
                        SpecProblem(
                            label,
                            f"tools.{spec.name}",
                            f"tool {spec.name!r}: {clash_message(ref, scope.clash[ref])}",
                        )
                    )
            for at, what, ref in _named_functions(spec):
                module = ref.partition(":")[0]
                if ref in scope.clash or (str(where), module) in seen:
                    continue
                seen.add((str(where), module))
                shadow = _shadowing(module.split(".")[0], where)
                if shadow:
                    out.append(SpecProblem(label, f"tools.{spec.name}.{at}", f"tool {spec.name!r}: {shadow}"))
                    continue
                order = list(dict.fromkeys([*([str(where)] if where else []), *scope.folders]))
                held = next((h for f in order if (h := handler_folders.holds(module, f)) is not None), None)
                if held:
                    continue
                # not in a folder of the run: imported the ordinary way — unless the module of that name this
                # process holds is one portagent loaded from another spec's folder (the run does not use it)
                if held is None and module in sys.modules and handler_folders.folder_of(module) is None:
                    continue
                if held is None and _on_sys_path(module):
                    continue
                beside = (
                    f"in the tools file's folder {where}, next to the agent spec"
                    if declared is not None and where != own
                    else "next to the agent spec"
                )
                out.append(
                    SpecProblem(
                        label,
                        f"tools.{spec.name}.{at}",
                        f"{what} module {module!r} of tool {spec.name!r} not found (looked {beside} and on "
                        "sys.path; PYTHONPATH adds folders)",
                    )
                )
    return out


def _named_functions(tool: ToolSpec) -> list[tuple[str, str, str]]:
    """(field, what it is, ``module:function``) of each function a tool names — its handler, precondition
    checks and reconcile function; each is resolved the same way at run time, and a missing module fails
    the calls (a precondition's: ``handler_error`` on every call; a reconcile's: when an effect's outcome
    is unknown, the one moment it is needed)."""
    named = [("handler", "handler", tool.handler)]
    named += [
        (f"preconditions.{i}.check", "precondition check", p.check) for i, p in enumerate(tool.preconditions)
    ]
    if tool.idempotency.reconcile:
        named.append(("idempotency.reconcile", "reconcile", tool.idempotency.reconcile))
    return [(field, what, ref) for field, what, ref in named if ref]


def _on_sys_path(module: str) -> bool:
    import sys
    from importlib.machinery import PathFinder

    parts, where = module.split("."), list(sys.path)
    for i in range(len(parts)):
        found = PathFinder.find_spec(".".join(parts[: i + 1]), where)
        if found is None:
            return False
        where = list(found.submodule_search_locations or [])
    return True


def _shadowing(top: str, folder: Path | None) -> str:
    """Why the handler module ``top`` next to the spec would never be read, or ``""``: the standard library
    has a module of that name (``email.py``, ``json.py``): the runner never takes a standard-library name
    from a spec folder (``core/handler_folders.py``), so every call would fail "has no attribute". An
    installed package's name is no problem: the folder's module is loaded for its handlers only."""
    import sys

    if folder is None:
        return ""
    own = next((f for f in (folder / f"{top}.py", folder / top / "__init__.py") if f.is_file()), None)
    if own is None:
        return ""
    if top not in sys.stdlib_module_names and top not in sys.builtin_module_names:
        return ""  # an installed package's name: the folder's own module is the one handlers get
    return (
        f"handler module {top!r} ({own}) has the name of another module, the standard library's, which "
        f"Python imports instead; rename {own.name!r} and the handler references to it"
    )


def check_file(path: Path, provider: str | None = None, *, list_mcp: bool = False) -> FileResult:
    label = str(path)
    try:
        doc = load_spec_file(path)
    except SpecError as e:
        return FileResult(label, None, _and_what_it_names(path, e.problems))
    kind = getattr(doc, "kind", None)
    result = FileResult(label, kind)
    if isinstance(doc, ToolSpec):
        result.problems += tool_problems(doc, label)
    elif isinstance(doc, ToolSet):
        first: dict[str, int] = {}
        for i, t in enumerate(doc.tools):
            if first.setdefault(t.name, i) != i:
                result.problems.append(
                    SpecProblem(label, f"tools.{i}.name", f"duplicate tool name {t.name!r}")
                )
            result.problems += tool_problems(t, label, f"tools.{i}.")
    elif kind == "agent":
        try:
            bundle = load_agent(path)
        except SpecError as e:
            result.problems += e.problems
        else:
            probs, notes = bundle_problems(bundle, provider, list_mcp=list_mcp)
            result.problems += probs
            result.notes += notes
    elif kind == "suite":
        from portagent.contracts.loaded_suite import (
            load_suite,  # resolves case files, agent specs and scripts
        )

        base = path.resolve().parent  # as load_suite resolves them
        result.case_files = [(base / rel).resolve() for rel in getattr(doc, "case_files", [])]
        try:
            loaded = load_suite(path)
        except SpecError as e:
            result.problems += e.problems
        else:
            own = loaded.suite.emulator_script
            result.problems += script_problems(
                label, loaded.emulator_scripts, (base / own).resolve() if own else None
            )
            result.problems += judge_script_problems(label, loaded, base)
    return result


def _and_what_it_names(path: Path, problems: list[SpecProblem]) -> list[SpecProblem]:
    """An agent spec that does not load, with the problems of the files it names (tools files, policy,
    sub-agents: ``load_agent`` reads them even then); any other file's problems as they are."""
    from portagent.contracts.loader import read_document

    try:
        data, _ = read_document(path)
    except SpecError:
        return problems
    if not isinstance(data, dict) or data.get("kind") != "agent":
        return problems
    try:
        load_agent(path)
    except SpecError as e:
        own = {(p.file, p.path, p.message) for p in problems}
        return problems + [p for p in e.problems if (p.file, p.path, p.message) not in own]
    return problems


def judge_script_problems(label: str, loaded: LoadedSuite, base: Path) -> list[SpecProblem]:
    """The emulator scripts of the suite's judges (its graders', and those written inline in a case), each
    loaded as ``eval --judges --emulator`` loads it; a script the cases use too is ``script_problems``'."""
    from portagent.contracts.emulator_script import load_script

    cases_use = set(loaded.emulator_scripts.values())
    judges: dict[Path, str] = {}  # script → the first field that names it
    for i, g in enumerate(loaded.suite.graders):
        if g.emulator_script:
            judges.setdefault((base / g.emulator_script).resolve(), f"graders.{i}.emulator_script")
    for c in loaded.cases:
        for j, inline in enumerate(c.expect.graders):
            if not isinstance(inline, str) and inline.emulator_script:
                where = f"case {c.case_id}: expect.graders.{j}.emulator_script"
                judges.setdefault((base / inline.emulator_script).resolve(), where)
    out: list[SpecProblem] = []
    for script, where in judges.items():
        if script in cases_use:
            continue
        try:
            load_script(script)
        except SpecError as e:
            n = len(e.problems)
            out.append(
                SpecProblem(
                    label,
                    where,
                    f"judge emulator script {script} does not load ({n} problem{'s' if n != 1 else ''}), so "
                    "that judge cannot run on the emulator",
                    causes=tuple(e.problems),
                )
            )
    return out


def script_problems(label: str, scripts: dict[str, Path], suites_own: Path | None) -> list[SpecProblem]:
    """A suite's emulator scripts (its own, its cases'), each loaded as ``eval --emulator`` loads it: one
    that does not load is one problem of the suite, with its problems as the causes. ``validate`` of
    the suite said "ok" for a script with a misspelt ``conversations:`` or a policy file in its place.
    ``suites_own``: the suite's own ``emulator_script`` (resolved), the field a problem of it points at.
    The judges' scripts: ``judge_script_problems``."""
    from portagent.contracts.emulator_script import load_script

    out: list[SpecProblem] = []
    for script in dict.fromkeys(scripts.values()):
        used_by = sorted(case for case, s in scripts.items() if s == script)
        try:
            load_script(script)
        except SpecError as e:
            n = len(e.problems)
            if len(used_by) == len(scripts):
                who = "no case can run on the emulator"
            else:
                shown = ", ".join(used_by[:5]) + (f" and {len(used_by) - 5} more" if len(used_by) > 5 else "")
                who = f"case{'s' if len(used_by) != 1 else ''} {shown} cannot run on the emulator"
            out.append(
                SpecProblem(
                    label,
                    "emulator_script" if script == suites_own else "",  # a case's own: the cases named
                    f"emulator script {script} does not load ({n} problem{'s' if n != 1 else ''}), so {who}",
                    causes=tuple(e.problems),
                )
            )
    return out


def check_paths(paths: list[str], provider: str | None = None, *, list_mcp: bool = False) -> list[FileResult]:
    """Check files and folders. A file met in a folder walk that is recognisably not a spec (see
    ``not_a_spec``) comes back ``skipped``; a file named on its own is always checked, and when it is one
    of those, its problem says what it is. Raises UsageError when a path is missing or no spec is left."""
    for raw in paths:
        if not raw.strip():
            raise UsageError("an empty path was given; name spec files or folders")
        if not Path(raw).exists():
            if Path(raw).is_symlink():  # a dangling link or a loop of links: say so, not "no such file"
                raise UsageError(f"{raw}: a symbolic link that leads nowhere (dangling, or a loop of links)")
            raise UsageError(f"{raw}: no such file or directory")
        if Path(raw).is_dir() and not iter_spec_files([raw]):
            raise UsageError(f"{raw}: no spec files (*.yaml, *.yml, *.json) in this folder")
    named = {Path(raw) for raw in paths if not Path(raw).is_dir()}
    with loading_once():
        results = [(f, check_file(f, provider, list_mcp=list_mcp)) for f in iter_spec_files(paths)]
    case_files = {c: r.path for _, r in results for c in r.case_files}
    for f, r in results:
        if r.ok or r.kind is not None:
            continue
        what = not_a_spec(f, case_files)
        if what is None:
            continue
        if f in named:
            r.problems = [SpecProblem(r.path, "", f"{what}, not a spec file (kinds: {', '.join(KINDS)})")]
        else:
            r.problems, r.skipped = [], what
    if results and all(r.skipped for _, r in results):
        raise UsageError(
            f"no spec files in {', '.join(paths)}: all {len(results)} YAML/JSON files are recorded runs, "
            "cassettes, eval output, case files or JSON Schemas"
        )
    listed_once([r for _, r in results])
    return [r for _, r in results]


def listed_once(results: list[FileResult]) -> None:
    """Each problem in full once when the files it involves are checked together (a folder). An agent
    lists the problems of the tools file it loads, and a suite those of an agent spec that does not load:
    one bad schema was up to five copies of one message. A problem another file lists as its own
    becomes one line per file, where the first was ("N problems, listed under that file", the file named
    as its own listing names it); the causes (``SpecProblem.causes``) listed in full elsewhere, or already
    shown as another's, are left out of the message that follows from them, which says where they are."""

    def key(file: str) -> str:
        return str(Path(file).resolve())

    def same(borrowed: SpecProblem, listed: SpecProblem) -> bool:
        """One problem, maybe worded with a prefix where borrowed (an agent names the tool: "tool 'x': …")."""
        return (key(borrowed.file), borrowed.path, borrowed.line) == (
            key(listed.file),
            listed.path,
            listed.line,
        ) and borrowed.message.endswith(listed.message)

    own = {key(r.path): [p for p in r.problems if key(p.file) == key(r.path)] for r in results}
    heading = {key(r.path): r.path for r in results}  # a file as its own listing names it
    for r in results:
        kept: list[SpecProblem | str] = []
        elsewhere: dict[str, int] = {}
        for p in r.problems:
            there = key(p.file)
            if there != key(r.path) and any(same(p, q) for q in own.get(there, [])):
                if there not in elsewhere:
                    kept.append(there)  # the line that counts them goes where the first one was
                elsewhere[there] = elsewhere.get(there, 0) + 1
            else:
                kept.append(p)
        r.problems = [
            SpecProblem(
                heading[p],
                "",
                f"{elsewhere[p]} problem{'s' if elsewhere[p] != 1 else ''}, listed under that file",
            )
            if isinstance(p, str)
            else p
            for p in kept
        ]
    full = [p for r in results for p in r.problems if not p.causes]
    for r in results:
        for i, p in enumerate(r.problems):
            if not p.causes:
                continue
            shown = [c for c in p.causes if any(same(c, q) for q in full)]
            left = tuple(c for c in p.causes if c not in shown)
            if shown:
                first = shown[0]
                where = replace(first, file=heading.get(key(first.file), first.file)).where()
                more = f" and {len(shown) - 1} more" if len(shown) > 1 else ""
                r.problems[i] = replace(p, causes=left, message=f"{p.message} (see {where}{more})")
            full += left  # shown once here, in full
