"""``portagent validate`` imports only what validates (issue #20: 0.8 s, most of it imports it never used).

Structural, not timed: ``validate`` runs in a fresh interpreter and the test lists what it left in
``sys.modules``. The portability verdict needs each vendor's SDK-free ``rules.py``, never an adapter's
run-time machinery (``_shared``, the port, event mapping), the tool gateway, tracing, recording, evals,
the emulator, asyncio or an SDK; jsonschema is imported only when a file holds a schema to check.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _support import EXAMPLES, cli_modules, loaded_of

NEVER = (
    "portagent.adapters._shared",
    "portagent.adapters.base",
    "portagent.adapters.port",
    "portagent.adapters.session_gateway",
    "portagent.adapters.adk.events",
    "portagent.tools",
    "portagent.tracing",
    "portagent.recording",
    "portagent.evals",
    "portagent.emulator",
    "portagent.runtime.runner",
    "portagent.core.secrets",
    "asyncio",
    "ssl",
    "httpx",
    "vcr",
    "agents",
    "claude_agent_sdk",
    "google.adk",
    "google.genai",
    "openai",
    "anthropic",
    "langgraph",
    "langchain_core",
)
"""Modules (and their submodules) ``validate`` has no use for."""


def _validate(*argv: str) -> tuple[int, list[str]]:
    code, modules, _ = cli_modules("validate", "--quiet", *argv)
    return code, modules


_loaded = loaded_of


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param([str(EXAMPLES / "support_desk")], id="folder-every-provider-verdict"),
        pytest.param([str(EXAMPLES / "support_desk" / "agent.yaml"), "--provider", "adk"], id="agent-adk"),
        pytest.param(
            [str(EXAMPLES / "support_desk" / "agent.yaml"), "--provider", "langgraph"], id="agent-langgraph"
        ),
    ],
)
def test_validate_loads_no_run_machinery(argv: list[str]) -> None:
    code, modules = _validate(*argv)
    assert code == 0
    assert "portagent.adapters.portability" in modules  # the verdict itself was checked
    assert _loaded(modules, NEVER) == []


def test_jsonschema_only_when_a_schema_needs_it(tmp_path: Path) -> None:
    code, modules = _validate(str(EXAMPLES / "support_desk" / "policy.yaml"))
    assert code == 0
    assert _loaded(modules, ("jsonschema", *NEVER)) == []
    # tool schemas of the common keywords, their valid and invalid examples: answered without jsonschema
    # (contracts.schema_plain); a schema the shortcut cannot vouch for ($ref) goes to jsonschema
    code, modules = _validate(str(EXAMPLES / "support_desk" / "tools.yaml"))
    assert code == 0
    assert "jsonschema" not in modules
    tools = tmp_path / "tools.yaml"
    tools.write_text(
        "kind: tools\nschema_version: 1\ntools:\n"
        "  - name: lookup\n    description: Look a thing up.\n    effect: read\n    handler: tools:lookup\n"
        "    input_schema: {type: object, properties: {q: {$ref: '#/$defs/q'}}, $defs: {q: {type: string}}}\n"
    )
    code, modules = _validate(str(tools))
    assert code == 0
    assert "jsonschema" in modules
