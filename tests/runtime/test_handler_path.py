"""Handlers resolve beside the agent spec: a spec named by a relative path is looked for from the
working folder of this run, not of an earlier one (the folder of an absolute path may be kept); and the
folder is never put on ``sys.path`` (tests/tools/test_handler_per_folder.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from portagent.contracts.bundle import AgentBundle, AgentNode
from portagent.runtime import runner


def _bundle(path: Path) -> AgentBundle:
    node = AgentNode.__new__(AgentNode)  # only its path is read here
    node.path = path
    node.tools = {}
    return AgentBundle(root="a", agents={"a": node})


def test_a_relative_spec_path_follows_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name in ("one", "two"):
        project = tmp_path / name
        project.mkdir()
        monkeypatch.chdir(project)
        path_before = list(sys.path)
        with runner._handler_scope(_bundle(Path("agent.yaml"))) as scope:
            assert scope.folders == (str(project.resolve()),)
        assert sys.path == path_before
