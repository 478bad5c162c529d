"""Guarding where ``portagent import`` writes: what it may replace, and how it replaces it.

An import writes a whole folder (``--out``) and, with ``--overwrite``, deletes what was there — so the
folder it is given is checked before the program is imported and again before anything is written
(``output_problem``). Refused with or without ``--overwrite``:

- a file, or a path under a file (no folder can be made there);
- the current folder or a folder holding it (``--out .``): an import never replaces where it runs;
- a folder holding the program being imported or any code it loads (``source_files``): its own module
  and its handlers' modules, their top packages, a subpackage or helper module it imports, a folder on
  ``PYTHONPATH``, the virtualenv — deleting them would delete the code the written spec points at.

An existing folder that is none of these is refused unless ``--overwrite``.

Two more guards keep what is written usable and whole:

- ``refuse_shadowed``: a program module named like another module on the Python path (``agents.py``
  beside openai-agents' ``agents``) is refused, since the generated handler module would import the
  other one at run time;
- ``swap_into_place``: the finished folder (staged beside the target) is renamed into place, the old one
  moved aside first and restored if that fails, so a failure never leaves a half-written folder.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path

from portagent.contracts.errors import UsageError
from portagent.migration.draft import ImportDraft


def output_problem(
    out: str | Path, *, overwrite: bool = False, sources: Iterable[str | Path] = ()
) -> str | None:
    """Why ``out`` cannot take an import (one message ending in what to do), or None. ``sources``: files
    or folders of the program being imported, which the output folder must not hold. Checked before the
    program is imported (``portagent import`` refuses early) and again before anything is written; a
    folder that can never be the output is refused as such, with or without ``overwrite``."""
    given = Path(out)
    target = given.resolve()  # "." and "a/.." have a name only once resolved
    if target.exists() and not target.is_dir():
        return f"{given}: is a file, not a folder; choose another --out (nothing was written)"
    ancestor = target if target.exists() else next(p for p in target.parents if p.exists())
    if not ancestor.is_dir():
        return (
            f"{given}: {ancestor} is a file, so no folder can be made inside it; choose another --out "
            "(nothing was written)"
        )
    if not target.exists():
        return None
    cwd = Path.cwd().resolve()
    if target == cwd or target in cwd.parents:
        return (
            f"{given}: is the current folder (or holds it), which an import never replaces (--overwrite "
            "replaces the whole folder); choose a new folder for --out (nothing was written)"
        )
    for source in sources:
        if Path(source).resolve().is_relative_to(target):
            return (
                f"{given}: holds the program being imported or code it loads ({source}), which an import "
                "never replaces (--overwrite replaces the whole folder); choose another --out (nothing was "
                "written)"
            )
    if not overwrite:
        return f"{given}: already exists; pass --overwrite to replace it (nothing was written)"
    return None


def source_files(draft: ImportDraft) -> list[str]:
    """The files of the imported program: the module named on the command line and every module a
    handler imports, each with its top package's ``__init__`` — then one file of each other folder that
    code loaded in this process comes from (a subpackage or helper module of the program's, a folder on
    ``PYTHONPATH``, the virtualenv): ``--overwrite`` must not delete code the program imports either."""
    modules = {draft.report.source.partition(":")[0]}
    modules |= {line.split()[1] for line in draft.shim_imports}
    modules |= {t.handler.partition(":")[0] for a in draft.agents() for t in a.tools if t.handler}
    files = []
    for m in sorted(modules):
        for name in dict.fromkeys((m, m.split(".")[0])):
            file = getattr(sys.modules.get(name), "__file__", None)
            if file:
                files.append(file)
    folders = {os.path.dirname(f) for f in files}
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and os.path.dirname(file) not in folders:
            folders.add(os.path.dirname(file))
            files.append(file)
    return files


def refuse_shadowed(module: str, folder: Path) -> None:
    """One message when ``module``'s name is also another module's on the Python path (a program named
    ``agents.py`` beside openai-agents' ``agents``). The import found the program's own (the current
    folder comes first, as with ``python -m``), but the generated handler module puts ``folder`` after
    the installed packages — so that nothing of the program's folder can hide a package portagent or
    an SDK needs during a run — and there ``import <module>`` would load the other one."""
    import importlib.machinery

    top = module.split(".")[0]
    others = []
    for entry in sys.path:
        try:
            if Path(entry or ".").resolve() == folder:
                continue
        except OSError:
            continue
        others.append(entry)
    origin: str | None = None
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            spec = (
                importlib.machinery.PathFinder.find_spec(top, others)
                if finder is importlib.machinery.PathFinder
                else find(top, None)
            )
        except Exception:  # a finder of some package's that cannot answer: not evidence of a clash
            continue
        if spec is None:
            continue
        if spec.origin in (None, "namespace"):  # a namespace package yields to any regular module
            continue
        if spec.origin in ("built-in", "frozen"):
            origin = f"a {spec.origin} module of Python"
        elif not Path(spec.origin).resolve().is_relative_to(folder):
            origin = spec.origin
        break
    if origin is None:
        return
    file = getattr(sys.modules.get(top), "__file__", None) or str(folder / top)
    raise UsageError(
        f"module {top!r} ({file}) has the name of another module on the Python path ({origin}): a run "
        f"would import that one, since the generated handler module puts {folder} after the installed "
        f"packages. Rename the program's module (e.g. {top}_app) and import it under that name "
        "(nothing was written)"
    )


def swap_into_place(tmp: Path, target: Path) -> None:
    """Rename the finished folder into place; an existing one is moved aside first, then removed."""
    if not target.exists():
        os.replace(tmp, target)
        return
    old = target.with_name(f".{target.name}.old-{os.getpid()}")
    os.replace(target, old)
    try:
        os.replace(tmp, target)
    except BaseException:
        os.replace(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)
