"""What is wrong with a JSON Schema: Draft 2020-12's metaschema check (jsonschema's), its messages made
specific, and what the metaschema does not see — values that are not plain JSON, nesting past what
jsonschema can walk, references that resolve nowhere or loop. Every "is this schema well-formed?" check in
portagent goes through ``schema_problem`` (the first fault: MCP listings, the gateway) or ``schema_faults``
(every fault: ``validate``, ``load_agent``); the common schemas are answered by
``schema_plain.plainly_well_formed`` without importing jsonschema.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from portagent.contracts.schema_plain import plainly_well_formed

# -- what is wrong with a schema ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SchemaFault:
    """What Draft 2020-12's metaschema says is wrong with a schema: jsonschema's ``message`` and the
    ``path`` to the offending part (empty for the schema itself). Each caller words and places them its
    own way (a spec problem's field path, an MCP server's ``(at a/b)``), so neither is pre-formatted."""

    message: str
    path: tuple[str | int, ...]


def schema_faults_cached(schema: Any) -> tuple[SchemaFault, ...]:
    """``schema_faults``, computed once per process for each schema (by its canonical JSON): ``load_agent``
    checks every tool's schemas on each load and ``validate`` every file's, and a schema this module doubts
    (``anyOf``, ``$ref``: pydantic's) costs jsonschema's metaschema check, milliseconds each time."""
    import json

    try:
        canonical = json.dumps(schema, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError, RecursionError):  # not plain JSON (a YAML date, NaN): it says so itself
        return schema_faults(schema)
    return _faults_of(canonical)


@lru_cache(maxsize=512)
def _faults_of(canonical: str) -> tuple[SchemaFault, ...]:
    import json

    return schema_faults(json.loads(canonical))


def schema_problem(schema: Any) -> SchemaFault | None:
    """None when ``schema`` is a well-formed Draft 2020-12 schema, else the first thing wrong with it
    (``schema_faults``)."""
    faults = schema_faults(schema, first_only=True)
    return faults[0] if faults else None


def schema_faults(schema: Any, *, first_only: bool = False) -> tuple[SchemaFault, ...]:
    """Everything Draft 2020-12's metaschema finds wrong with ``schema`` (empty: nothing), each in its own
    place — ``validate`` lists every problem, not the first of each schema.

    ``plainly_well_formed`` answers the common schemas; only a schema it doubts imports jsonschema
    (~80 ms) and walks the metaschema, so the answer is always jsonschema's, and so are the messages, made
    specific where jsonschema's names no cause (``_specific``). A schema that is not plain JSON, or nests too
    deep, is that one fault (jsonschema is not asked); a well-formed one may still have a ``$ref`` that
    resolves nowhere or loops."""
    if plainly_well_formed(schema):
        return ()
    fault = _not_plain_json(schema)  # before jsonschema, which would recurse past Python's limit
    if fault is not None:
        return (fault,)
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    found: tuple[SchemaFault, ...] = ()
    if first_only:
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as e:
            found = (_specific(e),)
    else:
        checker = Draft202012Validator(  # as ``check_schema`` builds it (``pattern`` checked as a regex)
            Draft202012Validator.META_SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER
        )
        faults = dict.fromkeys(_specific(e) for e in checker.iter_errors(schema))
        found = tuple(
            sorted(faults, key=lambda f: tuple(str(p) for p in f.path))
        )  # jsonschema's order varies
    if found:
        return _other_draft(schema, found)
    fault = _unresolved_ref(schema) or _ref_loop(schema)
    return () if fault is None else (fault,)


def _other_draft(schema: Any, faults: tuple[SchemaFault, ...]) -> tuple[SchemaFault, ...]:
    """``faults``, each saying so when the schema declares another draft (``$schema``): draft-07's tuple
    ``items: [...]`` or draft-04's ``exclusiveMinimum: true`` are right there and wrong in 2020-12, which
    portagent checks and validates every schema against (a declared draft is not followed)."""
    declared = schema.get("$schema") if isinstance(schema, dict) else None
    if not isinstance(declared, str) or "2020-12" in declared:
        return faults
    note = (
        f" (the schema declares $schema {declared!r}; portagent checks every schema as JSON Schema 2020-12)"
    )
    return tuple(SchemaFault(f.message + note, f.path) for f in faults)


MAX_DEPTH = 64
"""Objects and lists within each other a schema may nest (32 levels of ``properties``, 64 of ``not`` or
``items``): jsonschema checks and validates recursively, several frames per level, and a schema ~100
levels deep exhausted Python's recursion limit (a traceback from ``validate``, a failed call at run time).
Tool schemas seen in practice nest under 10; pydantic's nested models are ``$defs`` and ``$ref``."""


def _not_plain_json(schema: Any) -> SchemaFault | None:
    """A schema that is not plain JSON, or nests deeper than ``MAX_DEPTH``: NaN or an infinity (YAML's
    ``.nan``, ``1e400``) is no JSON number — it passed the metaschema, then sending the tool to a provider
    failed — and a YAML date or other non-JSON value cannot be sent at all. Walked without recursion."""
    todo: list[tuple[Any, tuple[str | int, ...]]] = [(schema, ())]
    while todo:
        node, path = todo.pop()
        if len(path) > MAX_DEPTH:
            return SchemaFault(
                f"nests deeper than {MAX_DEPTH} levels of objects and lists (portagent checks schemas to "
                "that depth; flatten it with $defs and $ref)",
                path[:MAX_DEPTH],
            )
        if isinstance(node, dict):
            bad = [k for k in node if not isinstance(k, str)]
            if bad:
                return SchemaFault(
                    f"the key {_as_written(bad[0])} is not a string (JSON keys are; YAML reads an unquoted 1, "
                    "null, true or date as another value: quote it)",
                    path,
                )
            todo += [(v, (*path, k)) for k, v in node.items()]
        elif isinstance(node, list):
            todo += [(v, (*path, i)) for i, v in enumerate(node)]
        elif isinstance(node, float) and not math.isfinite(node):
            return SchemaFault(f"{node!r} is not a JSON number (NaN and infinities have no JSON form)", path)
        elif node is not None and not isinstance(node, str | int | float):
            return SchemaFault(
                f"a {type(node).__name__} is not a JSON value (YAML read {str(node)!r} as one: quote it)",
                path,
            )
    return None


def _specific(error: Any) -> SchemaFault:
    """A metaschema error as a fault that says what is wrong. Where the metaschema offers alternatives
    (``anyOf``/``oneOf``: ``type`` is one type name or a list of them, ``items`` a schema…) jsonschema's
    error is often the alternatives' parent, "'strng' is not valid under any of the given schemas", which
    names no cause. Then the alternatives that reject the value for its JSON kind alone are set aside (the
    author meant another: a list is not a misspelt type name) and the deepest error of the others is taken,
    again while it is such a parent: "'strng' is not one of ['array', 'boolean', …]", "[] should be
    non-empty". When every alternative rejects the kind, the message says what each accepts."""
    while error.validator in ("anyOf", "oneOf") and error.context:
        here = list(error.absolute_path)
        meant = [c for c in error.context if not _rejects_kind(c, here)]
        if not meant:
            said = list(dict.fromkeys(c.message for c in error.context))
            return SchemaFault(", and ".join(said), tuple(here))
        error = max(meant, key=lambda c: len(c.absolute_path))  # the first of the deepest
    return SchemaFault(error.message, tuple(error.absolute_path))


def _kind(value: Any) -> str:
    """A JSON value's kind (integers and other numbers are one: ``enum: [1]`` may hold ``1.0``)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else "null"


def _rejects_kind(error: Any, here: list[Any]) -> bool:
    """Does this alternative reject the value at ``here`` for its JSON kind alone — a ``type`` it is not,
    or an ``enum``/``const`` with no value of its kind?"""
    if list(error.absolute_path) != here:
        return False
    if error.validator == "type":
        return True
    kind = _kind(error.instance)
    if error.validator == "enum" and isinstance(error.validator_value, list):
        return all(_kind(v) != kind for v in error.validator_value)
    if error.validator == "const":
        return _kind(error.validator_value) != kind
    return False


# -- references that point nowhere -------------------------------------------------------------------------

_VALUE_KEYS = frozenset({"const", "enum", "default", "examples"})
"""Keywords whose value is data, not a schema: a ``$ref`` key inside them is not a reference."""
_MAP_KEYS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
"""Keywords whose value maps names to schemas: a name there (``"const"``, ``"$ref"``) is not a keyword."""
_ROOT_URI = "urn:portagent:schema"


def _unresolved_ref(schema: Any) -> SchemaFault | None:
    """The first ``$ref`` / ``$dynamicRef`` that does not resolve inside ``schema`` itself (or to a
    metaschema jsonschema ships), else None.

    The metaschema only says a reference is a string: ``check_schema`` never resolves one, so a schema
    pointing at a missing ``$defs`` entry or at an ``http://`` URL passed every check and then failed
    each call its own way (a provider error, a trace with no tool result, an MCP internal error).
    Nothing is fetched: the registry holds only this schema and the specifications, with no retriever.
    """
    if not isinstance(schema, dict):
        return None
    from jsonschema_specifications import REGISTRY  # type: ignore[import-untyped]
    from referencing import Resource
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012

    root = Resource.from_contents(schema, default_specification=DRAFT202012)
    base = root.id() or _ROOT_URI
    resolver = REGISTRY.with_resource(base, root).resolver(base_uri=base)

    def walk(node: Any, resolver: Any, path: tuple[str | int, ...], names: bool) -> SchemaFault | None:
        if isinstance(node, list):
            for i, item in enumerate(node):
                if (fault := walk(item, resolver, (*path, i), False)) is not None:
                    return fault
            return None
        if not isinstance(node, dict):
            return None
        if not names:
            if isinstance(node.get("$id"), str) and path:
                resolver = resolver.in_subresource(Resource.from_contents(node, DRAFT202012))
            for key in ("$ref", "$dynamicRef"):
                ref = node.get(key)
                if not isinstance(ref, str):
                    continue
                try:
                    resolver.lookup(ref)
                except Unresolvable:
                    return SchemaFault(
                        f"{key} {ref!r} does not resolve within the schema (a reference must point "
                        "inside the schema itself: portagent never fetches one)",
                        (*path, key),
                    )
        for key, value in node.items():
            if not names and key in _VALUE_KEYS:
                continue
            inner = not names and key in _MAP_KEYS
            if (fault := walk(value, resolver, (*path, key), inner)) is not None:
                return fault
        return None

    return walk(schema, resolver, (), False)


# -- references that loop ----------------------------------------------------------------------------------

_SAME_VALUE_LISTS = ("allOf", "anyOf", "oneOf")
_SAME_VALUE_ONE = ("not", "if", "then", "else")


def _as_written(value: Any) -> str:
    """A YAML scalar as a user wrote it (``null``, ``true``, ``2024-01-01``), not as Python shows it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _ref_loop(schema: Any) -> SchemaFault | None:
    """The first ``$ref`` that leads back to where it is without descending into the value (``a: {$ref:
    '#/$defs/a'}``, ``a → b → a``, or through ``allOf``…): checking any value against it never ends — the
    gateway failed every call with "cannot be evaluated: RecursionError" and an agent's output schema
    crashed the run. A reference through ``properties`` or ``items`` descends, so a tree or a list of
    itself is fine. Local JSON Pointer references only (``#``, ``#/…``); a schema with nested ``$id``
    scopes is left to run time."""
    if not isinstance(schema, dict):
        return None
    from urllib.parse import unquote

    nodes = _schema_nodes(schema)
    if any("$id" in node for path, node in nodes.items() if path):
        return None

    def at(pointer: str) -> tuple[str | int, ...] | None:
        if pointer == "#":
            return ()
        if not pointer.startswith("#/"):
            return None
        path: list[str | int] = []
        node: Any = schema
        for raw in pointer[2:].split("/"):
            part = unquote(raw).replace("~1", "/").replace("~0", "~")  # a URI fragment: %xx first
            if isinstance(node, dict) and part in node:
                node = node[part]
                path.append(part)
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
                path.append(int(part))
            else:
                return None
        return tuple(path)

    def same_value(
        path: tuple[str | int, ...],
    ) -> list[tuple[tuple[str | int, ...], tuple[str | int, ...] | None]]:
        """(subschema applied to the same value, the ``$ref`` that leads there or None)."""
        node = nodes[path]
        out: list[tuple[tuple[str | int, ...], tuple[str | int, ...] | None]] = []
        for key in ("$ref", "$dynamicRef"):
            ref = node.get(key)
            target = at(ref) if isinstance(ref, str) else None
            if target is not None and target in nodes:
                out.append((target, (*path, key)))
        for key in _SAME_VALUE_LISTS:
            if isinstance(node.get(key), list):
                out += [((*path, key, i), None) for i in range(len(node[key])) if (*path, key, i) in nodes]
        out += [((*path, key), None) for key in _SAME_VALUE_ONE if (*path, key) in nodes]
        if isinstance(node.get("dependentSchemas"), dict):
            out += [
                ((*path, "dependentSchemas", k), None)
                for k in node["dependentSchemas"]
                if (*path, "dependentSchemas", k) in nodes
            ]
        return out

    done: set[tuple[str | int, ...]] = set()
    for start in nodes:
        if start in done:
            continue
        # iterative depth-first search; ``on_path`` holds the current chain, each with the ref taken
        on_path: dict[tuple[str | int, ...], tuple[str | int, ...] | None] = {start: None}
        stack = [(start, iter(same_value(start)))]
        while stack:
            here, edges = stack[-1]
            step = next(edges, None)
            if step is None:
                stack.pop()
                on_path.pop(here, None)
                done.add(here)
                continue
            target, via = step
            if target in on_path:  # back to a schema on the chain: the loop's first $ref is the culprit
                chain = list(on_path)[list(on_path).index(target) :]
                refs = [on_path[p] for p in chain[1:]] + [via]
                ref_path = next((r for r in refs if r is not None), None)
                if ref_path is None:
                    continue  # impossible: a loop without a $ref would nest infinitely
                keyword = str(ref_path[-1])
                ref = nodes[ref_path[:-1]][keyword]
                return SchemaFault(
                    f"{keyword} {ref!r} leads back to itself without descending into the value "
                    "(through $ref, allOf, anyOf, oneOf, not, if/then/else): no value can be checked "
                    "against it",
                    ref_path,
                )
            if target in done:
                continue
            on_path[target] = via
            stack.append((target, iter(same_value(target))))
    return None


def _schema_nodes(schema: dict[str, Any]) -> dict[tuple[str | int, ...], dict[str, Any]]:
    """Every subschema (a mapping in schema position) by its path; data (``enum``, ``default``…) and the
    names in ``properties``-like maps are not schemas."""
    out: dict[tuple[str | int, ...], dict[str, Any]] = {}
    todo: list[tuple[Any, tuple[str | int, ...], bool]] = [(schema, (), False)]
    while todo:
        node, path, names = todo.pop()
        if isinstance(node, list):
            todo += [(v, (*path, i), False) for i, v in enumerate(node)]
            continue
        if not isinstance(node, dict):
            continue
        if not names:
            out[path] = node
        for key, value in node.items():
            if not names and key in _VALUE_KEYS:
                continue
            todo.append((value, (*path, key), not names and key in _MAP_KEYS))
    return out
