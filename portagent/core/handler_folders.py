"""Importing a handler module from its spec's folder, without putting that folder on ``sys.path``.

A ``module:function`` reference names a module by its bare name (``tools:get_order``), and most projects
keep one ``tools.py`` per agent folder. Python's import system has one ``sys.path`` and one
``sys.modules`` for the whole process, so putting every spec folder first on ``sys.path`` (as portagent
did) made the second agent's ``tools:get_order`` run the FIRST folder's function whenever two agents ran
in one process (an eval's worker, the pytest plugin, a notebook), and a ``yaml.py`` or ``httpx.py`` beside
a spec hid that package from everything imported later (the SDKs import lazily).

What this module does instead, for a spec folder F:

- ``load(name, F)`` imports the module ``name`` found IN F — a ``.py`` file, a package, or a folder without
  ``__init__.py`` when a submodule of it is named (``handlers.orders``) — or returns None when F does not
  hold it (the caller then imports it the ordinary way: an installed package, ``PYTHONPATH``). The
  standard library's names are never taken from F (``email.py`` beside a spec: ``validate`` says to rename
  it).
- The module keeps its own name in ``sys.modules`` when that name is free (nothing of that name imported,
  none on ``sys.path`` but this very file): ``import tools`` elsewhere then finds the same module, as
  before. When the name is taken — another folder's ``tools.py``, an installed ``yaml`` — the module is
  loaded as ``_portagent_spec_<folder hash>.<name>``, so neither hides the other.
- Imports written in such a module (``from helpers import fmt`` next to ``tools.py``, at import time or
  inside a function at call time, in any thread) look in F first: each module loaded from F gets its own
  ``__import__`` (through its ``__builtins__``) that sends a name F holds to F's module, and every other
  name to the ordinary import. Relative imports inside a package in F work as usual. F is never added
  to ``sys.path``, so nothing else in the process sees F's files. What is not redirected:
  ``importlib.import_module(name)`` called with a computed name (it does not go through ``__import__``);
  a handler that needs that imports the module by name, or lives in an installed package.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

PREFIX = "_portagent_spec_"
"""Names of modules loaded from a spec folder whose own name was taken start with this."""

_STDLIB = frozenset(sys.stdlib_module_names) | frozenset(sys.builtin_module_names)

_LOCK = threading.RLock()
_NAMES: dict[tuple[str, str], str] = {}
"""(folder, top-level name) → the name in ``sys.modules`` of that folder's module."""
MARK = "__portagent_spec_folder__"
"""Set on each module loaded from a spec folder: the folder (the run-time check and the finder read it)."""
_BUILTINS: dict[str, dict[str, Any]] = {}
_PENDING: dict[str, tuple[importlib.machinery.ModuleSpec, str]] = {}
"""Name chosen in ``sys.modules`` → (the folder's module found, the folder), until Python has imported it."""


def load(name: str, folder: str) -> str | None:
    """Import the top-level module of the dotted ``name`` from ``folder``; its name in ``sys.modules``, or
    None when ``folder`` does not hold it. Raises what importing it raises.

    The module's code runs inside Python's own import (``importlib.import_module`` of the chosen name, the
    finder below supplying the folder's file), never under a lock of portagent's: Python's per-module locks
    let two threads import a folder's modules at once, give a circular import the half-made module as
    usual, and detect a cycle between threads instead of hanging."""
    top, _, rest = name.partition(".")
    if not top or top in _STDLIB:
        return None
    known = _NAMES.get((folder, top))
    if known is not None:
        module = sys.modules.get(known)
        if module is not None:
            if getattr(getattr(module, "__spec__", None), "_initializing", False):
                importlib.import_module(known)  # another thread is running it: wait for it, as Python does
            return known
    spec = _find(top, folder, rest)  # (the common miss — an installed package — takes no lock)
    if spec is None:
        return None
    with _LOCK:  # only the choice of name: nothing runs under this lock
        known = _NAMES.get((folder, top))
        if known is not None and known in sys.modules:
            target = known
        else:
            own = _loaded_as(top, spec)
            if own is not None:
                _NAMES[(folder, top)] = own
                return own
            target = top if _free(top, spec) else f"{_package(folder)}.{top}"
            _NAMES[(folder, top)] = target
            _PENDING[target] = (spec, folder)
            _install_finder()
    try:
        module = importlib.import_module(target)
    except BaseException:
        with _LOCK:
            if target not in sys.modules and _NAMES.get((folder, top)) == target:
                _NAMES.pop((folder, top), None)  # a later call tries again
        raise
    finally:
        with _LOCK:
            if target in sys.modules:
                _PENDING.pop(target, None)
    if _own(module, MARK) is None:  # a namespace package or a compiled module: no loader of ours ran
        setattr(module, MARK, folder)
    return target


