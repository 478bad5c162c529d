"""Within ``loading_once`` a YAML file is parsed and checked once, whoever reads it: ``validate`` reads an
agent as a file, as a bundle and again for a suite, under other labels and contract classes (20 parses
of the 8 files of examples/support_desk). Each reader still gets data of its own, an edited file is
parsed again, and a file whose YAML is refused is refused every time."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest
from _support import EXAMPLES

from portagent.contracts import loader
from portagent.contracts.errors import SpecError
from portagent.contracts.loader import loading_once, read_document
from portagent.runtime.validate import check_paths


def _count_parses(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    parses: Counter[str] = Counter()
    real = loader._parse_yaml

    def counting(text: str, label: str = "<string>"):  # type: ignore[no-untyped-def]
        parses[Path(label).name] += 1
        return real(text, label)

    monkeypatch.setattr(loader, "_parse_yaml", counting)
    return parses


def test_validate_parses_each_file_once(monkeypatch: pytest.MonkeyPatch) -> None:
    parses = _count_parses(monkeypatch)
    results = check_paths([str(EXAMPLES / "support_desk")])
    assert all(r.ok for r in results)
    assert parses and set(parses.values()) == {1}, parses


def test_each_reader_gets_its_own_data(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text("kind: policy\nschema_version: 1\nrules:\n  - {tool: '*', action: allow}\n")
    with loading_once():
        first, node = read_document(f)
        first["rules"].append("changed by a reader")
        again, node_again = read_document(f)
    assert again == {"kind": "policy", "schema_version": 1, "rules": [{"tool": "*", "action": "allow"}]}
    assert node_again is node  # parsed once: the same checked tree, line numbers and all
    assert loader.line_of(node_again, ("rules", 0)) == 4


def test_an_edited_file_is_parsed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "d.yaml"
    f.write_text("a: 1\n")
    parses = _count_parses(monkeypatch)
    with loading_once():
        assert read_document(f)[0] == {"a": 1}
        f.write_text("a: 22\n")
        st = f.stat()
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
        assert read_document(f)[0] == {"a": 22}
    assert parses["d.yaml"] == 2


def test_refused_yaml_is_refused_every_time(tmp_path: Path) -> None:
    f = tmp_path / "dup.yaml"
    f.write_text("kind: policy\nkind: tool\n")
    with loading_once():
        for _ in range(2):
            with pytest.raises(SpecError) as e:
                read_document(f)
            assert e.value.problems[0].line == 2
            assert "duplicate key 'kind'" in e.value.problems[0].message
