"""Field descriptions from attribute docstrings, read only when a JSON Schema is asked for.

Contracts document each field with a string literal under it. Pydantic can turn those into field
descriptions (``use_attribute_docstrings``), but it re-reads and parses every class's source at import,
which was a fifth of ``portagent validate``'s start-up. Nothing but the JSON Schema export (editors'
completion, ``portagent schema``) and the capability table reads the descriptions, so they are read
here, on demand, once per class.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import textwrap
from functools import cache
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema


@cache
def _own_docstrings(cls: type) -> dict[str, str]:
    """``{attribute: docstring}`` for the fields written in ``cls``'s own body (not its bases)."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):  # built at run time, or source not shipped
        return {}
    tree = ast.parse(source)
    body = next((n.body for n in tree.body if isinstance(n, ast.ClassDef)), [])
    found: dict[str, str] = {}
    for stmt, following in itertools.pairwise(body):
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        if (
            isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            found[stmt.target.id] = inspect.cleandoc(following.value.value)
    return found


def field_docs(model: type[BaseModel]) -> dict[str, str]:
    """Every field's description: an explicit ``Field(description=…)`` first, else its docstring."""
    docs: dict[str, str] = {}
    for klass in reversed(model.__mro__):
        if issubclass(klass, BaseModel) and klass is not BaseModel:
            docs.update(_own_docstrings(klass))
    out: dict[str, str] = {}
    for name, info in model.model_fields.items():
        text = info.description or docs.get(name)
        if text:
            out[name] = text
    return out


class DocumentedSchema(GenerateJsonSchema):
    """Pydantic's JSON Schema generator, plus each model field's docstring as its ``description``."""

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        json_schema = super().model_schema(schema)
        cls = schema["cls"]
        properties = json_schema.get("properties")
        if not isinstance(properties, dict) or not issubclass(cls, BaseModel):
            return json_schema
        docs = field_docs(cls)
        for name, info in cls.model_fields.items():
            for key in {name, info.alias or name, info.serialization_alias or name}:
                prop: Any = properties.get(key)
                if isinstance(prop, dict) and name in docs:
                    prop.setdefault("description", docs[name])
        return json_schema
