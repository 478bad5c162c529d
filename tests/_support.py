"""Shared test helpers (a plain module: several folders have their own conftest.py, so helpers are
imported from here, never from ``conftest``)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
SAMPLES = REPO.parent / "shared" / "samples"
IN_CI = os.environ.get("CI", "").lower() == "true"


def require_path(path: Path, what: str) -> Path:
    """Skip when a local-only folder is missing — but fail under CI=true (a silent skip hides rot)."""
    if not path.exists():
        if IN_CI:
            pytest.fail(f"{what} missing at {path} (CI=true turns this skip into a failure)")
        pytest.skip(f"{what} missing at {path}")
    return path


def run_cli(*argv: str) -> tuple[int, str, str]:
    """Run the CLI in-process, capturing output; never lets SystemExit escape."""
    from portagent.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as e:
            code = int(e.code or 0)
    return code, out.getvalue(), err.getvalue()


_MODULES_PROBE = """
import json, sys
from portagent.cli import main

try:
    code = main(sys.argv[1:])
except SystemExit as e:
    code = e.code
print(json.dumps({"exit": code, "modules": sorted(sys.modules)}))
"""


def python_json(code: str, *args: str, cwd: Path | None = None) -> tuple[Any, str]:
    """Run ``code`` in a fresh interpreter with ``args``: the JSON of its last line of output, and its
    stderr (a probe that must not inherit what this test process imported)."""
    import json
    import sys

    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=False, timeout=300, cwd=cwd
    )
    lines = done.stdout.strip().splitlines()
    assert lines, f"the probe printed nothing (exit {done.returncode}): {done.stderr[-3000:]}"
    return json.loads(lines[-1]), done.stderr


def run_probe(
    code: str, *args: str | Path, home: Path, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with ``args`` and ``home`` as its ``PORTAGENT_HOME``: a probe that
    changes portagent in its own process (a function that raises an interrupt) and prints what it saw."""
    import sys

    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PORTAGENT_HOME": str(home)},
        check=False,
    )


def cli_modules(*argv: str, cwd: Path | None = None) -> tuple[int, list[str], str]:
    """Run the CLI with ``argv`` in a fresh interpreter: its exit code, every module it left in
    ``sys.modules`` (what a command imported: structural, never timed) and its stderr."""
    found, err = python_json(_MODULES_PROBE, *argv, cwd=cwd)
    return found["exit"], found["modules"], err


def loaded_of(modules: list[str], names: tuple[str, ...]) -> list[str]:
    """The ``modules`` that are one of ``names`` or inside one."""
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in names)]


def run_cli_as_another_shell(
    folder: Path, env: dict[str, str], *argv: str, unset: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """A command as a new shell would run it beside (or after) a process a test interrupts or kills: in
    ``folder``, with ``env``'s values and without the ``unset`` variables — but in this process
    (``run_cli``), so it does not import the SDK again. The working folder and variables are restored."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        for name, value in env.items():
            if os.environ.get(name) != value:
                mp.setenv(name, value)
        for name in unset:
            mp.delenv(name, raising=False)
        code, out, err = run_cli(*argv)
    return subprocess.CompletedProcess(list(argv), code, out, err)


@contextlib.contextmanager
def portagent_home(path: Path):
    """A state folder of its own for one run (seeded approval/effect ids of two runs would collide in one
    store); restores the previous ``PORTAGENT_HOME`` afterwards."""
    old = os.environ.get("PORTAGENT_HOME")
    os.environ["PORTAGENT_HOME"] = str(path)
    try:
        yield path
    finally:
        if old is None:
            os.environ.pop("PORTAGENT_HOME", None)
        else:
            os.environ["PORTAGENT_HOME"] = old


# The ini of a pytester project: no cache folder, and not langsmith's pytest plugin (installed with the
# langgraph extra, it imports langsmith's client — about a second — in every pytest process).
PYTESTER_INI = "[pytest]\naddopts = -p no:cacheprovider -p no:langsmith_plugin\n"


def parse_request(entry: dict[str, Any]) -> Any:
    """One entry of the emulator's request log as the neutral ``RequestView`` the emulator itself reads:
    what an SDK actually sent, whichever wire API it spoke."""
    from portagent.wire import anthropic as wire_anthropic
    from portagent.wire import gemini as wire_gemini
    from portagent.wire import openai as wire_openai

    api, body = entry["api"], entry["body"]
    if api == "openai.responses":
        return wire_openai.parse_responses_request(body)
    if api == "openai.chat":
        return wire_openai.parse_chat_request(body)
    if api == "anthropic.messages":
        return wire_anthropic.parse_messages_request(body)
    if api == "gemini.generate_content":
        return wire_gemini.parse_generate_content_request(body, stream=bool(entry.get("stream")))
    raise AssertionError(f"unexpected API in the request log: {api}")


def first_call_cut() -> type:
    """An emulator ``Engine`` whose ``malformed_arguments`` fault cuts only a turn's first call (the script's
    fault cuts every call of the turn): ``serve(script, engine=first_call_cut())``."""
    import dataclasses
    import json

    from portagent.emulator.engine import Engine
    from portagent.emulator.plan import Plan

    class FirstCallCut(Engine):
        def respond(self, view: Any, headers: Any) -> Any:
            plan = super().respond(view, headers)
            if not isinstance(plan, Plan) or not any(c.malformed for c in plan.calls):
                return plan
            whole = [
                dataclasses.replace(c, malformed=False, arguments_json=json.dumps(c.arguments))
                for c in plan.calls
            ]
            return dataclasses.replace(plan, calls=(plan.calls[0], *whole[1:]))

    return FirstCallCut


def raw_ending() -> type:
    """An emulator ``Engine`` that sends its class attribute ``RAW`` as the vendor's finish reason of each
    first reply (``raw:<value>``, a key the test adds to the renderer's table, or
    ``openai_wire.incomplete_as_raw``); with ``EMPTY``, that reply holds nothing (no text, no call). A module
    takes its own class (``RawEnding = raw_ending()``) and sets both with ``monkeypatch.setattr``."""
    import dataclasses

    from portagent.emulator.engine import Engine
    from portagent.emulator.plan import Plan

    class RawEnding(Engine):
        RAW: str | None = None
        EMPTY = False

        def respond(self, view: Any, headers: Any) -> Any:
            plan = super().respond(view, headers)
            if isinstance(plan, Plan) and plan.cursor == 0 and self.RAW is not None:
                plan = dataclasses.replace(plan, stop_reason=f"raw:{self.RAW}")  # type: ignore[arg-type]
                if self.EMPTY:
                    plan = dataclasses.replace(plan, text=None, calls=())
            return plan

    return RawEnding


def folder_module(name: str, folder: Path) -> Any:
    """The module ``name`` as a run of a spec in ``folder`` uses it: portagent loads a spec folder's
    handler modules per folder, so ``import name`` may give another folder's module of that name (a copy
    of the example that an earlier test in this process ran) — patching that one changes nothing."""
    import sys

    from portagent.core.handler_folders import load

    loaded = load(name, str(folder))
    assert loaded is not None, f"{folder} holds no module {name!r}"
    return sys.modules[loaded]
