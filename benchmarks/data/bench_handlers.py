"""The support desk's two read handlers as ``async def``: the shape the bare side's tools have in
adapter_overhead.py (an async tool calling the same sync function on the event loop)."""

from __future__ import annotations

from typing import Any

import support_desk_handlers as h


async def get_student_record(case_id: str, include_payments: bool = False) -> dict[str, Any]:
    return h.get_student_record(case_id, include_payments)


async def search_policy(query: str) -> dict[str, Any]:
    return h.search_policy(query)
