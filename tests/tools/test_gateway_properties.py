"""Properties of the gateway over arbitrary model output (Hypothesis)."""

from __future__ import annotations

import json

import acceptance_tools
from gateway_testkit import GET_STUDENT_RECORD, ctx, run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from portagent.tools import ToolGateway
from portagent.tools.observations import ERROR_CODES

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
args_like = st.one_of(
    st.dictionaries(st.sampled_from(["case_id", "include_payments", "x"]), json_values, max_size=3),
    st.fixed_dictionaries(
        {"case_id": st.from_regex(r"^EXP-[0-9]{2,8}$", fullmatch=True)},
        optional={"include_payments": st.booleans()},
    ),
    json_values,
    st.text(max_size=40),  # raw strings, valid JSON or not
)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(raw=args_like)
def test_any_arguments_give_one_structured_observation(raw):
    acceptance_tools.reset()
    c = ctx(scopes=["academic.record.read"])
    gw = ToolGateway([GET_STUDENT_RECORD], c)
    obs = run(gw.call("get_student_record", raw))
    model = obs.to_model()
    json.dumps(model)  # always JSON-able
    assert obs.ok or obs.error in ERROR_CODES
    assert c.recorder.events[0].type == "tool.call"
    assert len(c.recorder.of_type("tool.result")) == 1
    parsed = json.loads(raw) if isinstance(raw, str) and _is_json(raw) else raw
    valid = (
        isinstance(parsed, dict)
        and set(parsed) <= {"case_id", "include_payments"}
        and isinstance(parsed.get("case_id"), str)
        and len(parsed["case_id"]) <= 20
        and _pattern(parsed["case_id"])
        and isinstance(parsed.get("include_payments", False), bool)
    )
    assert (len(acceptance_tools.calls()) == 1) is valid
    if not valid:
        assert obs.error == "validation_error" and obs.details


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _pattern(value: str) -> bool:
    import re

    return re.search(r"^EXP-[0-9]{2,8}$", value) is not None
