"""``portagent import`` / ``export`` on inputs that once went wrong: chat-model settings an integration
fills in itself, tool parameters named like the shims' own, tools that pause a LangGraph graph, prompt
blocks and seed conversations a spec has no field for, and output paths that would replace the program,
the current folder or the spec being exported. Each mistake is one message, exit 2, nothing written."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from _migration_helpers import import_cli
from _support import run_cli

from portagent.runtime.validate import check_paths


def report(out: Path) -> str:
    return (out / "import-report.md").read_text(encoding="utf-8")


def not_imported(out: Path) -> str:
    text = report(out)
    start = text.index("## Not imported")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def spec_of(out: Path) -> dict:
    return yaml.safe_load((out / "agent.yaml").read_text(encoding="utf-8"))


def clean_refusal(code: int, stderr: str, *expected: str) -> None:
    assert code == 2 and "Traceback" not in stderr, stderr
    for text in expected:
        assert text in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1, stderr  # one message


# --- chat-model settings: only what the program set --------------------------------------------------


@pytest.mark.parametrize(
    ("graph", "settings"),
    [
        ("ANTHROPIC_DEFAULTS", {}),
        ("ANTHROPIC_SET", {"max_tokens": 1000, "temperature": 0.3}),
        ("OPENAI_DEFAULTS", {}),
        ("GEMINI_DEFAULTS", {}),
        ("GEMINI_SET", {"max_tokens": 500, "temperature": 0.7}),
    ],
)
def test_langgraph_imports_the_chat_model_settings_the_program_set_and_no_others(tmp_path, graph, settings):
    """langchain-anthropic fills max_tokens in from the model's profile (128000 for claude-sonnet-4-6):
    imported as the author's, it was forced on every provider and the anthropic run failed."""
    out = tmp_path / "o"
    code, _, stderr = run_cli(
        "import", f"import_edge_cases:{graph}", "--from", "langgraph", "--out", str(out)
    )
    assert code == 0, stderr
    models = spec_of(out)["models"]
    shared = {k: models[k] for k in ("max_tokens", "temperature") if k in models}
    assert shared == settings
    assert models.get("force_shared_settings", False) is bool(settings)
    assert "128000" not in report(out) and "65536" not in report(out)  # profile values are not settings
    assert all(r.ok for r in check_paths([str(out / "agent.yaml")]))


# --- tool parameters named like the shims' own --------------------------------------------------------


def _handlers(out: Path) -> dict:
    from portagent.contracts.bundle import load_agent
    from portagent.tools.handlers import resolve

    return {
        name: resolve(spec.handler).fn for name, spec in load_agent(out / "agent.yaml").all_tools().items()
    }


def _tc(tool: str):
    from portagent.tools.tool_context import ToolContext

    return ToolContext(
        run_id="r", agent="aimer", call_id="call_1", provider="openai", tool=tool, state={"n": 4}
    )


@pytest.mark.parametrize("sdk", ["anthropic", "openai", "adk", "langgraph"])
def test_tool_parameters_named_target_fn_self_args_kwargs_reach_the_tool(tmp_path, sdk):
    """The generated shims forward the tool's keyword arguments to call_original / call_anthropic_tool,
    whose own first parameter was ``fn`` / ``target``: a tool parameter of that name was 'multiple
    values' (TypeError) on every call."""
    out = tmp_path / sdk
    code, _, stderr = import_cli(f"import_edge_cases:{sdk.upper()}", sdk, out)
    assert code == 0, stderr
    sys.path.insert(0, str(out))
    try:
        fns = _handlers(out)
        call = {"target": "T", "fn": "F", "args": "A", "kwargs": "K"}
        if sdk == "anthropic":
            assert asyncio.run(fns["aim"](**call, self="S")) == "T|F|S|A|K"
        elif sdk == "openai":
            got = asyncio.run(fns["aim_ctx"](**call, portagent_tool_context=_tc("aim_ctx")))
            assert got == "T|F|A|K|True"
            assert asyncio.run(fns["aim_context"](context="C", target="T", fn="F")) == "C|T|F"
        elif sdk == "adk":
            got = asyncio.run(
                fns["aim_adk"](target="T", fn="F", args="A", portagent_tool_context=_tc("aim_adk"))
            )
            assert got == "T|F|A|4"
        else:
            assert asyncio.run(fns["aim_lc"](target="T", fn="F")) == "T|F"
    finally:
        sys.path.remove(str(out))


# --- what a spec has no field for is reported --------------------------------------------------------


