"""Two threads importing a spec folder's modules for the first time never deadlock.

Sync handlers run in worker threads and may import at call time; ``mcp serve`` and the pytest plugin run
calls concurrently. Loading a folder's module used to run the module's code while holding one
process-wide lock of portagent's own: a thread inside Python's import of a folder submodule (holding
Python's per-module lock) that reached an ``import`` of a sibling waited for that lock, while the lock's
holder waited for the submodule — a deadlock Python cannot see, so the process hung for good. Loading now
goes through Python's import system, whose per-module locks detect such cycles.
"""

from __future__ import annotations

import importlib
import sys
import threading
import types
from pathlib import Path

from portagent.core import handler_folders

SYNC = "_portagent_test_import_sync"


def test_two_threads_loading_a_folders_modules_at_once_both_finish(tmp_path: Path) -> None:
    folder = tmp_path / "spec"
    (folder / "deskpkg").mkdir(parents=True)
    (folder / "deskpkg" / "__init__.py").write_text("")
    # thread 2 is inside Python's import of deskpkg.sub when it reaches `import deskhelpers`
    (folder / "deskpkg" / "sub.py").write_text(
        f"import {SYNC} as s\ns.in_sub.set()\ns.in_tools.wait(5)\nimport deskhelpers\nVALUE = deskhelpers.X\n"
    )
    (folder / "deskhelpers.py").write_text("X = 'helper'\n")
    # thread 1 is inside loading desktools when it asks for deskpkg.sub
    (folder / "desktools.py").write_text(
        f"import {SYNC} as s\ns.in_tools.set()\ns.in_sub.wait(5)\nfrom deskpkg import sub\nVALUE = sub.VALUE\n"
    )
    sync = types.ModuleType(SYNC)
    sync.in_sub = threading.Event()  # type: ignore[attr-defined]
    sync.in_tools = threading.Event()  # type: ignore[attr-defined]
    sys.modules[SYNC] = sync
    where = str(folder)
    errors: list[BaseException] = []
    try:
        package = handler_folders.load("deskpkg", where)
        assert package is not None

        def load_tools() -> None:
            try:
                handler_folders.load("desktools", where)
            except BaseException as e:  # reported below
                errors.append(e)

        def import_sub() -> None:
            try:
                importlib.import_module(f"{package}.sub")
            except BaseException as e:
                errors.append(e)

        threads = [
            threading.Thread(target=load_tools, daemon=True),
            threading.Thread(target=import_sub, daemon=True),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=20)
        assert not any(t.is_alive() for t in threads), "the two imports deadlocked"
        assert not errors, errors
        tools = sys.modules[handler_folders.load("desktools", where) or ""]
        assert tools.VALUE == "helper"
    finally:
        sys.modules.pop(SYNC, None)
        for name in [
            n for n in sys.modules if n.split(".")[-1] in {"desktools", "deskpkg", "sub", "deskhelpers"}
        ]:
            if handler_folders.folder_of(name) == where:
                sys.modules.pop(name, None)
