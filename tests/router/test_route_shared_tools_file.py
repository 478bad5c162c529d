"""``portagent route --execute`` with the router's tools file in a shared folder (``tool_files:
[../shared/desk_tools.yaml]``): the handlers are looked for beside the tools file first, as in an agent's
run (ADR 0004). Before, only the router spec's folder was searched and the route's call failed with a
``handler_error``. What really ran is read from the handlers' own log (``$ROUTE_TEST_LOG``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from _support import run_cli

EXEC = Path(__file__).parent / "data" / "exec"


def test_the_chosen_route_runs_the_shared_folders_handler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "handlers.jsonl"
    monkeypatch.setenv("ROUTE_TEST_LOG", str(log))
    monkeypatch.setenv("PORTAGENT_HOME", str(tmp_path / "home"))
    router, shared = tmp_path / "router", tmp_path / "shared"
    shutil.copytree(EXEC, router, ignore=shutil.ignore_patterns("__pycache__"))
    shared.mkdir()
    for name in ("desk_tools.yaml", "route_desk_handlers.py"):
        (router / name).rename(shared / name)
    spec = router / "desk.router.yaml"
    spec.write_text(
        spec.read_text().replace("tool_files: [desk_tools.yaml]", "tool_files: [../shared/desk_tools.yaml]")
    )
    code, printed, err = run_cli(
        "route", str(spec), str(router / "desk.requests.yaml"), "--execute", "--out", str(tmp_path / "routes")
    )
    assert code == 0, printed + err
    assert "executed: local.faq → faq_lookup ok" in printed, printed + err  # before: handler_error
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert {"tool": "faq_lookup", "question": "refund deadline"} in calls
