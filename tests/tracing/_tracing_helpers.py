"""Shared bits of the tracing tests (not a test module).

``tests/conftest.py`` holds ``SAMPLES`` and ``require_path``; ``from _support import …`` is ambiguous
once another test folder has its own ``conftest.py`` (pytest keeps only one module named
``conftest``), so the root one is loaded here by path.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

DATA = Path(__file__).resolve().parent / "data"
"""Synthetic cassettes for the body forms the real recordings lack."""
_ROOT_CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"


def _root_conftest() -> ModuleType:
    loaded = sys.modules.get("conftest")
    if loaded is not None and Path(getattr(loaded, "__file__", "")).resolve() == _ROOT_CONFTEST:
        return loaded
    spec = importlib.util.spec_from_file_location("_portagent_tests_root_conftest", _ROOT_CONFTEST)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_conftest = _root_conftest()
SAMPLES: Path = _conftest.SAMPLES
require_path = _conftest.require_path
run_cli = _conftest.run_cli