def test_a_langgraph_tool_that_calls_interrupt_is_not_imported_and_says_what_to_use(tmp_path):
    """interrupt() raises GraphInterrupt outside a checkpointed graph run: the imported tool failed on
    every call. Found in the tool itself and in a helper it calls."""
    out = tmp_path / "hitl"
    code, stdout, stderr = run_cli(
        "import", "import_edge_cases:INTERRUPTING", "--from", "langgraph", "--out", str(out)
    )
    assert code == 0, stderr
    assert spec_of(out)["tools"] == ["aim_lc"]
    rows = not_imported(out)
    for name, where in (("book_hotel", "(book_hotel, "), ("refund", "(_ask_human, ")):
        line = next(row for row in rows.splitlines() if f"tool '{name}'" in row)
        assert "interrupt()" in line and where in line and "requires_approval: true" in line
        assert f"not imported: tool '{name}'" in stdout


def test_system_prompt_blocks_beside_the_text_are_reported(tmp_path):
    out = tmp_path / "blocks"
    code, _, stderr = run_cli(
        "import", "import_edge_cases:BLOCKS_PROMPT", "--from", "langgraph", "--out", str(out)
    )
    assert code == 0, stderr
    assert spec_of(out)["instructions"] == "Long policy handbook.\n\nAnswer briefly."
    rows = not_imported(out)
    assert "cache_control on text block 1" in rows and "block 2 (image)" in rows


def test_an_anthropic_seed_conversation_and_stream_are_reported(tmp_path):
    out = tmp_path / "seeded"
    code, _, stderr = run_cli("import", "import_edge_cases:SEEDED", "--from", "anthropic", "--out", str(out))
    assert code == 0, stderr
    assert "a seed conversation of 2 message(s)" in not_imported(out)
    assert "stream=True" in report(out) and "--stream" in report(out)


def test_a_bad_output_schema_is_left_out_and_listed_not_a_failed_import(tmp_path):
    out = tmp_path / "bad_output"
    code, _, stderr = run_cli(
        "import", "import_edge_cases:BAD_OUTPUT", "--from", "anthropic", "--out", str(out)
    )
    assert code == 0, stderr
    assert "output_schema" not in spec_of(out)
    assert "output schema of agent bad_output" in not_imported(out) and "'objekt'" in not_imported(out)


# --- targets ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("./src/prog.py:AGENT", "./src/prog.py: no such file"),
        ("pkg/mod:AGENT", "MODULE is a Python module name, not a path; use 'pkg.mod:AGENT'"),
    ],
)
def test_a_file_path_as_the_target_names_the_form_that_works(tmp_path, target, expected):
    # a .py file is read as the program (tests/migration/test_import_third_party_targets.py)
    out = tmp_path / "o"
    code, _, stderr = run_cli("import", target, "--from", "anthropic", "--out", str(out))
    clean_refusal(code, stderr, expected)
    assert not out.exists()


def test_a_factory_function_is_refused_with_what_to_import_instead(tmp_path):
    out = tmp_path / "o"
    code, _, stderr = run_cli(
        "import", "import_edge_cases:make_graph", "--from", "langgraph", "--out", str(out)
    )
    clean_refusal(
        code, stderr, "make_graph is a function", "`agent = make_graph()`", "import_edge_cases:agent"
    )
    assert not out.exists()


# --- output folders --------------------------------------------------------------------------------

PROGRAM = '''from anthropic import beta_tool


@beta_tool
def ping(text: str) -> str:
    """Echo."""
    return text


AGENT = {"model": "claude-sonnet-4-6", "system": "Echo.", "tools": [ping]}
'''


