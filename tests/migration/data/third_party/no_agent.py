"""Helpers only: no agent in here."""


def add(a: int, b: int) -> int:
    return a + b
