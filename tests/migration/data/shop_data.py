"""The shop's data, shared by the native agents of the migration tests."""

from __future__ import annotations

from typing import Any

ORDERS: dict[str, dict[str, Any]] = {
    "ORD-7": {"status": "delivered", "amount_eur": 30.0},
    "ORD-8": {"status": "lost", "amount_eur": 120.0},
}
FAQ = {
    "shipping": "Orders ship within 2 working days.",
    "refund": "Refunds reach the card within 5 days.",
}
REFUNDS: list[dict[str, Any]] = []
