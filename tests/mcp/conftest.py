import pytest


@pytest.fixture(autouse=True)
def _mcp_log(tmp_path, monkeypatch):
    """Every test's MCP servers log their calls to a file of its own (``${MCP_TEST_LOG}`` in specs)."""
    log = tmp_path / "mcp-calls.jsonl"
    monkeypatch.setenv("MCP_TEST_LOG", str(log))
    monkeypatch.setenv("MCP_TEST_MODE", "")
    yield log
