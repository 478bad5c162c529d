"""Handlers of the cross-provider policy tests (they only echo)."""


def pay(amount: float, memo: str = "") -> dict[str, object]:
    return {"paid": amount, "memo": memo}


def lookup_note(text: str) -> dict[str, object]:
    return {"note": text[:10]}
