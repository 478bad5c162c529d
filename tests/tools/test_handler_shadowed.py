"""A handler module named like a module Python finds first (``email.py`` next to the spec: ``email`` is the
standard library's) is never read: the call failed "module 'email' has no attribute 'get_order'" while the
user's ``email.py`` plainly holds it. The message names both files and says to rename."""

from __future__ import annotations

import pytest

from portagent.tools.handlers import HandlerImportError, resolve


@pytest.mark.parametrize("name", ["email", "json", "logging"])
def test_a_handler_module_named_like_a_standard_module_says_which_file_was_not_read(
    tmp_path, monkeypatch, name
):
    own = tmp_path / f"{name}.py"
    own.write_text(
        "def get_order(order_id: str) -> dict:\n    return {'status': 'shipped'}\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(HandlerImportError) as e:
        resolve(f"{name}:get_order")
    text = str(e.value)
    assert f"has no attribute 'get_order' ('{name}:get_order')" in text
    assert str(own) in text and f"rename '{name}.py'" in text


def test_a_module_that_just_lacks_the_function_keeps_the_plain_message(tmp_path, monkeypatch):
    (tmp_path / "desk_handlers_lacking.py").write_text("def other() -> None: ...\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(HandlerImportError) as e:
        resolve("desk_handlers_lacking:get_order")
    assert str(e.value) == (
        "module 'desk_handlers_lacking' has no attribute 'get_order' ('desk_handlers_lacking:get_order')"
    )
