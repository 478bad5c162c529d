"""Hypothesis: whatever a file holds, the loader answers with a contract or SpecError — nothing else."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from portagent.contracts.errors import SpecError
from portagent.contracts.loader import load_spec_file

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
kinds = st.sampled_from(["agent", "tool", "tools", "policy", "suite", "emulator-script", "run", "nope", None])


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(raw=st.binary(max_size=300))
def test_arbitrary_bytes(tmp_path, raw):
    f = tmp_path / "x.yaml"
    f.write_bytes(raw)
    try:
        load_spec_file(f)
    except SpecError:
        pass


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(kind=kinds, body=st.dictionaries(st.text(max_size=15), json_values, max_size=6), as_json=st.booleans())
def test_arbitrary_documents(tmp_path, kind, body, as_json):
    import json

    import yaml

    doc = dict(body)
    if kind is not None:
        doc["kind"] = kind
        doc["schema_version"] = 1
    f = tmp_path / ("x.json" if as_json else "x.yaml")
    f.write_text(json.dumps(doc) if as_json else yaml.safe_dump(doc), encoding="utf-8")
    try:
        load_spec_file(f)
    except SpecError:
        pass