def holds(name: str, folder: str) -> bool | None:
    """Whether ``folder`` holds the dotted module ``name``, found without running anything: None when the
    folder does not hold its top-level module (it is then imported the ordinary way), False when it does
    but not the rest of the name (importing it fails)."""
    top, _, rest = name.partition(".")
    if not top or top in _STDLIB:
        return None
    spec = _find(top, folder, rest)
    if spec is None:
        return None
    where, parts = list(spec.submodule_search_locations or []), rest.split(".") if rest else []
    for i, _part in enumerate(parts):
        try:
            found = importlib.machinery.PathFinder.find_spec(".".join([top, *parts[: i + 1]]), where)
        except (ImportError, ValueError, OSError):
            found = None
        if found is None:
            return False
        where = list(found.submodule_search_locations or [])
    return True


def display(text: str) -> str:
    """``text`` with the private prefix of folder-loaded module names taken out (messages name ``tools``,
    not ``_portagent_spec_1a2b….tools``)."""
    if PREFIX not in text:
        return text
    import re

    return re.sub(rf"{PREFIX}[0-9a-f]+\.", "", text)


def _find(top: str, folder: str, rest: str) -> importlib.machinery.ModuleSpec | None:
    """``top`` in ``folder``: a module or package; a folder without ``__init__.py`` only when the name goes
    on into it and the next part is there (an ``agents/`` folder beside a spec is not the ``agents``
    package a handler imports)."""
    try:
        spec = importlib.machinery.PathFinder.find_spec(top, [folder])
    except (ImportError, ValueError, OSError):
        return None
    if spec is None:
        return None
    if spec.origin is None:  # a namespace portion
        if not rest:
            return None
        inner = list(spec.submodule_search_locations or [])
        nxt = rest.partition(".")[0]
        try:
            if importlib.machinery.PathFinder.find_spec(f"{top}.{nxt}", inner) is None:
                return None
        except (ImportError, ValueError, OSError):
            return None
    return spec


def _own(module: object, name: str) -> Any:
    """``module``'s own attribute ``name`` — read from its ``__dict__``: a module's ``__getattr__`` (lazy
    imports, as langchain_core's) must not run here, inside the import system."""
    namespace = getattr(module, "__dict__", None)
    return namespace.get(name) if isinstance(namespace, dict) else None


