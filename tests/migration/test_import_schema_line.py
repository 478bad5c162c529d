"""Files written by ``portagent import`` start with the ``# yaml-language-server: $schema=`` line that
points at the combined schema ``portagent schema`` writes (``./schemas``), relative to the file."""

from __future__ import annotations

import os
from pathlib import Path

from _migration_helpers import import_cli

from portagent.runtime.validate import check_paths


def test_imported_yaml_files_name_the_combined_schema(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "imported" / "desk"
    code, _, err = import_cli("native_openai:desk", "openai", out)
    assert code == 0, err
    yamls = sorted(out.glob("*.yaml"))
    assert {p.name for p in yamls} >= {"agent.yaml", "tools.yaml", "policy.yaml"}
    for p in yamls:
        first = p.read_text(encoding="utf-8").splitlines()[0]
        assert first == "# yaml-language-server: $schema=../../schemas/portagent.schema.json", p.name
        # the path resolves to where `portagent schema` (default --out) writes it
        ref = first.split("=", 1)[1]
        assert (out / ref).resolve() == (tmp_path / "schemas" / "portagent.schema.json").resolve()
    assert not (out / "import-report.md").read_text(encoding="utf-8").startswith("#  yaml")
    assert all(r.ok for r in check_paths([str(out / "agent.yaml")]))
    assert os.getcwd() == str(tmp_path)
