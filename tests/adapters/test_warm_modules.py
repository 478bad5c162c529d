"""``AdapterInfo.warm_modules``: what an SDK imports lazily on its first run, imported by an eval worker while
it starts (before its first run's clock) and by the fork server when it preloads the SDK. A name an SDK
upgrade renamed or stopped importing would be silently skipped (the set-up is best effort): each is checked
here to be absent after the adapter's import and present after one real replayed run, in a fresh
interpreter, with the real SDK and the demo's committed cassettes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _support import python_json, require_path

from portagent.adapters.base import REGISTRY

REPO = Path(__file__).resolve().parents[2]
WARMED = sorted(p for p, info in REGISTRY.items() if info.warm_modules)

PROBE = """
import importlib, json, sys, tempfile
from pathlib import Path
from portagent.adapters.base import REGISTRY
from portagent.contracts.loaded_suite import load_suite
from portagent.runtime.eval_execute import execute
from portagent.runtime.eval_run import plan_eval

provider, repo = sys.argv[1], Path(sys.argv[2])
info = REGISTRY[provider]
importlib.import_module(info.module)
before = [m for m in info.warm_modules if m in sys.modules]
plan = plan_eval(
    load_suite(repo / "examples" / "support_desk" / "suite.yaml"), mode="replay", providers=[provider],
    cassettes=repo / "cassettes", results=Path(tempfile.mkdtemp()),
)
outcome = execute(plan.tasks[0])
after = [m for m in info.warm_modules if m in sys.modules]
print(json.dumps({"before": before, "after": after, "error": outcome.error}))
"""

SET_UP = """
import json, sys
from portagent.adapters.base import REGISTRY
from portagent.runtime.eval_workers import _set_up

_set_up(sys.argv[1])
print(json.dumps([m for m in (REGISTRY[sys.argv[1]].module, *REGISTRY[sys.argv[1]].warm_modules) if m not in sys.modules]))
"""


def _python(code: str, *args: str) -> Any:
    found, _ = python_json(code, *args, cwd=REPO)
    return found


@pytest.mark.slow  # a fresh interpreter per provider: its SDK's import and one replayed run
@pytest.mark.parametrize("provider", WARMED)
def test_each_warm_module_is_one_a_first_run_imports_lazily(provider: str) -> None:
    pytest.importorskip(REGISTRY[provider].sdk_module)
    require_path(REPO / "cassettes" / "support-desk", "the demo's committed cassettes")
    seen = _python(PROBE, provider, str(REPO))
    assert isinstance(seen, dict)
    assert seen["error"] is None
    assert seen["before"] == []  # the adapter's import leaves them for the first run…
    assert seen["after"] == list(REGISTRY[provider].warm_modules)  # …which imports every one of them


@pytest.mark.slow  # a fresh interpreter importing an SDK
@pytest.mark.parametrize("provider", WARMED)
def test_a_workers_set_up_imports_them_before_its_first_run(provider: str) -> None:
    pytest.importorskip(REGISTRY[provider].sdk_module)
    assert _python(SET_UP, provider) == []


def test_the_lists_are_not_empty_where_a_first_run_was_measured_to_pay_for_them() -> None:
    """adk (~0.9 s: the workflow engine with its auth and FastAPI imports) and langgraph (~1.5 s: the
    default model's LangChain integration and the OpenAI client's types), on a 2-core machine."""
    assert WARMED == ["adk", "langgraph"]
