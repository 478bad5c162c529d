"""The public surface is small, pinned, and importing it loads no vendor SDK."""

import subprocess
import sys

import portagent


def test_public_all_is_pinned():
    assert portagent.__all__ == [
        "__version__",
        "AgentSpec",
        "Endpoint",
        "PermissionPolicy",
        "PortagentError",
        "RunConfig",
        "RunOptions",
        "RunRequest",
        "RunResult",
        "ToolSpec",
        "arun",
        "equivalent",
        "load_agent",
        "run",
        "stream",
    ]
    for name in portagent.__all__:
        assert getattr(portagent, name) is not None


def test_import_and_cli_parser_load_no_sdk():
    code = (
        "import sys, portagent, portagent.cli as c; c.build_parser(); "
        "print([m for m in ('agents','claude_agent_sdk','google.adk','google.genai','openai','anthropic','vcr',"
        "'pydantic') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
