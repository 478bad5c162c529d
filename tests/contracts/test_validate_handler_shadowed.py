"""``validate`` names a handler module Python would never read: the spec's ``email.py`` (the standard
library's ``email`` is imported first) or ``logging.py``. Before, validate passed and
every call failed "module 'email' has no attribute 'get_order'"."""

from __future__ import annotations

import pytest
from _support import run_cli


@pytest.mark.parametrize(
    ("module", "whose"),
    [
        ("email", "the standard library's"),
        ("json", "the standard library's"),
        ("logging", "the standard library's"),
    ],
)
def test_a_handler_module_named_like_another_module_is_a_problem(tmp_path, module, whose):
    assert run_cli("init", str(tmp_path / "p"))[0] == 0
    folder = tmp_path / "p"
    (folder / "p_handlers.py").rename(folder / f"{module}.py")
    tools = folder / "tools.yaml"
    tools.write_text(tools.read_text().replace("p_handlers:", f"{module}:"))
    code, out, err = run_cli("validate", str(folder))
    assert code == 1, out + err
    assert "[tools.get_order.handler]" in err and f"handler module {module!r}" in err
    assert whose in err and f"rename '{module}.py'" in err and "Traceback" not in err


def test_a_handler_module_with_a_name_of_its_own_passes(tmp_path):
    assert run_cli("init", str(tmp_path / "p"))[0] == 0
    assert run_cli("validate", str(tmp_path / "p"))[0] == 0
