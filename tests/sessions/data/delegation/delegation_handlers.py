"""The parcel case tool of the delegation tests: a long carrier log the coordinator reads and the
specialist must not be sent (it gets the handoff package, which names the call, not its output)."""

from __future__ import annotations

from typing import Any

CARRIER_LOG = " ".join(f"CARRIER-LOG-{i}: scanned at depot {i}." for i in range(1, 13))


def get_case(case_id: str) -> dict[str, Any]:
    return {"case_id": case_id, "status": "lost", "carrier_log": CARRIER_LOG}
