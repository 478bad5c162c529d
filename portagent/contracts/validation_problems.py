"""A pydantic ``ValidationError`` as spec problems that name what the user wrote: the field path as it
lies in the document, its line, and a message about the value.

Pydantic speaks of its own model: a value no member of a union accepts is reported once per member, under
the member's tag (``constrained-str``, ``function-after[…]``, a class name, a discriminator's value), with
"a valid dictionary or instance of ToolSpec". Here the member that took the value's kind speaks for the
union, tags are dropped from paths, and kinds are named as YAML writes them.
"""

from __future__ import annotations

import difflib
import json
from typing import Any, Literal, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from portagent.contracts.errors import SpecProblem


def line_of(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """1-based line of the deepest node reached by ``loc`` in the YAML tree."""
    line = None
    for part in loc:
        if node is None:
            break
        line = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            nxt = None
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value == str(part):
                    nxt = v
                    line = k.start_mark.line + 1
                    break
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            node = None
    if node is not None:
        line = node.start_mark.line + 1
    return line


def _field_names(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """Field names allowed at ``loc``, pydantic's own location of the error (for 'did you mean' on unknown
    fields). Through a union, the member its tag names (a class name, or a discriminator's value such as a
    fault's ``stall``), else the first member."""
    current: Any = model
    members: list[type[BaseModel]] = [model]
    for part in loc:
        if isinstance(part, int) or current is None:
            continue
        tagged = _tagged(members, part)
        if tagged is not None:  # the tag is pydantic's, not the document's
            current, members = tagged, [tagged]
            continue
        fields = getattr(current, "model_fields", None)
        if not fields or part not in fields:
            if _union_tag(part):
                continue
            return []
        members = _models_in(fields[part].annotation)
        current = members[0] if members else None
    fields = getattr(current, "model_fields", None) or {}
    return [f.alias or name for name, f in fields.items()]


def _models_in(ann: Any) -> list[type[BaseModel]]:
    """The models an annotation holds (``list[A | B] | None`` → A, B), in order."""
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return [ann]
    found: list[type[BaseModel]] = []
    for arg in getattr(ann, "__args__", ()) or ():
        found += [m for m in _models_in(arg) if m not in found]
    return found


def _tagged(members: list[type[BaseModel]], tag: Any) -> type[BaseModel] | None:
    """The member of a union that ``tag`` names in a pydantic error location, if any."""
    if len(members) < 2 or not isinstance(tag, str):
        return None
    for m in members:
        if m.__name__ == tag:
            return m
    for m in members:
        for f in m.model_fields.values():
            if get_origin(f.annotation) is Literal and tag in get_args(f.annotation):
                return m
    return None


_TYPE_NAMES = frozenset({"str", "int", "float", "bool", "list", "dict", "tuple", "set", "none"})


def _union_tag(part: Any) -> bool:
    """Is this part of a pydantic error location the tag of a union member (``constrained-str``,
    ``function-after[…]``, ``list[str]``, a model's class name), not a field the document could hold?"""
    return isinstance(part, str) and ("[" in part or "-" in part or part[:1].isupper() or part in _TYPE_NAMES)


def _real_loc(data: Any, loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """Keep only the parts of a pydantic error location that exist in the document (drops union tags
    such as ``fault.stall.stall_ms`` → ``fault.stall_ms``); the last part is kept when it names a field
    the document lacks (a missing one), not when it is a union member's tag."""
    out: list[Any] = []
    cur = data
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if (isinstance(cur, dict) and part in cur) or (
            isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur)
        ):
            if (
                isinstance(cur, dict)
                and not isinstance(cur[part], dict | list)
                and any(not _union_tag(rest) for rest in loc[i + 1 :])
            ):
                # a tagged union's tag that is also a key of the document (``fault: {type: stall, stall:
                # 500}``): a field lies beyond it, and no field lies inside a scalar, so it is the tag
                continue
            out.append(part)
            cur = cur[part]
        elif last and isinstance(cur, dict) and isinstance(part, str) and not _union_tag(part):
            out.append(part)
    return tuple(out)


_KIND_NAMES = {
    "string_type": "a string",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "a boolean",
    "list_type": "a list",
    "none_required": "null",
}
"""Pydantic's error types that refuse a value for its kind alone, and the kind each asks for."""


def _refuses_kind(err: Any) -> bool:
    return err["type"] in _KIND_NAMES or str(err["type"]).endswith("_type")


def _union_branches(found: list[tuple[tuple[Any, ...], Any]]) -> list[tuple[tuple[Any, ...], Any]]:
    """Pydantic reports a value that no member of a union accepts once per member. A member that refused
    the value for its kind alone (a string wanted, a mapping given) says nothing when another member took
    the value and found a fault in it (its error lies deeper, or at the value itself: a string of the wrong
    form): only that one is kept. When every member
    refused the kind, their messages become one: "should be a string or a mapping (got 5)"."""
    inner = {loc[:i] for loc, _ in found for i in range(len(loc))}
    inner |= {
        loc for loc, err in found if not _refuses_kind(err)
    }  # a member took the kind, refused the value
    kept = [(loc, err) for loc, err in found if not (_refuses_kind(err) and loc in inner)]
    refused: dict[tuple[Any, ...], list[Any]] = {}
    for loc, err in kept:
        if _refuses_kind(err):
            refused.setdefault(loc, []).append(err)
    out: list[tuple[tuple[Any, ...], Any]] = []
    for loc, err in kept:
        group = refused.get(loc, [])
        if len(group) < 2 or not _refuses_kind(err):
            out.append((loc, err))
        elif err is group[0]:
            kinds = list(
                dict.fromkeys(
                    _KIND_NAMES.get(e["type"], str(e["msg"]).removeprefix("Input should be ")) for e in group
                )
            )
            merged = {**err, "type": "union_kinds", "msg": "Input should be " + " or ".join(kinds)}
            out.append((loc, merged))
    return out


def problems_from_validation(
    error: ValidationError,
    label: str,
    node: yaml.Node | None,
    model: type[BaseModel],
    prefix: tuple[Any, ...] = (),
    data: Any = None,
) -> list[SpecProblem]:
    out: list[SpecProblem] = []
    seen: set[tuple[str, str]] = set()
    found = [
        (
            _real_loc(data, tuple(err["loc"]))
            if data is not None
            else tuple(p for p in err["loc"] if not _union_tag(p)),
            err,
        )
        for err in error.errors(include_url=False)
    ]
    for loc, err in _union_branches(found):
        path = ".".join(str(p) for p in prefix + loc)
        etype = err["type"]
        if etype == "extra_forbidden":
            name = str(loc[-1]) if loc else ""
            allowed = _field_names(model, tuple(err["loc"])[:-1])
            close = difflib.get_close_matches(name, allowed, n=1)
            hint = (
                f" (did you mean {close[0]!r}?)"
                if close
                else (f" (allowed: {', '.join(allowed)})" if allowed else "")
            )
            msg = f"unknown field {name!r}{hint}"
        elif etype == "missing":
            msg = "required field is missing"
        elif etype == "literal_error":
            msg = f"got {err.get('input')!r}; {err['msg'].lower()}"
        elif etype == "value_error":
            msg = err["msg"].removeprefix("Value error, ")
        else:
            given = err.get("input")
            shown = (
                "a mapping"
                if isinstance(given, dict)
                else "a list"
                if isinstance(given, list)
                else json.dumps(given)  # as YAML and JSON write them: null, true
                if given is None or isinstance(given, bool)
                else repr(given)
            )
            said = err["msg"]
            if etype in ("model_type", "model_attributes_type"):  # not "… or instance of GraderSpec"
                said = "Input should be a mapping"
            msg = f"{said} (got {shown})"
        key = (path, msg)
        if key in seen:
            continue
        seen.add(key)
        out.append(SpecProblem(label, path, msg, line_of(node, prefix + loc)))
    return out
