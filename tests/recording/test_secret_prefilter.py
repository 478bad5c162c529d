"""The RE2 gate in front of each secret pattern only skips work: findings are exactly those of the
Python patterns alone, on texts built to sit at the edges (Unicode word characters and spaces around
key shapes, lookaround neighbours, long runs)."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from portagent.core import secrets
from portagent.core.regex_prefilter import prefilter

FRAGMENTS = [
    "AKIA" + "A" * 16,
    "sk-ant-" + "x" * 20,
    "sk-proj-" + "a1" * 12,
    "ghp_" + "b" * 24,
    "xoxb-" + "1234567890ab",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln",
    "Bearer abcdefghijklmnop1234",
    "Basic dXNlcjpwYXNzd29yZA==",
    "password = 'hunter2hunter2'",
    '"api_key": "0123456789abcdef0123"',
    "https://user:pa55word@example.com/x",
    "?token=abcdefgh12345678&x=1",
    "glpat-" + "c" * 22,
    "AIza" + "d" * 35,
    "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----",
    "https://hooks.slack.com/services/T000/B000/XXXX",
    "aws_secret_access_key = " + "A" * 40,
]
EDGES = [
    "é",
    "ß",
    "ſ",
    "K",
    "٣",
    "\u00a0",
    "\u2028",
    "\x0b",
    "\x1c",
    "_",
    "-",
    "/",
    "=",
    " ",
    "\n",
    "x",
    "9",
    '"',
]


def _plain_scan(text: str) -> list[secrets.Finding]:
    """``scan`` with every gate removed (what it found before the gates existed)."""
    patterns = secrets._patterns()
    original, original_any = secrets._patterns, secrets._any_gate
    try:
        secrets._patterns = lambda: tuple((k, p, g, None) for k, p, g, _ in patterns)  # type: ignore[assignment]
        secrets._any_gate = lambda: None  # type: ignore[assignment]
        return secrets.scan(text, env=())
    finally:
        secrets._patterns, secrets._any_gate = original, original_any  # type: ignore[assignment]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.sampled_from(EDGES), st.text(max_size=12)), max_size=12)
)
def test_gated_scan_finds_exactly_what_the_patterns_find(parts: list[str]) -> None:
    text = "".join(parts)
    assert secrets.scan(text, env=()) == _plain_scan(text)


def test_every_shipped_pattern_has_a_gate() -> None:
    """A pattern without a gate still works (it always runs); this keeps the fast path from rotting."""
    assert [k for k, _, _, gate in secrets._patterns() if gate is None] == []
    assert secrets._any_gate() is not None  # and one gate for all of them: a clean text costs one search


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        (r"\bkey\b", "é" + "key"),  # Python: no boundary between two Unicode letters
        (r"(?<![A-Za-z])pwd=\w+", "xpwd=ab"),
        (r"[\w.]{3}", "éé."),
        (r"[^\s]{4}", "ab\u00a0c"),
        (r"\d{2}", "٣٣"),
        (r"a{2,2000}", "a" * 3),
        (r"key{,3}X", "keX"),  # Python reads {,n} as {0,n}; RE2 would read it as text
        (r"key{,}X", "keyyyyX"),
    ],
)
def test_gate_never_rejects_a_text_the_pattern_matches(pattern: str, text: str) -> None:
    gate = prefilter(re.compile(pattern))
    assert gate is not None
    if re.search(pattern, text):
        assert gate.search(text) is not None


@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("pattern", [r"(a)\1", r"(?>ab)", r"[[:alpha:]]", r"(a)?(?(1)b|c)", r"a{1001}"])
def test_untranslatable_patterns_get_no_gate(pattern: str) -> None:
    assert prefilter(re.compile(pattern)) is None
