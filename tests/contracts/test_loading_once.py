"""``loading_once``: a spec file met again in one ``validate`` is not parsed again, unless it changed;
a file that failed is read (and reported) every time."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from portagent.contracts import loader
from portagent.contracts.errors import SpecError
from portagent.contracts.loader import load_spec_file, loading_once
from portagent.contracts.tool import ToolSpec

TOOL = """kind: tool
schema_version: 1
name: {name}
version: 1.0.0
description: Look something up.
effect: read
input_schema: {{type: object, properties: {{}}}}
handler: tools:lookup
"""


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    reads: list[Path] = []
    real = loader.read_document

    def counting(path: Path):  # type: ignore[no-untyped-def]
        reads.append(path)
        return real(path)

    monkeypatch.setattr(loader, "read_document", counting)
    return reads


def test_a_file_is_parsed_once_within_the_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "t.yaml"
    f.write_text(TOOL.format(name="lookup"))
    reads = _count_reads(monkeypatch)
    with loading_once():
        first = load_spec_file(f)
        assert load_spec_file(f) is first
    assert len(reads) == 1
    load_spec_file(f)  # outside the block: read again
    assert len(reads) == 2


def test_an_edited_file_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "t.yaml"
    f.write_text(TOOL.format(name="lookup"))
    with loading_once():
        assert load_spec_file(f, ToolSpec).name == "lookup"
        f.write_text(TOOL.format(name="lookup_more"))  # a different size
        st = f.stat()
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
        assert load_spec_file(f, ToolSpec).name == "lookup_more"


def test_a_failing_file_is_reported_every_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "t.yaml"
    f.write_text(TOOL.format(name="Bad Name!"))
    reads = _count_reads(monkeypatch)
    with loading_once():
        for _ in range(2):
            with pytest.raises(SpecError):
                load_spec_file(f)
    assert len(reads) == 2


def test_bundle_hashes_follow_a_replaced_spec_or_policy() -> None:
    """``spec_hash``/``policy_hash`` are kept between calls, but only while every agent's spec and
    policy are the very objects they were."""
    from pathlib import Path as _P

    from portagent.contracts.bundle import load_agent

    bundle = load_agent(_P(__file__).resolve().parents[2] / "examples" / "support_desk" / "agent.yaml")
    spec_hash, policy_hash = bundle.spec_hash, bundle.policy_hash
    assert bundle.spec_hash == spec_hash
    node = bundle.node
    node.spec = node.spec.model_copy(update={"description": node.spec.description + " (changed)"})
    assert bundle.spec_hash != spec_hash and bundle.policy_hash == policy_hash
    node.policy = node.policy.model_copy(update={"name": node.policy.name + "-changed"})
    assert bundle.policy_hash != policy_hash