def _same(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    try:
        return Path(a).samefile(b)
    except OSError:
        return False


def _loaded_as(top: str, spec: importlib.machinery.ModuleSpec) -> str | None:
    """``top`` when ``sys.modules`` already holds this very file under its own name (the user put the
    folder on ``sys.path`` and imported it, or portagent loaded it before): reused, not loaded twice."""
    module = sys.modules.get(top)
    if module is None:
        return None
    if spec.origin is None:
        mine = [str(p) for p in spec.submodule_search_locations or []]
        theirs = [str(p) for p in _own(module, "__path__") or []]
        return top if mine and any(_same(m, t) for m in mine for t in theirs) else None
    return top if _same(_own(module, "__file__"), spec.origin) else None


def _free(top: str, spec: importlib.machinery.ModuleSpec) -> bool:
    """Whether ``top`` can name the folder's module in ``sys.modules`` without hiding another module: none
    of that name is imported, and ``sys.path`` finds no other."""
    if top in sys.modules:
        return False
    try:
        other = importlib.machinery.PathFinder.find_spec(top, sys.path)
    except (ImportError, ValueError, OSError):
        return False
    if other is None:
        return True
    if spec.origin is None or other.origin is None:
        return False
    return _same(other.origin, spec.origin)


def _package(folder: str) -> str:
    """The private package holding the folder's modules whose own names are taken, made once."""
    name = PREFIX + hashlib.sha256(folder.encode()).hexdigest()[:12]
    if name not in sys.modules:
        package = ModuleType(name, f"modules of the spec folder {folder}")
        package.__path__ = [folder]
        package.__package__ = name
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [folder]
        package.__spec__ = spec
        setattr(package, MARK, folder)
        sys.modules[name] = package
    return name


def _spec_for(
    target: str, found: importlib.machinery.ModuleSpec, folder: str
) -> importlib.machinery.ModuleSpec:
    """The spec loading the folder's module ``found`` as ``target``, with the folder's ``__import__``."""
    origin = found.origin
    locations = list(found.submodule_search_locations or [])
    spec: importlib.machinery.ModuleSpec | None
    if origin is None:  # a folder without __init__.py: a namespace package (no loader: Python's rule)
        spec = importlib.machinery.ModuleSpec(target, None, is_package=True)
        spec.submodule_search_locations = locations
        return spec
    if isinstance(found.loader, importlib.machinery.SourceFileLoader):
        spec = importlib.util.spec_from_file_location(
            target,
            origin,
            loader=_FolderLoader(target, origin, folder),
            submodule_search_locations=locations or None,
        )
    else:  # an extension or bytecode-only module: its own loader, under its name here
        spec = importlib.util.spec_from_file_location(
            target, origin, submodule_search_locations=locations or None
        )
    if spec is None:
        raise ImportError(f"cannot load {origin}", name=target)
    return spec


def _builtins(folder: str) -> dict[str, Any]:
    """The ``__builtins__`` of modules loaded from ``folder``: Python's, with an ``__import__`` that sends
    names the folder holds to the folder's modules."""
    found = _BUILTINS.get(folder)
    if found is not None:
        return found

    def folder_import(
        name: str,
        globals: dict[str, Any] | None = None,  # the signature of builtins.__import__
        locals: Any = None,
        fromlist: Sequence[str] | None = (),
        level: int = 0,
    ) -> ModuleType:
        if level == 0 and name:
            top = name.partition(".")[0]
            local = load(name, folder)
            if local is not None:
                full = local + name[len(top) :]
                if fromlist:  # Python's own import, for the names a package hands out (its submodules)
                    return builtins.__import__(full, globals, locals, fromlist, 0)
                importlib.import_module(full)
                return sys.modules[local]
        return builtins.__import__(name, globals, locals, fromlist or (), level)

    made = dict(builtins.__dict__)
    made["__import__"] = folder_import
    _BUILTINS[folder] = made
    return made


class _FolderLoader(importlib.machinery.SourceFileLoader):
    """Python's source loader, giving the module the folder's ``__import__`` before its code runs."""

    def __init__(self, fullname: str, path: str, folder: str) -> None:
        super().__init__(fullname, path)
        self.folder = folder

    def exec_module(self, module: ModuleType) -> None:
        module.__dict__["__builtins__"] = _builtins(self.folder)
        module.__dict__[MARK] = self.folder
        super().exec_module(module)


class _SubmoduleFinder(importlib.abc.MetaPathFinder):
    """The folder's module for a name ``load`` chose (its own, or ``_portagent_spec_<hash>.<name>``), and
    submodules of a package loaded from a spec folder (``handlers.orders``, a relative import), each with
    that folder's ``__import__``; every other name is left to the finders after this one."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        pending = _PENDING.get(fullname)
        if pending is not None:  # a module ``load`` chose a name for: the folder's file, under that name
            return _spec_for(fullname, *pending)
        if path is None or "." not in fullname:
            return None
        folder = folder_of(fullname.rpartition(".")[0])
        if folder is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and isinstance(spec.loader, importlib.machinery.SourceFileLoader) and spec.origin:
            spec.loader = _FolderLoader(fullname, spec.origin, folder)
        return spec


def folder_of(name: str) -> str | None:
    """The spec folder the module ``name`` (or the nearest package above it in ``sys.modules``) was loaded
    from by portagent, or None."""
    while name:
        folder = _own(sys.modules.get(name), MARK)
        if isinstance(folder, str):
            return folder
        name = name.rpartition(".")[0]
    return None


_FINDER = _SubmoduleFinder()


def _install_finder() -> None:
    with contextlib.suppress(ValueError):
        if _FINDER in sys.meta_path:
            return
    sys.meta_path.insert(0, _FINDER)
