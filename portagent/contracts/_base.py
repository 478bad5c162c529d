"""Shared base for contracts, and the one canonical JSON used for every hash."""

from __future__ import annotations

import hashlib
import json
import types
import typing
from collections.abc import Iterable
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic.json_schema import DEFAULT_REF_TEMPLATE, GenerateJsonSchema, JsonSchemaMode


class Contract(BaseModel):
    """Frozen, closed pydantic model: unknown fields are errors, instances never change."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        populate_by_name=True,
        # Validators are built on first use, not at import: `validate` never pays for the trace or
        # report models, and a worker builds only what its runs touch (warm pools build them before forking).
        defer_build=True,
    )

    @classmethod
    def model_json_schema(
        cls,
        by_alias: bool | None = None,
        ref_template: str = DEFAULT_REF_TEMPLATE,
        schema_generator: type[GenerateJsonSchema] = GenerateJsonSchema,
        mode: JsonSchemaMode = "validation",
        *,
        union_format: Literal["any_of", "primitive_type_array"] = "any_of",
    ) -> dict[str, Any]:
        """Pydantic's schema, with each field's docstring as its description (read on demand: ``_docs``)."""
        from portagent.contracts._docs import DocumentedSchema

        return super().model_json_schema(
            by_alias=by_alias,
            ref_template=ref_template,
            schema_generator=DocumentedSchema if schema_generator is GenerateJsonSchema else schema_generator,
            mode=mode,
            union_format=union_format,
        )

    _number_fields: ClassVar[frozenset[str]] = frozenset()
    """The names (and aliases) of this contract's fields that take a number and never a boolean."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        names: set[str] = set()
        for name, info in cls.model_fields.items():
            if _takes_a_number_not_a_boolean(info.annotation):
                names.add(name)
                if info.alias:
                    names.add(info.alias)
        cls._number_fields = frozenset(names)

    @model_validator(mode="before")
    @classmethod
    def _no_boolean_numbers(cls, data: Any) -> Any:
        """A boolean where a number belongs is a mistake, not 1 or 0. Pydantic's lax mode turns ``true``
        into 1 (``max_tokens: true`` was sent as ``max_tokens: 1``; YAML reads ``yes``/``on`` as true too);
        here it reaches the field's own validation as ``NotANumber``, so the error is pydantic's usual
        "Input should be a valid integer/number" at that field's path, with the value shown as written.
        Strings of digits stay accepted (``"5"``), as before."""
        numbers = cls._number_fields
        if numbers and isinstance(data, dict):
            wrong = [k for k in numbers if type(data.get(k)) is bool]
            if wrong:
                data = {**data, **{k: NotANumber(data[k]) for k in wrong}}
        return data

    def hash_payload(self) -> Any:
        """What ``canonical_hash`` covers: every field not left at its default (DESIGN §3)."""
        return self.model_dump(mode="json", exclude_defaults=True, by_alias=True)

    def canonical_hash(self) -> str:
        return sha256_hex(canonical_json(self.hash_payload()))


class NotANumber:
    """A boolean given for a number field (``Contract._no_boolean_numbers``): no number validator accepts
    it, and its ``repr`` is the value as YAML or JSON writes it."""

    __slots__ = ("value",)

    def __init__(self, value: bool) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "true" if self.value else "false"


def _takes_a_number_not_a_boolean(annotation: Any) -> bool:
    """``int``, ``float``, optionally ``None`` and constraints (``Annotated``), nothing else: a field
    typed ``int | bool`` or ``Any`` takes booleans on purpose."""
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    origin = typing.get_origin(annotation)
    members = typing.get_args(annotation) if origin in (typing.Union, types.UnionType) else (annotation,)
    kinds = {m for m in members if m is not type(None)}
    return bool(kinds) and kinds <= {int, float}


def first_invalid_text(value: Any, path: str = "") -> str | None:
    """The path of the first string in ``value`` (keys too) that is not valid Unicode — a lone surrogate,
    which is how bytes that are not UTF-8 reach Python (command lines, ``surrogateescape``) and what a JSON
    ``"\\udcff"`` escape decodes to. No file, hash or trace can hold one. None when all are valid."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path or "value"
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            where = first_invalid_text(k, path or "key") or first_invalid_text(
                v, f"{path}.{k}" if path else str(k)
            )
            if where is not None:
                return where
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            where = first_invalid_text(v, f"{path}[{i}]")
            if where is not None:
                return where
    return None


def canonical_json(value: Any) -> str:
    """Sorted keys, non-ASCII kept, Python's default separators (``", "`` and ``": "``).

    Every hash in portagent (``args_hash``, ``schema_hash``, ``spec_hash`` …) is computed over this
    one serialization, so a hash written by one module can be checked by any other.
    """
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def args_hash(args: Any) -> str:
    """First 12 hex digits of sha256 over the canonical JSON of already-parsed arguments."""
    return sha256_hex(canonical_json(args))[:12]


def short_hash(value: Any) -> str:
    """``sha256:`` + 16 hex of the canonical JSON of ``value``; the form used for spec hashes."""
    return "sha256:" + sha256_hex(canonical_json(value))[:16]


def repeated(values: Iterable[str]) -> list[str]:
    """The values that occur more than once, sorted (one pass: a policy of 20 000 rules counted each id
    against all the others, 33 s)."""
    from collections import Counter

    return sorted(v for v, n in Counter(values).items() if n > 1)
