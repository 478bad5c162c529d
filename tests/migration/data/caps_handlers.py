"""Handlers of caps_tools.yaml (plain functions over shop_data)."""

from __future__ import annotations

from typing import Any

from shop_data import FAQ, ORDERS


def get_order(order_id: str) -> dict[str, Any]:
    order = ORDERS.get(order_id)
    if order is None:
        return {"ok": False, "error": "not_found", "message": f"no order {order_id}"}
    return {"order_id": order_id, "status": order["status"], "amount_eur": order["amount_eur"]}


def search_faq(query: str) -> dict[str, Any]:
    hits = [text for key, text in FAQ.items() if key in query.lower()]
    return {"answer": hits[0] if hits else "No FAQ entry matches."}
