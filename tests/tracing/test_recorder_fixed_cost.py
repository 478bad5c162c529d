"""What the trace recorder's cheaper per-event work must keep (issue 18, adapter overhead).

Every value an event carries is still masked (nested keys included) — only the field names, which are the
emitting code's keyword arguments and which the event's schema checks, are not; a name the schema does not
declare is still refused. Timestamps of the system clock are written without a ``datetime``: the same text
``iso`` gives, to the millisecond (cut, not rounded).
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from portagent.core.clock import FixedClock, IdFactory, SystemClock, iso
from portagent.tracing import recorder as recorder_module
from portagent.tracing.recorder import TraceRecorder, utc_stamp

KEY = "sk_live_" + "RecorderKey0123456789abcd"
GH = "ghp_" + "RecorderTextKey0123456789abcdefghijkl"


def _recorder(clock: object | None = None) -> TraceRecorder:
    return TraceRecorder(run_id="run_1", provider="anthropic", agent="desk", clock=clock, ids=IdFactory("m"))  # type: ignore[arg-type]


def test_every_value_of_every_field_is_masked_nested_keys_too() -> None:
    rec = _recorder()
    events = [
        rec.emit(
            "tool.call",
            call_id="call_1",
            tool=f"lookup {KEY}",
            args={"token": KEY, f"key {GH}": [GH, {"deep": f"Bearer-less {KEY}"}], "n": 1.5},
            args_hash="abc",
            provider_details={"vendor_call_id": KEY, "args_as_sent": {"x": [KEY]}},
        ),
        rec.emit("tool.result", call_id="call_1", ok=True, output={"ok": True, "text": f"here: {GH}"}),
        rec.emit("error", error_type="http_401", message=f"refused {KEY}", provider_details={"body": GH}),
        rec.emit(
            "model.call", model="m", response_id=KEY, finish_reason="stop", provider_details={"id": (KEY, GH)}
        ),
        rec.emit("run.completed", root=True, status="completed", stop_reason="final_output", final_output=GH),
    ]
    for event in events:
        text = event.model_dump_json()
        assert KEY not in text and GH not in text, text
        assert "[REDACTED:" in text
    assert events[0].args["n"] == 1.5 and events[0].call_id == "call_1"


def test_field_names_are_the_schemas_own_an_unknown_one_is_refused() -> None:
    rec = _recorder()
    with pytest.raises(ValidationError):
        rec.emit("tool.result", call_id="call_1", ok=True, **{f"note_{KEY}": 1})
    assert rec.events == []


def test_the_fields_given_are_not_changed() -> None:
    rec = _recorder()
    args = {"token": KEY, "list": [GH]}
    rec.emit("tool.call", call_id="call_1", tool="t", args=args)
    assert args == {"token": KEY, "list": [GH]}


@pytest.mark.parametrize(
    "ns",
    [
        0,
        999_999_999,
        1_767_225_599_999_999_999,  # the last nanosecond of 2025
        1_767_225_600_000_000_000,
        1_767_225_600_000_999_999,  # 0.999 ms: cut to .000
        1_767_225_600_999_500_000,  # 999.5 ms: cut to .999, never rounded up into the next second
    ],
)
def test_utc_stamp_writes_what_iso_writes(ns: int) -> None:
    expected = iso(datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=ns // 1000))
    assert utc_stamp(ns) == expected


def test_utc_stamp_agrees_with_iso_across_many_readings() -> None:
    rnd = random.Random(18)
    base = 1_780_000_000_000_000_000
    for _ in range(2000):
        ns = base + rnd.randrange(0, 3 * 86_400 * 10**9)
        assert utc_stamp(ns) == iso(datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=ns // 1000))
        if rnd.random() < 0.2:
            recorder_module._SECOND = (-1, "")  # the kept second, cold again


def test_system_clock_events_are_stamped_now_and_other_clocks_as_before() -> None:
    before = iso(SystemClock().now())
    event = _recorder(SystemClock()).emit("error", error_type="x", message="y")
    after = iso(SystemClock().now())
    assert before <= event.ts <= after and event.ts.endswith("Z") and len(event.ts) == 24
    fixed = FixedClock(datetime(2026, 5, 1, 12, 0, 0, 123456, tzinfo=UTC))
    assert _recorder(fixed).emit("error", error_type="x", message="y").ts == "2026-05-01T12:00:00.123Z"


def test_events_still_serialize_to_the_same_json_shape() -> None:
    rec = _recorder(FixedClock())
    event = rec.emit("tool.call", call_id="call_1", tool="t", args={"a": 1})
    data = json.loads(event.model_dump_json())
    assert data["ts"] == "2026-01-01T00:00:00.000Z" and data["args"] == {"a": 1} and data["seq"] == 0
