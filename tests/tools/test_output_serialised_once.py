"""A handler's output is serialised once per call (issue 18, adapter overhead), with the same results.

The text its size is read from is also the JSON the model is sent (``Observation.model_text``): these tests
pin that it is byte for byte what ``json.dumps(obs.to_model(), sort_keys=True, ensure_ascii=False)`` gives,
that the size limits decide as before, and that nothing stale is sent when an observation is changed or
cut. The encoder's shortcut for plain values keeps its limits exact (depth, node count, integer length).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from gateway_testkit import tool

from portagent.adapters._shared import observation_json
from portagent.contracts.tool import ToolBudgets
from portagent.tools import observations
from portagent.tools.execution import success_observation
from portagent.tools.observations import (
    MAX_DEPTH,
    MAX_NODES,
    NotSerializable,
    Observation,
    success_text,
    to_jsonable,
)
from portagent.tools.validation import _size, limit_output

OUTPUTS: list[Any] = [
    {"passages": [{"id": "p1", "text": "Documentos: DNI, título"}], "count": 2},
    {"ok": True, "record": {"status": "incompleto"}},
    {"ok": True},
    {},
    {"zeta": 1, "alpha": {"nested": ["é", None, 2.5, True]}, "ok_not": "x"},
    {"okay": 1, "oj": 2},  # keys sorting around "ok"
    [1, {"b": 2, "a": 1}],
    [],
    'plain text with ünïcode and "quotes"\n',
    "",
    12345678901234567890,
    3.25,
    None,
    False,
]


def _model_json(obs: Observation) -> str:
    return json.dumps(obs.to_model(), ensure_ascii=False, sort_keys=True)


@pytest.mark.parametrize("output", OUTPUTS)
def test_the_text_sent_is_what_to_model_serialises_to(output: Any) -> None:
    obs = success_observation(tool("t"), to_jsonable(output))
    assert obs.model_text is not None
    assert obs.model_text == _model_json(obs) == observation_json(obs)


@pytest.mark.parametrize("output", OUTPUTS)
def test_the_size_read_from_that_text_is_the_outputs_own(output: Any) -> None:
    known = success_text(to_jsonable(output))
    assert known is not None and known[1] == _size(to_jsonable(output))


def test_an_ok_that_is_not_true_is_serialised_the_usual_way() -> None:
    out = {"ok": "yes", "a": 1}
    assert success_text(out) is None
    obs = success_observation(tool("t"), out)
    assert obs.model_text is None and observation_json(obs) == _model_json(obs)


@pytest.mark.parametrize(
    ("budgets", "output"),
    [
        ({"max_rows": 2}, {"rows": [1, 2, 3, 4]}),
        ({"max_rows": 2}, [{"a": 1}, {"a": 2}, {"a": 3}]),
        ({"max_output_bytes": 40}, {"text": "x" * 200}),
        ({"max_output_bytes": 40}, {"ok": True, "text": "é" * 200}),
        ({"max_output_bytes": 16}, {"t": "abc"}),  # 12 bytes: fits, exactly as before
        ({"max_output_bytes": 11}, {"t": "abcd"}),  # 13 bytes: cut
    ],
)
def test_limits_decide_as_before_and_a_cut_output_is_serialised_anew(
    budgets: dict[str, Any], output: Any
) -> None:
    spec = tool("t", budgets=ToolBudgets(**budgets))
    obs = success_observation(spec, output)
    value, facts = limit_output(output, spec.budgets)  # without the size given: as before
    assert obs.output == value and bool(obs.partial) == (facts is not None)
    if facts is not None:
        assert obs.model_text is None and obs.extra == {"truncated": facts}
    assert observation_json(obs) == _model_json(obs)


def test_an_observation_changed_afterwards_drops_the_text() -> None:
    obs = success_observation(tool("t"), {"a": 1})
    assert obs.model_text is not None
    changed = dataclasses.replace(obs, effect_id="eff_1")
    assert changed.model_text is None and '"effect_id": "eff_1"' in observation_json(changed)
    dup = success_observation(tool("t"), {"a": 1}, effect_id="eff_2", duplicate=True)
    assert dup.model_text is None and observation_json(dup) == _model_json(dup)
    assert obs == Observation.success({"a": 1})  # the text takes no part in equality


def test_the_encoders_limits_stay_exact_at_their_edges(monkeypatch: pytest.MonkeyPatch) -> None:
    at_limit: Any = "leaf"
    for _ in range(MAX_DEPTH):
        at_limit = [at_limit]
    assert to_jsonable(at_limit) == at_limit  # a plain value at the deepest level allowed
    over: Any = ["leaf"]
    for _ in range(MAX_DEPTH):
        over = [over]
    with pytest.raises(NotSerializable, match=f"more than {MAX_DEPTH} levels deep"):
        to_jsonable(over)
    assert MAX_NODES == 1_000_000
    monkeypatch.setattr(observations, "MAX_NODES", 50)  # the same edge, reached sooner
    with pytest.raises(NotSerializable, match="more than 50 values") as e:
        to_jsonable(list(range(50)))  # the list itself is one value too
    assert e.value.path == "$.49"
    assert len(to_jsonable(list(range(49)))) == 49
    with pytest.raises(NotSerializable, match="more than 50 values") as e:
        to_jsonable({"a": list(range(10)), "b": {str(i): i for i in range(45)}})
    assert e.value.path == "$.b.37"
    with pytest.raises(NotSerializable, match="4300 digits") as e:
        to_jsonable({"n": 10**4400})
    assert e.value.path == "$.n"


def test_the_encoder_still_copies_and_converts_what_is_not_plain() -> None:
    class Text(str):
        pass

    inner = {"a": [1, 2]}
    out = to_jsonable({"t": (1, "x"), "s": Text("y"), "d": inner, 3: True})
    assert out == {"t": [1, "x"], "s": "y", "d": {"a": [1, 2]}, "3": True}
    assert out["d"] is not inner and out["d"]["a"] is not inner["a"]
