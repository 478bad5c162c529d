"""A handler from an installed package (or ``PYTHONPATH``) is resolved once per spec folders, like one from
the spec's own folder.

Inside a run's ``handler_scope`` a reference not found in the spec folders falls back to ``sys.path``. That
fallback was resolved again on every run — the import lookup plus ``inspect.signature`` and
``get_type_hints`` (which compiles each string annotation) — about 1 ms a handler a run, in every eval worker
run and every ``run`` of an agent whose tools live in a package (benchmarks/adapter_overhead.py's bench
agent is one). The cache keeps the module it came from and is dropped when ``sys.modules`` holds another.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from portagent.tools.handlers import handler_scope, resolve

MODULE = """
from __future__ import annotations


def lookup(order_id: str, context: dict | None = None) -> dict:
    return {{"order_id": order_id, "version": VERSION}}


VERSION = {version}
"""


@pytest.fixture
def package_handler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    site = tmp_path / "site"
    site.mkdir()
    (site / "pa_cached_tools.py").write_text(MODULE.format(version=1))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "pa_cached_tools", raising=False)
    return "pa_cached_tools:lookup"


def test_a_sys_path_handler_is_resolved_once_per_scope(tmp_path: Path, package_handler: str) -> None:
    spec_folder = tmp_path / "agent"  # the spec's folder holds no such module
    spec_folder.mkdir()
    with handler_scope([spec_folder]):
        first = resolve(package_handler)
    with handler_scope([spec_folder]):  # the next run of the same agent
        again = resolve(package_handler)
    assert again is first
    assert first.takes_context and not first.is_async


def test_the_cache_follows_the_module_sys_modules_holds(tmp_path: Path, package_handler: str) -> None:
    spec_folder = tmp_path / "agent"
    spec_folder.mkdir()
    with handler_scope([spec_folder]):
        first = resolve(package_handler)
    assert first.fn("A1")["version"] == 1
    (tmp_path / "site" / "pa_cached_tools.py").write_text(MODULE.format(version=22))
    del sys.modules["pa_cached_tools"]  # a reload by hand (a notebook, a test) takes the new source
    # (a source of another size: a .pyc of the same second and size would be taken as current)
    importlib.invalidate_caches()
    with handler_scope([spec_folder]):
        second = resolve(package_handler)
    assert second is not first and second.fn("A1")["version"] == 22
