"""Every ``docs/…`` file that portagent's messages, help and generated starter project name exists: the
starter ``portagent init`` writes sent users to ``docs/policy.md`` (the file is ``docs/policies.md``)."""

from __future__ import annotations

import re
from pathlib import Path

from _support import REPO, run_cli

NAMED = re.compile(r"docs/[A-Za-z0-9_./-]+\.(?:md|json)(?!:\d)")  # ``docs/x.md:12`` is example data


def _named_in(paths: list[Path]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in paths:
        for name in NAMED.findall(path.read_text(encoding="utf-8", errors="replace")):
            found.setdefault(name.rstrip("."), set()).add(str(path.relative_to(path.anchor)))
    return found


def test_the_docs_portagent_names_exist() -> None:
    sources = [p for p in (REPO / "portagent").rglob("*") if p.suffix in (".py", ".yaml") and p.is_file()]
    missing = {n: w for n, w in _named_in([*sources, REPO / "README.md"]).items() if not (REPO / n).exists()}
    assert missing == {}, missing


def test_the_starter_project_names_docs_that_exist(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("init", "starter")
    assert code == 0, err
    named = _named_in(
        [p for p in (tmp_path / "starter").rglob("*") if p.is_file() and p.suffix in (".md", ".yaml")]
    )
    assert named, "the starter names no docs any more: drop this test or point it elsewhere"
    missing = {n: w for n, w in named.items() if not (REPO / n).exists()}
    assert missing == {}, missing
