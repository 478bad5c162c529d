"""A named change in ``trace diff`` shows the difference: a string is JSON-quoted (the number 123124
and the string "123124" used to print the same), and two long values are cut around where they first
differ (two strings differing after character 60 used to print the same cut prefix)."""

from __future__ import annotations

import copy
import json
from typing import Any

from _support import REPO, require_path

from portagent.tracing.diff import diff_traces

CASE = REPO / "cassettes" / "support-desk" / "support_desk@1.0.0" / "record-then-rules" / "openai" / "r0"


def _events() -> list[dict[str, Any]]:
    folder = require_path(CASE, "the demo's cassettes")
    return [json.loads(x) for x in (folder / "trace.jsonl").read_text().splitlines() if x.strip()]


def _changes(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[str]:
    return [c for s in diff_traces(a, b).steps for c in s.changes]


def _call(events: list[dict[str, Any]], tool: str) -> dict[str, Any]:
    return next(e for e in events if e["type"] == "tool.call" and e["tool"] == tool)


def test_a_number_turned_string_is_visibly_different() -> None:
    a = _events()
    _call(a, "search_policy")["args"]["query"] = 123124
    b = copy.deepcopy(a)
    _call(b, "search_policy")["args"]["query"] = "123124"
    assert _changes(a, b) == ['args.query: 123124 → "123124"']


def test_long_strings_are_shown_where_they_first_differ() -> None:
    a = _events()
    base = "Enrolment needs a DNI (or passport) and the signed form, " * 2
    _call(a, "search_policy")["args"]["query"] = base + "before the deadline."
    b = copy.deepcopy(a)
    _call(b, "search_policy")["args"]["query"] = base + "after the deadline."
    (change,) = _changes(a, b)
    old, new = change.removeprefix("args.query: ").split(" → ")
    assert old != new
    assert old.endswith('before the deadline."') and new.split(" (")[0].endswith('after the deadline."')
    assert change.endswith(f"(first difference at character {len(base) + 1})")
    assert old.startswith("…") and len(old) < 80


def test_short_strings_are_quoted_in_added_and_removed_fields() -> None:
    a = _events()
    b = copy.deepcopy(a)
    _call(b, "search_policy")["args"]["lang"] = "es"
    assert _changes(a, b) == ['args.lang: added "es"']
