"""What a Gemini function declaration can express (no SDK import): the limits the adk provider and
langgraph's Gemini chat model check a ToolSpec against before declaring it verbatim."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from portagent.contracts.portability import Lack

# --- what a Gemini function declaration can express -----------------------------------------------
#
# Tool parameters are sent verbatim as ``FunctionDeclaration.parameters_json_schema`` (REST
# ``parametersJsonSchema``). The emulator accepts anything, so the limits come from google-genai's own
# documentation (google-genai 2.34, ``google/genai/types.py``):
#
# - ``GenerateContentConfig.response_json_schema``: "While the full JSON Schema may be sent, not all
#   features are supported. Specifically, only the following properties are supported: $id, $defs,
#   $ref, $anchor, type, format, title, description, enum (for strings and numbers), items,
#   prefixItems, minItems, maxItems, minimum, maximum, anyOf, oneOf (interpreted the same as anyOf),
#   properties, additionalProperties, required. The non-standard propertyOrdering property may also be
#   set. [...] If $ref is set on a sub-schema, no other properties, except for than those starting as
#   a $, may be set."
# - ``types.Schema`` ("a select subset of an OpenAPI 3.0 schema object", the typed form of the same
#   parameters), which adds: default, example, nullable, pattern, minLength, maxLength,
#   minProperties, maxProperties.
# - ``FunctionDeclaration.parameters``: "Parameter names must start with a letter or an underscore
#   and must only contain chars a-z, A-Z, 0-9, or underscores with a maximum length of 64."
# - ``FunctionDeclaration.name``: "Must start with a letter or an underscore. Must be a-z, A-Z, 0-9,
#   or contain underscores, dots, colons and dashes, with a maximum length of 128."
#
# Anything else (allOf, not, if/then/else, const, exclusiveMinimum, multipleOf, uniqueItems,
# patternProperties, dependentRequired, …) would be ignored by Gemini: the model would be shown a
# looser contract than the ToolSpec's. portagent refuses such a spec for ``adk`` (and ``langgraph`` over a
# Gemini chat model) with the field path
# instead of sending it (the gateway would still reject bad arguments, but the model could not know).

GEMINI_JSON_SCHEMA_KEYWORDS: frozenset[str] = frozenset(
    {
        "$id",
        "$defs",
        "$ref",
        "$anchor",
        "type",
        "format",
        "title",
        "description",
        "enum",
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "anyOf",
        "oneOf",
        "properties",
        "additionalProperties",
        "required",
        "propertyOrdering",
    }
)
"""JSON Schema keywords google-genai documents as supported (``response_json_schema`` docstring)."""

GEMINI_OPENAPI_SCHEMA_FIELDS: frozenset[str] = frozenset(
    {
        "additionalProperties",
        "$defs",
        "$ref",
        "anyOf",
        "default",
        "description",
        "enum",
        "example",
        "format",
        "items",
        "maxItems",
        "maxLength",
        "maxProperties",
        "maximum",
        "minItems",
        "minLength",
        "minProperties",
        "minimum",
        "nullable",
        "pattern",
        "properties",
        "propertyOrdering",
        "required",
        "title",
        "type",
    }
)
"""Fields of google-genai's ``types.Schema`` (by alias; ``defs``/``ref`` written ``$defs``/``$ref``).
A test checks this list against the installed SDK."""

ANNOTATIONS: frozenset[str] = frozenset(
    {"$schema", "$comment", "examples", "deprecated", "readOnly", "writeOnly"}
)
"""Annotation-only keywords: they constrain nothing, so Gemini ignoring them changes no contract."""

TOOL_PARAMETER_KEYWORDS: frozenset[str] = (
    GEMINI_JSON_SCHEMA_KEYWORDS | GEMINI_OPENAPI_SCHEMA_FIELDS | ANNOTATIONS
)

_PARAM_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_FUNCTION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$")
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "prefixItems")
_SUBSCHEMA_ONE = ("items", "additionalProperties")


def walk_schema(schema: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every sub-schema (at schema positions only: property *names* are not keywords)."""
    if not isinstance(schema, dict):
        return
    yield path, schema
    for key in _SUBSCHEMA_MAPS:
        children = schema.get(key)
        if isinstance(children, dict):
            for name, child in children.items():
                yield from walk_schema(child, f"{path}.{key}.{name}")
    for key in _SUBSCHEMA_LISTS:
        children = schema.get(key)
        if isinstance(children, list):
            for i, child in enumerate(children):
                yield from walk_schema(child, f"{path}.{key}.{i}")
    for key in _SUBSCHEMA_ONE:
        yield from walk_schema(schema.get(key), f"{path}.{key}")


def tool_schema_problems(tool_name: str, schema: dict[str, Any], path: str = "input_schema") -> list[str]:
    """Why a ToolSpec cannot be declared to Gemini as it is (empty when it can)."""
    problems: list[str] = []
    if not _FUNCTION_NAME.match(tool_name):
        problems.append(f"name {tool_name!r}: Gemini function names must match {_FUNCTION_NAME.pattern}")
    for name in schema.get("properties") or {}:
        if not _PARAM_NAME.match(str(name)):
            problems.append(
                f"{path}.properties.{name}: Gemini parameter names must match {_PARAM_NAME.pattern}"
            )
    for where, sub in walk_schema(schema, path):
        for key in sub:
            if key not in TOOL_PARAMETER_KEYWORDS:
                problems.append(
                    f"{where}.{key}: JSON Schema keyword {key!r} is not supported by Gemini "
                    "function declarations"
                )
        enum = sub.get("enum")
        if isinstance(enum, list) and any(
            isinstance(v, bool) or not isinstance(v, str | int | float) for v in enum
        ):
            problems.append(f"{where}.enum: Gemini supports enum values that are strings or numbers only")
        if "$ref" in sub and any(not k.startswith("$") for k in sub):
            problems.append(f"{where}.$ref: Gemini allows no sibling keywords next to $ref (only '$…' ones)")
    return problems


def tool_lacks(agent: str, tools: Mapping[str, Any], file: str) -> list[Lack]:
    """Each of ``agent``'s tools that a Gemini function declaration cannot express, as verdict lacks."""
    from portagent.contracts.portability import Lack

    return [
        Lack("Gemini schema limits", f"{agent}: tool {name}: {problem}", file, f"tools[{name}]")
        for name, tool in tools.items()
        for problem in tool_schema_problems(name, tool.input_schema)
    ]