def _program(folder: Path, module: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{module}.py"
    path.write_text(PROGRAM, encoding="utf-8")
    return path


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("overwrite", [False, True])
def test_the_current_folder_is_never_the_output(tmp_path, monkeypatch, overwrite):
    """``--out . --overwrite`` was a traceback (a folder named '.' has no name to move aside)."""
    _program(tmp_path, "edge_prog_cwd")
    monkeypatch.chdir(tmp_path)
    before = _tree(tmp_path)
    extra = ["--overwrite"] if overwrite else []
    code, _, stderr = run_cli("import", "edge_prog_cwd:AGENT", "--from", "anthropic", "--out", ".", *extra)
    clean_refusal(code, stderr, ".: is the current folder", "choose a new folder for --out")
    assert _tree(tmp_path) == before


@pytest.mark.parametrize("out", ["top/proj", "top"])
def test_overwrite_never_replaces_the_folder_that_holds_the_program(tmp_path, monkeypatch, out):
    """--overwrite on the program's own folder (or one holding it) deleted the program and said 'wrote'."""
    program = _program(tmp_path / "top" / "proj", f"edge_prog_ow_{out.replace('/', '_')}")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.syspath_prepend(str(program.parent))
    target = str(tmp_path / out)
    before = _tree(tmp_path)
    code, _, stderr = run_cli(
        "import", f"{program.stem}:AGENT", "--from", "anthropic", "--out", target, "--overwrite"
    )
    clean_refusal(code, stderr, "holds the program being imported", "choose another --out")
    assert program.is_file() and _tree(tmp_path) == before


@pytest.mark.parametrize("out", ["subpackage", "pythonpath"])
def test_overwrite_never_replaces_a_folder_of_code_the_program_loads(tmp_path, monkeypatch, out):
    """--overwrite on a subpackage the program imports (``<pkg>/helpers``), or on a PYTHONPATH folder it
    imports a helper from, deleted that code and said 'wrote': only the program's own module and its
    handlers' were protected. (Names per case: the CLI runs in this process, which keeps its modules.)"""
    pkg, helper = f"edge_pkg_{out}", f"edge_lib_{out}"
    package = tmp_path / "top" / "proj" / pkg
    (package / "helpers").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "helpers" / "__init__.py").write_text("PREFIX = 'echo: '\n", encoding="utf-8")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / f"{helper}.py").write_text("SUFFIX = '.'\n", encoding="utf-8")
    head = f"from anthropic import beta_tool\n\nimport {helper}\nfrom {pkg}.helpers import PREFIX\n"
    (package / "prog.py").write_text(
        PROGRAM.replace("from anthropic import beta_tool\n", head), encoding="utf-8"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    monkeypatch.syspath_prepend(str(tmp_path / "top" / "proj"))
    target = package / "helpers" if out == "subpackage" else tmp_path / "lib"
    before = _tree(tmp_path)
    code, _, stderr = run_cli(
        "import", f"{pkg}.prog:AGENT", "--from", "anthropic", "--out", str(target), "--overwrite"
    )
    clean_refusal(code, stderr, "holds the program being imported or code it loads", "choose another --out")
    assert _tree(tmp_path) == before


def test_an_output_path_under_a_file_is_one_clear_message(tmp_path):
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    for out, expected in (
        (tmp_path / "afile" / "sub", "afile is a file, so no folder can be made inside it"),
        (tmp_path / "afile", "afile: is a file, not a folder"),
    ):
        for extra in ([], ["--overwrite"]):
            code, _, stderr = run_cli(
                "import", "import_edge_cases:SEEDED", "--from", "anthropic", "--out", str(out), *extra
            )
            clean_refusal(code, stderr, expected, "choose another --out")
    assert _tree(tmp_path) == ["afile"]


def test_a_failed_import_leaves_no_parent_folder_behind(tmp_path, monkeypatch):
    """--out new/deeper/x: the parents were made before anything was checked, and stayed on failure."""
    from portagent.migration import writer

    def broken(*_args, **_kw):
        raise OSError("disk full")

    monkeypatch.setattr(writer, "swap_into_place", broken)
    from portagent.migration.importing import import_native

    with pytest.raises(OSError, match="disk full"):
        writer.write_import(
            import_native("import_edge_cases:SEEDED", "anthropic"), tmp_path / "new" / "deeper" / "x"
        )
    assert list(tmp_path.iterdir()) == []


def test_a_program_named_like_an_installed_package_is_refused_at_import(tmp_path):
    """agents.py beside openai-agents' ``agents``: the import found the program (current folder first),
    but a run's handler module (program folder after the installed packages) imported openai-agents.
    A fresh process: in this one ``agents`` is already openai-agents."""
    _program(tmp_path, "agents")
    done = subprocess.run(
        [sys.executable, "-m", "portagent", "import", "agents:AGENT", "--from", "anthropic", "--out", "o"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    clean_refusal(
        done.returncode, done.stderr, "module 'agents'", "has the name of another module", "agents_app"
    )
    assert not (tmp_path / "o").exists()


# --- export --------------------------------------------------------------------------------------


@pytest.fixture
def desk(tmp_path):
    out = tmp_path / "desk"
    code, _, stderr = import_cli("native_openai:desk", "openai", out)
    assert code == 0, stderr
    return out


@pytest.mark.parametrize("name", ["agent.yaml", "tools.yaml", "policy.yaml"])
def test_export_never_replaces_a_file_of_the_agent(desk, name):
    before = {p.name: p.read_bytes() for p in desk.iterdir() if p.is_file()}
    code, _, stderr = run_cli(
        "export", str(desk / "agent.yaml"), "--to", "openai", "--out", str(desk / name), "--overwrite"
    )
    clean_refusal(code, stderr, "is a file of the agent being exported", "choose another --out")
    assert {p.name: p.read_bytes() for p in desk.iterdir() if p.is_file()} == before


def test_export_to_a_folder_says_to_name_a_file_with_or_without_overwrite(desk, tmp_path):
    folder = tmp_path / "exports"
    folder.mkdir()
    for extra in ([], ["--overwrite"]):
        code, _, stderr = run_cli(
            "export", str(desk / "agent.yaml"), "--to", "openai", "--out", str(folder), *extra
        )
        clean_refusal(
            code, stderr, "is a folder; --out names the module file to write", "shop_desk_openai.py"
        )
        assert "--overwrite" not in stderr
    assert list(folder.iterdir()) == []
