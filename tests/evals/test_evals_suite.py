"""The suite contract and ``load_suite``: shapes, defaults, and bad input with file + field path."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from portagent.contracts import suite as suite_module
from portagent.contracts.errors import SpecError
from portagent.contracts.loader import load_spec_file
from portagent.evals import Case, Suite, Thresholds, load_suite

CASE = {"case_id": "c1", "input": "hola", "why_it_exists": "because"}


def write(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(textwrap.dedent(text), encoding="utf-8")
    return p


def suite(**kw: Any) -> Suite:
    data: dict[str, Any] = {
        "suite_id": "s",
        "dataset_version": "1",
        "owner": "me",
        "agent": "a.yaml",
        "cases": [CASE],
        **kw,
    }
    return Suite.model_validate(data)


def test_defaults_are_documented_choices() -> None:
    s = suite()
    assert s.thresholds == Thresholds(final=0.80, trajectory=0.90, args=1.0, approval=1.0, trace=0.95)
    assert (s.repeats, s.providers, s.approver) == (1, ["openai", "claude", "adk"], "scripted")
    c = s.cases[0]
    assert c.expect.trajectory.mode == "in_order" and c.expect.args.mode == "subset"
    assert c.expect.status == "completed" and c.expect.approval is None


def test_every_field_of_every_suite_contract_has_a_docstring() -> None:
    models = [
        v
        for v in vars(suite_module).values()
        if isinstance(v, type) and issubclass(v, BaseModel) and v.__module__ == suite_module.__name__
    ]
    assert len(models) >= 8
    from portagent.contracts._docs import field_docs

    for m in models:
        docs = field_docs(m)
        for name in m.model_fields:
            assert docs.get(name), f"{m.__name__}.{name} has no docstring"
    assert Suite.model_json_schema()["properties"]["thresholds"]["description"]


def test_multi_turn_input() -> None:
    c = Case.model_validate({**CASE, "input": ["hola", "y ahora publica"]})
    assert c.messages == ["hola", "y ahora publica"]
    with pytest.raises(ValidationError):
        Case.model_validate({**CASE, "input": []})


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"baseline": "b.yaml"}, "not both"),
        ({"agent": None, "baseline": "b.yaml"}, "both 'baseline' and 'candidate'"),
        ({"cases": []}, "needs 'cases' or 'case_files'"),
        ({"cases": [CASE, CASE]}, "duplicate case_id"),
        ({"providers": ["openai", "openai"]}, "providers listed twice"),
        ({"providers": ["bedrock"]}, "providers"),
        ({"repeats": 0}, "repeats"),
    ],
)
def test_suite_shape_errors(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        suite(**extra)


@pytest.mark.parametrize(
    ("expect", "message"),
    [
        ({"required_tools": ["a"], "forbidden_tools": ["a"]}, "both required and forbidden"),
        ({"required_tools": ["a"], "trajectory": {"reference": ["b"]}}, "missing from trajectory.reference"),
        (
            {"forbidden_tools": ["x"], "trajectory": {"reference": ["x"]}},
            "forbidden tools in trajectory.reference",
        ),
        ({"output_schema": {"type": "nope"}}, "not a valid JSON Schema"),
        ({"trajectory": {"mode": "unordered"}}, "mode"),
        ({"max_cost_usd": -1}, "max_cost_usd"),
    ],
)
def test_expectation_errors(expect: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Case.model_validate({**CASE, "expect": expect})


def test_scripted_edit_needs_args() -> None:
    with pytest.raises(ValidationError, match="'args' is required"):
        Case.model_validate({**CASE, "approvals": [{"tool": "send_email", "decision": "edit"}]})
    c = Case.model_validate(
        {
            **CASE,
            "approvals": [
                {"tool": "send_email", "args_hash": "1baf542e6927", "decision": "edit", "args": {"to": "x"}}
            ],
        }
    )
    assert c.approvals[0].decision == "edit"


def test_threshold_outside_unit_interval_names_the_field_path(tmp_path: Path) -> None:
    p = write(
        tmp_path,
        "suite.yaml",
        """\
        kind: suite
        schema_version: 1
        suite_id: s
        dataset_version: "1"
        owner: me
        agent: agent.yaml
        thresholds:
          final: 1.5
        cases:
          - case_id: c1
            input: hola
            why_it_exists: because
            thresholds:
              trajectory: -0.1
        """,
    )
    with pytest.raises(SpecError) as e:
        load_spec_file(p)
    paths = {pr.path for pr in e.value.problems}
    assert paths == {"thresholds.final", "cases.0.thresholds.trajectory"}
    assert any(pr.line == 8 for pr in e.value.problems)
    with pytest.raises(SpecError):
        load_suite(p)


def test_load_suite_reads_case_files_and_resolves_paths(tmp_path: Path) -> None:
    write(tmp_path, "agents/v1.yaml", "kind: agent\nschema_version: 1\nname: a\ninstructions: x\n")
    write(
        tmp_path,
        "agents/v2.yaml",
        "kind: agent\nschema_version: 1\nname: a\nversion: 2.0.0\ninstructions: x\n",
    )
    write(tmp_path, "scripts/main.yaml", "kind: emulator-script\n")
    write(tmp_path, "cases/special.yaml", "x: 1\n")
    write(
        tmp_path,
        "cases/one.yaml",
        """\
        case_id: c2
        input: [uno, dos]
        why_it_exists: multi-turn
        emulator_script: special.yaml
        """,
    )
    write(tmp_path, "cases/many.json", '[{"case_id": "c3", "input": "x", "why_it_exists": "y"}]')
    p = write(
        tmp_path,
        "suite.yaml",
        """\
        kind: suite
        schema_version: 1
        suite_id: s
        dataset_version: "2026-06-10.1"
        owner: me
        baseline: agents/v1.yaml
        candidate: agents/v2.yaml
        emulator_script: scripts/main.yaml
        cases:
          - {case_id: c1, input: hola, why_it_exists: because}
        case_files: [cases/one.yaml, cases/many.json]
        """,
    )
    loaded = load_suite(p)
    assert [c.case_id for c in loaded.cases] == ["c1", "c2", "c3"]
    assert loaded.agents == {
        "baseline": (tmp_path / "agents/v1.yaml").resolve(),
        "candidate": (tmp_path / "agents/v2.yaml").resolve(),
    }
    assert loaded.emulator_scripts["c1"] == (tmp_path / "scripts/main.yaml").resolve()
    assert loaded.emulator_scripts["c2"] == (tmp_path / "cases/special.yaml").resolve()
    assert loaded.case("c2").messages == ["uno", "dos"]


def test_load_suite_reports_every_missing_file_and_bad_case(tmp_path: Path) -> None:
    write(
        tmp_path,
        "cases/bad.yaml",
        """\
        - case_id: c1
          input: x
          why_it_exists: dup
        - case_id: c9
          input: x
        """,
    )
    p = write(
        tmp_path,
        "suite.yaml",
        """\
        kind: suite
        schema_version: 1
        suite_id: s
        dataset_version: "1"
        owner: me
        agent: missing_agent.yaml
        cases:
          - {case_id: c1, input: hola, why_it_exists: because}
        case_files: [cases/nope.yaml, cases/bad.yaml]
        """,
    )
    with pytest.raises(SpecError) as e:
        load_suite(p)
    found = {(Path(pr.file).name, pr.path): pr.message for pr in e.value.problems}
    assert "agent spec not found: missing_agent.yaml" in found[("suite.yaml", "agent")]
    assert "case file not found: cases/nope.yaml" in found[("suite.yaml", "case_files.0")]
    assert "duplicate case_id 'c1'" in found[("bad.yaml", "0.case_id")]
    assert found[("bad.yaml", "1.why_it_exists")] == "required field is missing"


def test_the_documented_example_is_a_valid_suite() -> None:
    import yaml

    doc = (Path(__file__).resolve().parents[2] / "docs" / "evals.md").read_text(encoding="utf-8")
    block = doc.split("```yaml\n", 1)[1].split("```", 1)[0]
    s = Suite.model_validate(yaml.safe_load(block))
    c = s.cases[0]
    assert c.expect.final_must_contain == ["autor", "año", "url"]
    assert c.approvals[0].decision == "edit" and s.repeats == 3


_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
_case_keys = st.sampled_from(
    [
        "case_id",
        "input",
        "why_it_exists",
        "tags",
        "expect",
        "thresholds",
        "approvals",
        "context",
        "emulator_script",
    ]
)
_expect = st.dictionaries(
    st.sampled_from(
        [
            "final_must_contain",
            "output_schema",
            "required_tools",
            "forbidden_tools",
            "route",
            "trajectory",
            "args",
            "approval",
            "status",
            "max_cost_usd",
        ]
    ),
    _values,
    max_size=4,
)


@given(
    st.dictionaries(
        st.sampled_from(
            [
                "suite_id",
                "owner",
                "agent",
                "baseline",
                "providers",
                "repeats",
                "thresholds",
                "approver",
                "case_files",
            ]
        ),
        _values,
        max_size=5,
    ),
    st.lists(
        st.dictionaries(_case_keys, _values, max_size=5)
        | st.builds(lambda e: {**CASE, "expect": e}, _expect),
        max_size=3,
    ),
)
def test_any_suite_document_gives_a_suite_or_a_spec_error(top: dict[str, Any], cases: list[Any]) -> None:
    from portagent.contracts.loader import validate_document

    doc = {"kind": "suite", "schema_version": 1, "dataset_version": "1", **top, "cases": cases}
    try:
        assert isinstance(validate_document(doc, "fuzz.yaml"), Suite)
    except SpecError as e:
        assert e.problems
