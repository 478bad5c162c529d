"""A boolean where a contract wants a number is an error at that field, never 1 or 0.

Pydantic's lax mode turned ``true`` into 1: ``models: {max_tokens: true}`` validated and the anthropic adapter
sent ``"max_tokens": 1`` (found by QA through the emulator's request log). YAML reads ``yes``/``on``/``true`` as
booleans, so a slip like ``timeout_s: on`` or ``max_turns: yes`` went the same way. The rule lives in the
``Contract`` base, so it holds for every number field of every contract (specs, suites, policies, scripts, traces)
— the test below walks them all.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest
from _support import run_cli
from pydantic import ValidationError

import portagent.contracts
from portagent.contracts._base import Contract


def _contracts() -> list[type[Contract]]:
    for info in pkgutil.iter_modules(portagent.contracts.__path__):
        importlib.import_module(f"portagent.contracts.{info.name}")
    found: list[type[Contract]] = []
    todo = list(Contract.__subclasses__())
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return sorted(set(found), key=lambda c: f"{c.__module__}.{c.__qualname__}")


NUMBER_FIELDS = [(cls, name) for cls in _contracts() for name in sorted(cls._number_fields)]


def test_the_number_fields_are_found() -> None:
    named = {f"{cls.__name__}.{name}" for cls, name in NUMBER_FIELDS}
    assert {"ModelSettings.max_tokens", "ModelSettings.temperature", "Budget.max_turns"} <= named
    assert len(NUMBER_FIELDS) > 50


@pytest.mark.parametrize("value", [True, False])
@pytest.mark.parametrize(("cls", "name"), NUMBER_FIELDS, ids=[f"{c.__name__}.{n}" for c, n in NUMBER_FIELDS])
def test_a_boolean_for_a_number_field_is_an_error_there(cls: type[Contract], name: str, value: bool) -> None:
    with pytest.raises(ValidationError) as caught:
        cls.model_validate({name: value})
    at_field = [e for e in caught.value.errors() if e["loc"][:1] == (name,)]
    assert at_field and {e["type"] for e in at_field} <= {"int_type", "float_type"}, caught.value.errors()


def test_digits_in_a_string_and_plain_numbers_still_count() -> None:
    from portagent.contracts.agent import ModelSettings

    assert ModelSettings.model_validate({"max_tokens": "5"}).max_tokens == 5
    assert ModelSettings.model_validate({"max_tokens": 5, "temperature": 1}).temperature == 1.0


def test_validate_names_the_line_of_a_yaml_boolean_given_for_a_number(tmp_path: Path) -> None:
    spec = tmp_path / "agent.yaml"
    spec.write_text(
        "kind: agent\nschema_version: 1\nname: desk\ninstructions: hi\n"
        "models: {anthropic: claude-sonnet-4-6, max_tokens: yes}\nbudget:\n  max_turns: on\n"
    )
    code, out, err = run_cli("validate", str(spec))
    assert code == 1, out + err
    text = " ".join((out + err).split())
    assert "[models.max_tokens]: Input should be a valid integer (got true)" in text
    assert "[budget.max_turns]: Input should be a valid integer (got true)" in text
    assert "Traceback" not in out + err
