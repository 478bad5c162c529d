"""``AdapterInfo.warm_modules``: what an SDK imports lazily on its first run, imported by an eval worker while
it starts (before its first run's clock) and by the fork server when it preloads the SDK; and
``AdapterInfo.spec_modules``: what the first run imports lazily for the spec at hand (LangGraph: the
chat-model vendor's LangChain integration), imported by a worker while it starts. A name an SDK upgrade
renamed or stopped importing would be silently skipped (the set-up is best effort): each is checked here to
be absent after the adapter's import and present after one real replayed run, in a fresh interpreter, with
the real SDK and the demo's committed cassettes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _support import python_json, require_path

from portagent.adapters.base import REGISTRY

REPO = Path(__file__).resolve().parents[2]
WARMED = sorted(p for p, info in REGISTRY.items() if info.warm_modules or info.spec_modules)

PROBE = """
import importlib, json, sys, tempfile
from pathlib import Path
from portagent.adapters.base import REGISTRY
from portagent.contracts.bundle import load_agent
from portagent.contracts.loaded_suite import load_suite
from portagent.runtime.eval_execute import execute
from portagent.runtime.eval_run import plan_eval

provider, repo = sys.argv[1], Path(sys.argv[2])
info = REGISTRY[provider]
importlib.import_module(info.module)
plan = plan_eval(
    load_suite(repo / "examples" / "support_desk" / "suite.yaml"), mode="replay", providers=[provider],
    cassettes=repo / "cassettes", results=Path(tempfile.mkdtemp()),
)
expected = list(info.warm_modules)
if info.spec_modules:
    where, func = info.spec_modules.split(":")
    expected += getattr(importlib.import_module(where), func)(load_agent(plan.tasks[0].agent.path))
before = [m for m in expected if m in sys.modules]
outcome = execute(plan.tasks[0])
after = [m for m in expected if m in sys.modules]
print(json.dumps({"expected": expected, "before": before, "after": after, "error": outcome.error}))
"""

SET_UP = """
import importlib, json, sys
from pathlib import Path
from portagent.adapters.base import REGISTRY
from portagent.runtime.eval_workers import _set_up

provider, agent, wanted = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
_set_up(provider, agent)
print(json.dumps({m: m in sys.modules for m in (REGISTRY[provider].module, *REGISTRY[provider].warm_modules, *wanted)}))
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
    assert seen["expected"]  # something to warm for this provider and the demo's agent
    assert seen["before"] == []  # the adapter's import leaves them for the first run…
    assert seen["after"] == seen["expected"]  # …which imports every one of them


DESK = REPO / "examples" / "support_desk"


@pytest.mark.slow  # a fresh interpreter importing an SDK
@pytest.mark.parametrize("provider", WARMED)
def test_a_workers_set_up_imports_them_before_its_first_run(provider: str) -> None:
    pytest.importorskip(REGISTRY[provider].sdk_module)
    seen = _python(SET_UP, provider, str(DESK / "agent.yaml"))
    assert isinstance(seen, dict) and all(seen.values()), seen


@pytest.mark.slow  # a fresh interpreter importing LangGraph
def test_a_langgraph_worker_warms_the_integration_its_spec_names_and_no_other(tmp_path: Path) -> None:
    """A spec on Anthropic's models imports langchain_anthropic at its run; its worker imported
    langchain_openai (the default model's, ~1.5 s) for nothing, and left the one it needed to the run."""
    pytest.importorskip("langchain_anthropic")
    for f in DESK.iterdir():
        if f.is_file():
            (tmp_path / f.name).write_bytes(f.read_bytes())
    for name in ("agent.yaml", "billing_specialist.yaml"):  # a sub-agent without one runs its OpenAI model
        spec = tmp_path / name
        text = spec.read_text(encoding="utf-8")
        spec.write_text(text.replace("models:\n", "models:\n  langgraph: anthropic:claude-sonnet-4-6\n", 1))
    seen = _python(
        SET_UP, "langgraph", str(tmp_path / "agent.yaml"), "langchain_anthropic", "langchain_openai"
    )
    assert isinstance(seen, dict)
    assert seen["langchain_anthropic"] is True
    assert seen["langchain_openai"] is False


def test_the_lists_are_not_empty_where_a_first_run_was_measured_to_pay_for_them() -> None:
    """adk (~0.9 s: the workflow engine with its auth and FastAPI imports) and langgraph (~1.5 s: the chat
    model's LangChain integration and, for OpenAI's, the OpenAI client's types), on a 2-core machine."""
    assert WARMED == ["adk", "langgraph"]
