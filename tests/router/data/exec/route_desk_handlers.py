"""Handlers of the executed-router tests; each call is appended to $ROUTE_TEST_LOG (what really ran)."""

from __future__ import annotations

import json
import os
from typing import Any


def _log(tool: str, **args: Any) -> None:
    path = os.environ.get("ROUTE_TEST_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"tool": tool, **args}) + "\n")


def faq_lookup(question: str) -> dict[str, Any]:
    _log("faq_lookup", question=question)
    if "outage" in question:
        raise RuntimeError("the FAQ index is down")
    return {"answer": "Refunds are requested within 30 days of payment.", "source": "faq"}


def faq_backup(question: str) -> dict[str, Any]:
    _log("faq_backup", question=question)
    return {"answer": "Refunds: 30 days (backup copy).", "source": "faq_backup"}


def create_ticket(student: str, summary: str) -> dict[str, Any]:
    _log("create_ticket", student=student, summary=summary)
    return {"ticket_id": f"T-{student}", "created": True}
