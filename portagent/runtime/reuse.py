"""Incremental evals (``eval --reuse DIR``): a run whose inputs have not changed is not made again.

Each run an eval makes leaves ``inputs.json`` in its run folder: a hash over everything that decides
what the run does — the agent graph's spec, policy and tool hashes, the source of every module a tool
or the approver names (handlers, preconditions, reconcile functions, a ``module:function`` approver) and
of every module of the project those import, at any depth (``import`` statements read from the source,
not run; third-party and standard-library modules count through their versions), the request the case
makes, the approver's decisions, the cassette's files (replay) or the emulator
script (emulator mode; in replay mode too: a recording made against the emulator is stale once its script
changed, ``evals.drift``), and the portagent, SDK and Python versions. A later eval given ``--reuse DIR``
computes the same hash for each planned run; where it equals the one stored under ``DIR``, the run's
folder is carried over and scored again from its trace (so changed expectations, thresholds and graders
still apply), and it is labelled ``reused`` in every report. Any change makes the run again.

What is never reused: live runs (a vendor's answer is not a function of the inputs), and runs of agents
whose tools reach outside (MCP servers, remote agents): their answers can change with nothing here
changing. What the hash cannot see: files and environment variables a handler reads, and modules it
imports by a computed name (``importlib.import_module(name)``); after changing those, run without
``--reuse``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from portagent.runtime.eval_plan import RunTask

INPUTS_FILE = "inputs.json"
REUSE_SCHEMA = 1


@dataclass
class Carried:
    """A run folder read into memory before the results folder is emptied (``--reuse`` may name ``--out``)."""

    task_index: int
    source: Path
    files: dict[str, bytes] = field(default_factory=dict)


class Fingerprints:
    """Inputs hashes of planned runs. One instance per eval: agent graphs and handler sources are read
    once per eval, never cached across evals (a long-lived process may see them change)."""

    def __init__(self) -> None:
        self._bundles: dict[Path, Any] = {}
        self._handlers: dict[Path, dict[str, str] | None] = {}
        self._approvers: dict[tuple[Path, str], dict[str, str] | None] = {}
        self._scripts: dict[Path, str] = {}

    def key(self, task: RunTask) -> str | None:
        """The hash of what decides ``task``'s run, or None when such a run is never reused."""
        parts = self.parts(task)
        if parts is None:
            return None
        text = json.dumps(parts, sort_keys=True, ensure_ascii=False)
        return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()

    def parts(self, task: RunTask) -> dict[str, Any] | None:
        if task.mode == "live" or task.out_dir is None:
            return None
        try:
            return self._parts(task)
        except OSError:  # a file that vanished or cannot be read: such a run is never reused
            return None

    def _parts(self, task: RunTask) -> dict[str, Any] | None:
        from portagent import __version__
        from portagent.adapters.base import REGISTRY
        from portagent.core.versions import package_version
        from portagent.runtime.eval_plan import approver_for, request_for

        bundle = self._bundle(task.agent.path)
        if bundle is None or _reaches_outside(bundle):
            return None
        handlers = self._handler_sources(task.agent.path)
        if handlers is None:
            return None
        approver = approver_for(task.case, task.approver)
        if isinstance(approver, str) and ":" in approver:  # a module:function approver decides cards
            code = self._approver_sources(bundle.base_dir, approver.split(":", 1)[0])
            if code is None:
                return None
            handlers = {**handlers, **{f"approver:{k}": v for k, v in code.items()}}
        script = self._script(task.emulator_script) if task.emulator_script is not None else None
        if task.mode == "replay":
            recording = _folder_hash(task.cassette) if task.cassette is not None else None
        else:
            recording = script
        if recording is None:
            return None
        request = request_for(task.case, task.provider, task.repeat, bundle)  # the case's thread too
        return {
            "schema": REUSE_SCHEMA,
            "mode": task.mode,
            "provider": task.provider,
            "case": task.case.case_id,
            "repeat": task.repeat,
            "agent": task.agent.label,
            "spec_hash": bundle.spec_hash,
            "policy_hash": bundle.policy_hash,
            "tool_hashes": bundle.tool_hashes(),
            "handlers": handlers,
            "request": request.model_dump(mode="json", exclude={"idempotency_key"}, exclude_defaults=True),
            "approver": approver,
            "recording": recording,
            "script": script,  # a replay of an emulator recording drifts when its script changed
            "portagent": __version__,
            "portagent_source": _portagent_source(),  # an editable checkout changes without a new version
            "sdk": package_version(REGISTRY[task.provider].package),
            "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        }

    def write(self, task: RunTask) -> None:
        """Store a finished run's inputs hash beside its ``run.json`` (nothing for runs never reused)."""
        if task.out_dir is None or not (task.out_dir / "run.json").is_file():
            return
        key = self.key(task)
        if key is None:
            return
        from portagent.core.files import write_text_atomic

        write_text_atomic(task.out_dir / INPUTS_FILE, json.dumps({"schema": REUSE_SCHEMA, "key": key}) + "\n")

    def _bundle(self, path: Path) -> Any:
        if path not in self._bundles:
            from portagent.contracts.bundle import load_agent
            from portagent.contracts.errors import PortagentError

            try:
                self._bundles[path] = load_agent(path)
            except (OSError, PortagentError):
                self._bundles[path] = None
        return self._bundles[path]

    def _script(self, path: Path) -> str:
        """The emulator script's hash, read once per eval (every case of a suite usually shares it)."""
        if path not in self._scripts:
            self._scripts[path] = _file_hash(path)
        return self._scripts[path]

    def _handler_sources(self, agent_path: Path) -> dict[str, str] | None:
        """``{module: sha256 of its source file}`` for every handler module of the agent graph, plus every
        ``.py`` file beside the agent spec (the helpers a handler imports usually live there); None when a
        handler module cannot be found (then the run is never reused: its code cannot be fingerprinted)."""
        if agent_path not in self._handlers:
            bundle = self._bundle(agent_path)
            self._handlers[agent_path] = _handler_sources(bundle) if bundle is not None else None
        return self._handlers[agent_path]

    def _approver_sources(self, base: Path, module: str) -> dict[str, str] | None:
        if (base, module) not in self._approvers:
            self._approvers[base, module] = _sources(base, [(module, (base,))])
        return self._approvers[base, module]


def check_reusable(folder: Path) -> None:
    """Refuse a ``--reuse`` folder that is not a results folder (one message, nothing read)."""
    from portagent.contracts.errors import UsageError

    if not folder.is_dir():
        raise UsageError(f"--reuse {folder}: no such results folder")
    from portagent.recording.layout import is_results_folder

    if not is_results_folder(folder):
        raise UsageError(f"--reuse {folder}: not a portagent results folder (no eval.json or report.json)")


def carry_over(tasks: Sequence[RunTask], source: Path, results: Path) -> dict[int, Carried]:
    """The runs of ``tasks`` whose inputs equal those stored under ``source`` (an earlier results
    folder), read into memory. ``results``: the new results folder the tasks' ``out_dir`` lie in."""
    carried: dict[int, Carried] = {}
    prints = Fingerprints()
    results = results.resolve()  # a relative --out (the demo's default) against the plan's absolute folders
    for task in tasks:
        if task.out_dir is None:
            continue
        try:
            folder = source / task.out_dir.resolve().relative_to(results)
        except ValueError:
            continue
        stored = stored_key(folder)
        if stored is None or stored != prints.key(task):
            continue
        files = {}
        try:
            for path in sorted(folder.rglob("*")):
                if path.is_file() and not path.is_symlink():
                    files[path.relative_to(folder).as_posix()] = path.read_bytes()
        except OSError:
            continue
        if "run.json" in files and "trace.jsonl" in files:
            carried[task.index] = Carried(task.index, folder, files)
    return carried


def set_aside(out_dir: Path, source: Path) -> Path | None:
    """When ``--reuse`` names the results folder being written (``--out``), rename it aside before a new
    one is made: the earlier results stay on disk, whole, until the runs carried over are back in place
    (then ``shutil.rmtree`` the aside folder). An interrupt in between leaves them there. Returns the aside
    folder, or None when ``--reuse`` reads another folder."""
    if not out_dir.is_dir() or out_dir.resolve() != source.resolve():
        return None
    import os
    import time

    aside = out_dir.with_name(f".{out_dir.name}.previous-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
    try:
        out_dir.rename(aside)
    except OSError:  # cannot rename here (permissions, a mount point): empty and restore as before
        return None
    return aside


def restore(carried: Carried, task: RunTask) -> None:
    """Write a carried run folder into the task's (new, empty) run folder."""
    assert task.out_dir is not None
    for rel, data in carried.files.items():
        target = task.out_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def stored_key(folder: Path) -> str | None:
    """The inputs hash a finished run left in ``folder`` (None: none, or unreadable)."""
    try:
        data = json.loads((folder / INPUTS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if (
        not isinstance(data, dict)
        or data.get("schema") != REUSE_SCHEMA
        or not isinstance(data.get("key"), str)
    ):
        return None
    return str(data["key"])


def _reaches_outside(bundle: Any) -> bool:
    """Tools whose answers can change with nothing in the spec, cassette or code changing."""
    return any(node.spec.mcp_servers or node.spec.a2a_agents for node in bundle.agents.values())


def _handler_sources(bundle: Any) -> dict[str, str] | None:
    """``{module: sha256 of its source}`` for every module the agent graph's tools name and every project
    module those import (``_sources``), plus every ``.py`` file beside the agent spec and beside each
    tools file (a shared tools file keeps its handler module there); None when a named module cannot be
    found (then the run is never reused: its code cannot be fingerprinted). A named module is looked for
    as a run looks for it (``tools/handlers.py`` ``bundle_scope``): in its tool's folder first, then the
    agent specs' folders, then the other tools files' folders, then ``sys.path``."""
    from portagent.contracts.bundle import folder_name, references
    from portagent.tools.handlers import bundle_scope

    base = bundle.base_dir
    scope = bundle_scope(bundle)
    folders = [Path(f) for f in scope.folders]
    named: dict[tuple[str, tuple[Path, ...]], None] = {}
    for node in bundle.agents.values():
        for tool in node.tools.values():
            for ref in references(tool):
                if ":" in ref:
                    named[ref.split(":", 1)[0], tuple(Path(f) for f in scope.order(ref))] = None
    out = _sources(base, sorted(named), folders)
    if out is None:
        return None
    base_s = folder_name(base)
    for folder in dict.fromkeys([Path(base_s), *(Path(f) for f in scope.folders)]):
        for path in sorted(folder.glob("*.py")):
            if path.is_file():  # not an editor's dangling lock link (.#handlers.py)
                out[f"{_shown(folder, Path(base_s))}/{path.name}"] = _file_hash(path)
    return out


def _sources(
    base: Path, named: Sequence[tuple[str, Sequence[Path]]], folders: Sequence[Path] = ()
) -> dict[str, str] | None:
    """``{module: sha256}`` for the ``named`` modules (each with the folders looked in before
    ``sys.path``) and, transitively, every module they import that is project code: found beside the
    importing module first (a module loaded from a run's folder imports from that folder first,
    ``core/handler_folders.py``), then under ``base``, the run's other ``folders``, the folder a named
    module was found in or a folder on ``sys.path`` (``PYTHONPATH``, an editable install), unless that
    folder is the standard library's or an installed package's. Imports are read from the source
    (``ast``), never run. None when a named module cannot be found. A module from one of ``folders``
    other than ``base`` is keyed with its folder relative to ``base`` (two folders' ``tools`` are two
    modules; moving the whole project keeps the keys)."""
    resolved = base.resolve()
    extra = {f.resolve() for f in folders} - {resolved}
    roots = [base, *(f for f in folders if f.resolve() != resolved)]
    files: dict[str, Path] = {}
    queue: list[tuple[str, Path, Path | None]] = []

    def add(module: str, path: Path, home: Path | None) -> None:
        key = module if home is None or home.resolve() not in extra else f"{_shown(home, resolved)}:{module}"
        if key not in files:
            files[key] = path
            queue.append((module, path, home))

    for module, order in named:
        local = next(((f, p) for f in order if (p := _beside(f, module)) is not None), None)
        if local is not None:
            add(module, local[1], local[0])
            continue
        found = _find(base, module)
        if found is None:
            return None
        root = _root_of(found, module)
        if root is not None and root not in roots and not _third_party(root):
            roots.append(root)
        add(module, found, None)
    for entry in sys.path:
        folder = Path(entry or ".")
        if folder.is_dir() and folder not in roots and not _third_party(folder):
            roots.append(folder)
    while queue:
        name, path, home = queue.pop()
        for imported in _imports(name, path):
            if imported.split(".", 1)[0] == "portagent":  # (its own source is hashed)
                continue
            for root in [home, *roots] if home is not None else roots:
                found = _beside(root, imported)
                if found is not None:
                    add(imported, found, root if root.resolve() in extra else None)
                    break
    return {name: _file_hash(path) for name, path in sorted(files.items())}


def _shown(folder: Path, base: Path) -> str:
    """``folder`` relative to ``base`` (``.``, ``../shared``), as the keys name it."""
    import os

    return Path(os.path.relpath(folder.resolve(), base.resolve())).as_posix()


def _find(base: Path, module: str) -> Path | None:
    """Where ``import module`` would load it from, with the spec's folder first on the path."""
    base_s = str(base)
    added = base_s not in sys.path
    if added:
        sys.path.insert(0, base_s)
    try:
        spec = importlib.util.find_spec(module)
    except Exception:  # find_spec imports the parent package: its code may fail in any way
        return None
    finally:
        if added:
            sys.path.remove(base_s)
    if spec is None or spec.origin is None or not Path(spec.origin).is_file():
        return None
    return Path(spec.origin)


def _root_of(path: Path, module: str) -> Path | None:
    """The folder on ``sys.path`` that ``module`` (found at ``path``) was imported from."""
    parts = module.split(".")
    up = len(parts) if path.name == "__init__.py" else len(parts) - 1
    root = path.parent
    for _ in range(up):
        root = root.parent
    return root if _beside(root, module) == path else None


@lru_cache(maxsize=1)
def _library_folders() -> tuple[Path, ...]:
    import site
    import sysconfig

    paths = {sysconfig.get_path(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths.update(site.getsitepackages())
    return tuple(Path(p).resolve() for p in paths if p)


def _third_party(folder: Path) -> bool:
    resolved = folder.resolve()
    return any(resolved == lib or lib in resolved.parents for lib in _library_folders())


def _imports(name: str, path: Path) -> set[str]:
    """Modules ``path`` (module ``name``) imports, as absolute names, with their parent packages (their
    ``__init__`` runs first). ``from a import b`` gives ``a`` and ``a.b`` (``b`` may be a submodule)."""
    import ast

    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError):  # the import itself would fail: the run fails the same either way
        return set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".") if package else []
                if node.level - 1 > len(parts):
                    continue
                anchor = ".".join(parts[: len(parts) - (node.level - 1)])
                base = ".".join(p for p in (anchor, node.module or "") if p)
            else:
                base = node.module or ""
            if not base:
                continue
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    with_parents = set(out)
    for module in out:
        parts = module.split(".")
        with_parents.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return with_parents


def _beside(base: Path, module: str) -> Path | None:
    """The source file of ``module`` under ``base`` (``a.b`` → ``a/b.py`` or ``a/b/__init__.py``), if any."""
    stem = base.joinpath(*module.split("."))
    for candidate in (stem.with_suffix(".py"), stem / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@lru_cache(maxsize=1)
def _portagent_source() -> str:
    """One hash of portagent's own Python source (read once per process)."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _folder_hash(folder: Path) -> str | None:
    digest = hashlib.sha256()
    try:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            digest.update(path.relative_to(folder).as_posix().encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
            digest.update(b"\0")
    except OSError:
        return None
    return digest.hexdigest()
