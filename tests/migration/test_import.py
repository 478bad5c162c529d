"""``portagent import``: native openai-agents / google-adk / Claude definitions into portable specs.

What is checked against the SDKs themselves: schemas are the SDK's own (``FunctionTool.params_json_schema``,
ADK's declaration, the input schema the SDK MCP server lists), handlers resolve to the very functions
the native definition wrapped, and everything without a portable equivalent is in ``import-report.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path

import pytest
import yaml
from _migration_helpers import import_cli
from _support import run_cli

from portagent.contracts.bundle import load_agent
from portagent.runtime.validate import check_paths
from portagent.tools.handlers import resolve


def load_yaml(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def report_rows(out: Path, section: str) -> str:
    text = (out / "import-report.md").read_text(encoding="utf-8")
    start = text.index(f"## {section}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


@contextlib.contextmanager
def on_path(folder: Path):
    """The imported folder on sys.path, as ``portagent run`` puts it (handlers resolve next to the spec)."""
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        sys.path.remove(str(folder))


def no_leftovers(parent: Path) -> bool:
    return not [p for p in parent.iterdir() if ".tmp-" in p.name or ".old-" in p.name]


# --- openai-agents -------------------------------------------------------------------------------


def test_openai_agent_becomes_specs_with_the_sdks_own_schemas_and_original_handlers(tmp_path):
    import native_openai as native
    from agents.agent_output import AgentOutputSchema

    out = tmp_path / "desk"
    code, stdout, stderr = import_cli("native_openai:desk", "openai", out)
    assert code == 0, stderr
    assert "2 agent(s), 3 tool(s), 1 delegation edge(s), 1 policy rule(s)" in stdout
    names = sorted(p.name for p in out.iterdir())
    shim = next(n for n in names if n.startswith("portagent_shims_shop_desk_"))
    assert names == sorted(
        ["agent.yaml", "import-report.md", "policy.yaml", "refunds_specialist.yaml", "tools.yaml", shim]
    )  # the handler module beside the spec re-exports the originals (found relative to this folder)
    assert no_leftovers(tmp_path)
    assert all(r.ok for r in check_paths([str(out / "agent.yaml")]))  # what `portagent validate` says

    bundle = load_agent(out / "agent.yaml")
    assert bundle.root == "shop_desk" and set(bundle.agents) == {"shop_desk", "refunds_specialist"}
    desk = bundle.agents["shop_desk"]
    assert desk.spec.instructions == native.desk.instructions
    assert desk.spec.models.openai == "gpt-4.1-mini"
    assert [(e.kind, e.target, e.description) for e in desk.edges] == [
        ("handoff", "refunds_specialist", "Refund disputes and lost parcels.")
    ]
    assert desk.spec.output_schema == AgentOutputSchema(native.OrderSummary).json_schema()
    tools = bundle.all_tools()
    assert set(tools) == {"get_order", "search_faq", "issue_refund"}
    for name, native_tool in (
        ("get_order", native.get_order),
        ("issue_refund", native.issue_refund),
        ("search_faq", native.search_faq),
    ):
        tool = tools[name]
        assert tool.input_schema == native_tool.params_json_schema
        assert tool.description == native_tool.description
        with on_path(out):
            assert (
                resolve(tool.handler).fn is native_tool.__wrapped__
            )  # the original function, not the FunctionTool
        # conservative defaults: effect external_effect, approval by default, idempotent over the arguments
        assert tool.effect == "external_effect" and tool.idempotency.required
    assert tools["issue_refund"].idempotency.key_template == "issue_refund:{order_id}:{amount_eur}"
    assert tools["issue_refund"].requires_approval is True  # needs_approval=True
    assert [r.model_dump(exclude_defaults=True) for r in desk.policy.rules] == [
        {
            "id": "imported-approval-issue_refund",
            "decision": "approval_required",
            "reason": "needs_approval=True in the openai-agents definition",
            "tool": "issue_refund",
        }
    ]
    assert "# REVIEW get_order: effect external_effect" in (out / "tools.yaml").read_text(encoding="utf-8")

    not_portable = report_rows(out, "Not imported")
    for item in (
        "hosted tool WebSearchTool",
        "input guardrail no_insults",
        "model_settings.parallel_tool_calls",
    ):
        assert item in not_portable
    review = report_rows(out, "Review before use")
    assert all(f"tool {n} " in review for n in tools)
    for item in (
        "hosted tool WebSearchTool",
        "input guardrail no_insults",
        "model_settings.parallel_tool_calls",
    ):
        assert f"not imported: {item}" in stdout


def test_untyped_and_handmade_tools_are_listed_and_the_rest_imported(tmp_path):
    """Bad input: a function with no type hints (no schema can be produced) and a FunctionTool built by
    hand (no function to point at) are in the report; the typed tool and the context-taking one are in."""
    out = tmp_path / "partial"
    code, stdout, stderr = import_cli("native_untyped:partial", "openai", out)
    assert code == 0, stderr
    bundle = load_agent(out / "agent.yaml")
    assert set(bundle.all_tools()) == {"lookup", "ping"}
    rows = report_rows(out, "Not imported")
    assert "function tool 'guess'" in rows and "parameter 'x' has no type" in rows
    assert "function tool 'handmade'" in rows and "built by hand" in rows
    assert "not imported: function tool 'guess' on agent partial" in stdout
    # lookup takes openai-agents' run context: its handler is a generated shim that calls the original
    lookup = bundle.all_tools()["lookup"]
    assert lookup.handler.startswith("portagent_shims_partial_") and lookup.handler.endswith(":lookup")
    assert "lookup" in report_rows(out, "Review before use") and "shim" in report_rows(
        out, "Review before use"
    )
    from portagent.tools.tool_context import ToolContext

    with on_path(out):
        shim = resolve(lookup.handler)
        assert shim.tool_context_param == "portagent_tool_context"  # the gateway gives it a ToolContext
        tc = ToolContext(run_id="r", agent="partial", call_id="call_1", provider="adk", tool="lookup")
        got = asyncio.run(shim.fn(order_id="ORD-7", portagent_tool_context=tc))
        assert got == {"order_id": "ORD-7", "context_given": True}


# --- google-adk ----------------------------------------------------------------------------------


def test_adk_agent_with_sub_agents_agent_tool_and_callbacks(tmp_path):
    import native_adk as native
    from google.adk.tools import FunctionTool

    from portagent.tools.tool_context import ToolContext

    out = tmp_path / "adk_desk"
    code, _stdout, stderr = import_cli("native_adk:desk", "adk", out)
    assert code == 0, stderr
    bundle = load_agent(out / "agent.yaml")
    desk = bundle.agents["shop_desk"]
    assert desk.spec.models.adk == "gemini-2.5-flash" and desk.spec.instructions == native.desk.instruction
    assert [(e.kind, e.target) for e in desk.edges] == [
        ("agent_as_tool", "faq_expert"),
        ("handoff", "refunds_specialist"),
    ]
    assert list(bundle.agents["refunds_specialist"].tools) == ["get_order", "issue_refund"]
    tools = bundle.all_tools()
    for name in ("get_order", "search_faq", "issue_refund"):
        fn = getattr(native, name)
        assert tools[name].input_schema == FunctionTool(fn)._get_declaration().parameters_json_schema
        with on_path(out):
            assert resolve(tools[name].handler).fn is fn
    assert [r.tool for r in desk.policy.rules] == ["issue_refund"]  # require_confirmation=True
    rows = report_rows(out, "Not imported")
    assert "before_tool_callback log_tool on agent shop_desk" in rows and "noted, not imported" in rows
    assert "built-in tool GoogleSearchTool" in rows and "generate_content_config.top_k" in rows
    assert 'ADK\'s AgentTool declared "request"' in report_rows(out, "Imported with changes")
    # an untyped function is listed, not imported; a hand-written BaseTool gets a shim calling run_async
    assert "function tool 'shout' on agent shop_desk" in rows and "parameter 'text' has no type" in rows
    stock = tools["check_stock"]
    assert stock.input_schema == native.stock._get_declaration().parameters_json_schema
    tc = ToolContext(run_id="r", agent="shop_desk", call_id="call_1", provider="openai", tool="check_stock")
    with on_path(out):
        got = asyncio.run(resolve(stock.handler).fn(sku="MUG-1", portagent_tool_context=tc))
        assert got == {"sku": "MUG-1", "in_stock": 3}


# --- Claude Agent SDK ----------------------------------------------------------------------------


def test_claude_options_with_sdk_mcp_tools_a_granted_builtin_and_a_subagent(tmp_path):
    import native_claude as native

    out = tmp_path / "claude_desk"
    code, _, stderr = import_cli("native_claude:options", "claude", out, "--name", "shop_desk")
    assert code == 0, stderr
    bundle = load_agent(out / "agent.yaml")
    desk = bundle.agents["shop_desk"]
    assert (
        desk.spec.instructions == native.options.system_prompt
        and desk.spec.models.claude == "claude-sonnet-4-6"
    )
    assert desk.spec.builtin_tools == ["Read"] and desk.spec.budget.max_turns == 8
    assert [(e.kind, e.target) for e in desk.edges] == [
        ("agent_as_tool", "faq_expert")
    ]  # renamed from faq-expert
    assert list(bundle.agents["faq_expert"].tools) == ["search_faq"]
    tools = bundle.all_tools()
    # the schemas Claude sees: what the SDK MCP server lists ({"query": str} becomes a JSON Schema)
    assert tools["search_faq"].input_schema == {
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    }
    assert tools["get_order"].input_schema == native.get_order.input_schema
    shim_module = tools["get_order"].handler.partition(":")[0]
    assert shim_module.startswith("portagent_shims_shop_desk_") and tools["get_order"].handler.endswith(
        ":get_order"
    )
    shim_source = (out / f"{shim_module}.py").read_text(encoding="utf-8")
    assert "call_mcp_handler(_src_native_claude.get_order.handler, args)" in shim_source
    # allowed_tools: Claude ran search_faq without asking → an allow rule; Read is allowed by its effect
    assert [(r.tool, r.decision) for r in desk.policy.rules] == [("search_faq", "allow")]
    rows = report_rows(out, "Not imported")
    assert "permission_mode 'acceptEdits'" in rows and "hooks PreToolUse" in rows
    import inspect

    audit_line = inspect.getsourcelines(native.audit)[1]
    assert f"native_claude.py:{audit_line}" in rows  # the hook callback's file and line
    assert "renamed 'faq_expert'" in report_rows(out, "Imported with changes")

    sys.path.insert(0, str(out))
    try:  # the shim calls the SDK MCP tool's own handler and turns its MCP content into a value
        got = asyncio.run(resolve(tools["get_order"].handler).fn(order_id="ORD-7"))
        assert got == {"order_id": "ORD-7", "status": "delivered", "amount_eur": 30.0}
        from portagent.tools.observations import ToolFailure

        with pytest.raises(ToolFailure, match="no order ORD-9"):  # is_error → handler_error
            asyncio.run(resolve(tools["get_order"].handler).fn(order_id="ORD-9"))
    finally:
        sys.path.remove(str(out))


def test_claude_agent_definition_alone(tmp_path):
    out = tmp_path / "expert"
    code, _, stderr = import_cli("native_claude:options.agents.faq-expert", "claude", out)
    assert code == 2 and "has no attribute" in stderr  # a dict key is not an attribute: say so, no traceback
    # an AgentDefinition reached through a module attribute imports; its MCP tools have no server here
    import native_claude

    native_claude.expert_definition = native_claude.options.agents["faq-expert"]
    try:
        code, _, stderr = import_cli("native_claude:expert_definition", "claude", out)
    finally:
        del native_claude.expert_definition
    assert code == 0, stderr
    bundle = load_agent(out / "agent.yaml")
    assert bundle.root == "expert_definition" and bundle.spec.tools == []
    assert "tool mcp__shop__search_faq of expert_definition" in report_rows(out, "Not imported")


# --- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "sdk", "message"),
    [
        ("no_such_module_xyz:agent", "openai", "cannot import module 'no_such_module_xyz'"),
        ("native_openai:nobody", "openai", "module 'native_openai' has no attribute 'nobody'"),
        ("native_openai", "openai", "expected MODULE:OBJECT"),
        ("native_untyped:not_an_agent", "openai", "is a builtins.dict, not an openai-agents Agent"),
        ("native_adk:desk", "openai", "use --from adk"),
        ("native_openai:desk", "claude", "use --from openai"),
        ("native_claude:options", "adk", "use --from claude"),
    ],
)
def test_bad_targets_are_usage_errors_with_one_clear_message(tmp_path, target, sdk, message):
    code, _stdout, stderr = run_cli("import", target, "--from", sdk, "--out", str(tmp_path / "out"))
    assert code == 2 and message in stderr and "Traceback" not in stderr
    assert not (tmp_path / "out").exists()


def test_an_existing_output_folder_is_refused_unless_overwrite(tmp_path):
    out = tmp_path / "desk"
    out.mkdir()
    (out / "keep.txt").write_text("mine", encoding="utf-8")
    code, _, stderr = import_cli("native_openai:desk", "openai", out)
    assert code == 2 and "already exists; pass --overwrite" in stderr
    assert [p.name for p in out.iterdir()] == ["keep.txt"]  # untouched

    code, _, stderr = import_cli("native_openai:desk", "openai", out, "--overwrite")
    assert code == 0, stderr
    assert not (out / "keep.txt").exists() and (out / "agent.yaml").is_file()
    assert no_leftovers(tmp_path)


def test_a_failed_import_writes_nothing(tmp_path, monkeypatch):
    """Atomic: files go to a temporary folder first; if anything fails, no output folder appears."""
    from portagent.migration import writer

    def broken(*_args, **_kw):
        raise RuntimeError("disk full")

    monkeypatch.setattr(writer, "swap_into_place", broken)
    with pytest.raises(RuntimeError):
        from portagent.migration.importing import import_native

        writer.write_import(import_native("native_openai:desk", "openai"), tmp_path / "desk")
    assert list(tmp_path.iterdir()) == []


def test_bad_model_flag_and_name(tmp_path):
    code, _, stderr = run_cli(
        "import", "native_openai:desk", "--from", "openai", "--out", str(tmp_path / "o"), "--model", "gemini"
    )
    assert code == 2 and "expected PROVIDER=ID" in stderr
    code, _, stderr = run_cli(
        "import",
        "native_openai:desk",
        "--from",
        "openai",
        "--out",
        str(tmp_path / "o"),
        "--name",
        "refunds_specialist",
    )
    assert code == 2 and "a sub-agent already has that name" in stderr
