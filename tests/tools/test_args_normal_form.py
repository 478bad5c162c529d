"""The arguments' normal form (``tools.policy.normalize_args``) and what the gateway records of the form sent.

``normalize_args`` shares what it leaves alone (an argument object already normal comes back as the same
object), which lets the gateway skip hashing the arguments as sent a second time. These tests pin what that
must not change: ``provider_details.args_as_sent`` is kept exactly when the normal form differs from what the
model sent in value *or* in its canonical JSON (``1.0`` and ``1`` and ``True`` compare equal in Python but
hash apart), and a handler never shares an object with the caller that handed the call in.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

import pytest
from gateway_testkit import ctx, run, tool

from portagent.contracts._base import args_hash
from portagent.tools import ToolGateway
from portagent.tools.policy import normalize_args

SCHEMA = {
    "type": "object",
    "properties": {
        "count": {"type": "integer"},
        "amount": {"type": "number"},
        "flag": {"type": "boolean"},
        "memo": {"type": "string"},
        "any": {},
        "items": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "number"}}}},
    },
}
NUMBERS = tool("numbers", properties=SCHEMA["properties"], handler="acceptance_tools:get_student_record")


def test_an_argument_object_already_normal_comes_back_as_the_same_object() -> None:
    args = {"memo": "café", "count": 3, "flag": True, "items": [{"n": 2.5}, {"n": 3}], "any": [1.0, None]}
    assert normalize_args(SCHEMA, args) is args
    assert normalize_args(None, args) is args
    assert normalize_args(SCHEMA, []) == [] and normalize_args(SCHEMA, {}) == {}


def test_only_the_containers_on_the_path_to_a_change_are_new() -> None:
    first = {"n": 1}
    args = {"memo": "x", "items": [first, {"n": "2"}], "any": {"k": [1]}}
    out = normalize_args(SCHEMA, args)
    assert out == {"memo": "x", "items": [{"n": 1}, {"n": 2}], "any": {"k": [1]}}
    assert out is not args and out["items"] is not args["items"]
    assert out["items"][0] is first and out["any"] is args["any"]  # untouched parts are shared
    assert args["items"][1] == {"n": "2"}  # the input itself is never changed
    assert list(out) == list(args)  # key order kept


def test_a_dict_or_list_subclass_comes_back_as_a_plain_one() -> None:
    ordered = OrderedDict(memo="x")
    out = normalize_args(SCHEMA, ordered)
    assert type(out) is dict and out == {"memo": "x"}


def test_nfc_keys_that_collide_keep_the_last_value_as_before() -> None:
    nfd = "cafe\u0301"
    out = normalize_args(None, {"café": 1, nfd: 2})
    assert out == {"café": 2}


def _sent(raw: Any) -> tuple[Any, Any]:
    c = ctx()
    gw = ToolGateway([NUMBERS], c)
    run(gw.prepare("numbers", raw))
    assert c.recorder is not None
    call = c.recorder.of_type("tool.call")[0]
    return call.args, call.provider_details.get("args_as_sent")


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ({"count": 1.0}, {"count": 1}),  # equal in Python, "1.0" and "1" in JSON: hashes differ
        ({"amount": 1000.0}, {"amount": 1000}),
        ({"count": "7"}, {"count": 7}),
        ({"flag": "true"}, {"flag": True}),
        ({"items": [{"n": 2.0}]}, {"items": [{"n": 2}]}),
        ({"memo": "cafe\u0301"}, {"memo": "café"}),
    ],
)
def test_args_as_sent_is_kept_whenever_the_normal_form_differs(raw: dict[str, Any], normal: Any) -> None:
    for sent in (raw, json.dumps(raw)):  # an object (Anthropic, ADK) or a JSON string (OpenAI)
        args, as_sent = _sent(sent)
        assert args == normal and json.dumps(args) == json.dumps(normal)
        assert as_sent == raw and args_hash(as_sent) != args_hash(args)


@pytest.mark.parametrize(
    "raw",
    [
        {"count": 1, "amount": 2.5, "flag": True, "memo": "1000"},
        {"memo": 1.0},  # a string field: a number there is left alone (the schema check refuses it)
        {"any": True},
        {"any": 1.0},
        {"flag": 1},  # not a boolean: left as it is
        {},
    ],
)
def test_no_args_as_sent_when_nothing_changed(raw: dict[str, Any]) -> None:
    for sent in (raw, json.dumps(raw)):
        args, as_sent = _sent(sent)
        assert as_sent is None and json.dumps(args) == json.dumps(raw)


def test_a_handler_that_changes_its_arguments_leaves_the_callers_object_alone() -> None:
    spec = tool(
        "scribble",
        properties={"tags": {"type": "array"}, "filter": {"type": "object"}},
        handler="args_mutating_tools:scribble",
    )
    raw = {"tags": ["a"], "filter": {"q": "x"}}  # already normal: the SDK's own object reaches the gateway
    c = ctx()
    gw = ToolGateway([spec], c)
    obs = run(gw.call("scribble", raw))
    assert obs.ok, obs
    assert raw == {"tags": ["a"], "filter": {"q": "x"}}
    assert c.recorder is not None
    assert c.recorder.of_type("tool.call")[0].args == {"tags": ["a"], "filter": {"q": "x"}}
