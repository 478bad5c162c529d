"""``core.terminal.printable``: what is escaped for a person's terminal, and what is left alone."""

from __future__ import annotations

from portagent.core.terminal import printable


def test_control_characters_separators_and_bidi_controls_are_escaped():
    assert printable("a\x1b[31mb\x07c\x00") == "a\\x1b[31mb\\x07c\\x00"
    assert printable("csi\x9b2J del\x7f") == "csi\\x9b2J del\\x7f"
    assert printable("l\u2028p\u2029") == "l\\u2028p\\u2029"
    assert printable("abc\u202edef\u2066x\u2069\u200f") == "abc\\u202edef\\u2066x\\u2069\\u200f"
    assert printable("one\ntwo\tthree\r") == "one\\x0atwo\\x09three\\x0d"
    assert printable("one\ntwo\tthree\r", lines=True) == "one\ntwo\tthree\\x0d"


def test_ordinary_text_emoji_and_accents_are_left_alone():
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # joined by zero-width joiners
    for text in (
        "Refunds need the order id.",
        "Año nuevo — ñandú",
        family,
        "soft\u00adhyphen",
        "nbsp\u00a0x",
        "",
    ):
        assert printable(text) == text
