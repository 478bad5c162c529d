"""Handlers of the adapter-test shop tools. ``CALLS`` counts executions, so a test can prove that a
denied or rejected call never reached its handler."""

from __future__ import annotations

from collections import Counter
from typing import Any

CALLS: Counter[str] = Counter()
REFUNDS: list[dict[str, Any]] = []

ORDERS = {
    "ORD-7": {"status": "delivered", "amount_eur": 30.0, "items": ["mug", "tea"]},
    "ORD-8": {"status": "lost", "amount_eur": 120.0, "items": ["lamp"]},
}
FAQ = {
    "shipping": "Orders ship within 2 working days.",
    "refund": "Refunds reach the card within 5 days.",
}


def get_order(order_id: str, include_items: bool = False) -> dict[str, Any]:
    CALLS["get_order"] += 1
    order = ORDERS.get(order_id)
    if order is None:
        return {"ok": False, "error": "not_found", "details": {"order_id": order_id}}
    out = {"order_id": order_id, "status": order["status"], "amount_eur": order["amount_eur"]}
    if include_items:
        out["items"] = order["items"]
    return out


def search_faq(query: str) -> dict[str, Any]:
    CALLS["search_faq"] += 1
    hits = [text for key, text in FAQ.items() if key in query.lower()]
    return {"answer": hits[0] if hits else "No FAQ entry matches."}


def issue_refund(order_id: str, amount_eur: float) -> dict[str, Any]:
    CALLS["issue_refund"] += 1
    REFUNDS.append({"order_id": order_id, "amount_eur": amount_eur})
    return {"refund_id": f"RF-{order_id}", "amount_eur": amount_eur, "status": "refunded"}


def close_account(customer_id: str) -> dict[str, Any]:
    CALLS["close_account"] += 1
    return {"closed": customer_id}
