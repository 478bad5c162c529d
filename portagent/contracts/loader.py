"""Loading spec files (YAML or JSON) into contracts, with errors that name file, field path and line.

Anything a user can put in a file ends either in a contract instance or in ``SpecError`` — never in
a YAML, pydantic or Unicode exception (a Hypothesis test holds the loader to that).
"""

from __future__ import annotations

import difflib
import importlib
import json
from pathlib import Path
from typing import Any, TypeVar, overload

import yaml
from pydantic import BaseModel, ValidationError

from portagent.contracts.errors import SpecError, SpecProblem

SPEC_SUFFIXES = (".yaml", ".yml", ".json")

KINDS: dict[str, str] = {
    "agent": "portagent.contracts.agent:AgentSpec",
    "tool": "portagent.contracts.tool:ToolSpec",
    "tools": "portagent.contracts.tool:ToolSet",
    "policy": "portagent.contracts.policy:PermissionPolicy",
    "suite": "portagent.contracts.suite:Suite",
    "emulator-script": "portagent.contracts.emulator_script:EmulatorScript",
    "run": "portagent.contracts.run:RunRecord",
}
"""File kind → contract class (imported only when a file of that kind is loaded)."""

M = TypeVar("M", bound=BaseModel)


def model_for_kind(kind: str) -> type[BaseModel]:
    module, _, name = KINDS[kind].partition(":")
    cls: type[BaseModel] = getattr(importlib.import_module(module), name)
    return cls


def read_document(path: Path) -> tuple[Any, yaml.Node | None]:
    """Parse a YAML/JSON file. Returns the data and the YAML node tree (for line numbers)."""
    label = str(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise SpecError([SpecProblem(label, "", "file not found")]) from None
    except IsADirectoryError:
        raise SpecError([SpecProblem(label, "", "is a directory, expected a spec file")]) from None
    except OSError as e:
        raise SpecError([SpecProblem(label, "", f"cannot read file: {e.strerror}")]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SpecError([SpecProblem(label, "", f"not UTF-8 text (bad byte at offset {e.start})")]) from None
    if not text.strip():
        raise SpecError([SpecProblem(label, "", "empty file: expected a spec starting with 'kind:'")])
    if path.suffix == ".json":
        try:
            return json.loads(text), None
        except json.JSONDecodeError as e:
            raise SpecError(
                [SpecProblem(label, "", f"JSON syntax error: {e.msg}", e.lineno, e.colno)]
            ) from None
    try:
        data, node = _parse_yaml(text)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        msg = " ".join(str(p) for p in (e.context, e.problem) if p) or "invalid YAML"
        raise SpecError(
            [
                SpecProblem(
                    label,
                    "",
                    f"YAML syntax error: {msg}",
                    mark.line + 1 if mark else None,
                    mark.column + 1 if mark else None,
                )
            ]
        ) from None
    except (yaml.YAMLError, RecursionError, ValueError, TypeError) as e:
        raise SpecError([SpecProblem(label, "", f"YAML error: {e}")]) from None
    return data, node


_Loader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: ~10x faster


def _parse_yaml(text: str) -> tuple[Any, yaml.Node | None]:
    """Parse once: the node tree (for line numbers) and the data built from it."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    return data, node


def _line_of(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
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
    """Field names allowed at ``loc`` (for 'did you mean' on unknown fields)."""
    current: Any = model
    for part in loc:
        if isinstance(part, int) or current is None:
            continue
        fields = getattr(current, "model_fields", None)
        if not fields or part not in fields:
            return []
        ann = fields[part].annotation
        current = _first_model(ann)
    fields = getattr(current, "model_fields", None) or {}
    return [f.alias or name for name, f in fields.items()]


def _first_model(ann: Any) -> type[BaseModel] | None:
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    for arg in getattr(ann, "__args__", ()) or ():
        found = _first_model(arg)
        if found is not None:
            return found
    return None


def _real_loc(data: Any, loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """Keep only the parts of a pydantic error location that exist in the document (drops union tags
    such as ``fault.stall.stall_ms`` → ``fault.stall_ms``); the last part is kept (a missing field)."""
    out: list[Any] = []
    cur = data
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if (isinstance(cur, dict) and part in cur) or (
            isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur)
        ):
            out.append(part)
            cur = cur[part]
        elif last and isinstance(cur, dict) and isinstance(part, str):
            out.append(part)
    return tuple(out)


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
    for err in error.errors(include_url=False):
        loc = tuple(
            p for p in err["loc"] if not (isinstance(p, str) and ("[" in p or p in ("str", "function-after")))
        )
        if data is not None:
            loc = _real_loc(data, tuple(err["loc"]))
        path = ".".join(str(p) for p in prefix + loc)
        etype = err["type"]
        if etype == "extra_forbidden":
            name = str(loc[-1]) if loc else ""
            allowed = _field_names(model, loc[:-1])
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
            shown = repr(given) if not isinstance(given, dict | list) else type(given).__name__
            msg = f"{err['msg']} (got {shown})"
        key = (path, msg)
        if key in seen:
            continue
        seen.add(key)
        out.append(SpecProblem(label, path, msg, _line_of(node, prefix + loc)))
    return out


@overload
def load_spec_file(path: str | Path, model_cls: type[M], *, expect_kind: str | None = None) -> M: ...


@overload
def load_spec_file(
    path: str | Path, model_cls: None = None, *, expect_kind: str | None = None
) -> BaseModel: ...


def load_spec_file(
    path: str | Path, model_cls: type[BaseModel] | None = None, *, expect_kind: str | None = None
) -> BaseModel:
    """Load one spec file. With ``model_cls`` the file must be of that kind; otherwise its ``kind:``
    picks the contract. Raises ``SpecError`` with every problem found."""
    p = Path(path)
    label = str(path)
    data, node = read_document(p)
    return validate_document(data, label, node, model_cls, expect_kind=expect_kind)


def validate_document(
    data: Any,
    label: str,
    node: yaml.Node | None = None,
    model_cls: type[BaseModel] | None = None,
    *,
    expect_kind: str | None = None,
) -> BaseModel:
    if not isinstance(data, dict):
        raise SpecError(
            [SpecProblem(label, "", f"expected a mapping starting with 'kind:', got {type(data).__name__}")]
        )
    kind = data.get("kind")
    if model_cls is not None and expect_kind is None:
        field = model_cls.model_fields.get("kind")
        expect_kind = field.default if field is not None else None
    if kind is None and expect_kind is None:
        raise SpecError(
            [
                SpecProblem(
                    label, "kind", f"missing 'kind:'; expected one of: {', '.join(KINDS)}", _line_of(node, ())
                )
            ]
        )
    if kind is not None and kind not in KINDS:
        close = difflib.get_close_matches(str(kind), list(KINDS), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise SpecError(
            [
                SpecProblem(
                    label,
                    "kind",
                    f"unknown kind {kind!r}{hint}; expected one of: {', '.join(KINDS)}",
                    _line_of(node, ("kind",)),
                )
            ]
        )
    if expect_kind is not None and kind is not None and kind != expect_kind:
        raise SpecError(
            [
                SpecProblem(
                    label, "kind", f"expected kind {expect_kind!r}, got {kind!r}", _line_of(node, ("kind",))
                )
            ]
        )
    if "schema_version" not in data:
        raise SpecError(
            [
                SpecProblem(
                    label, "schema_version", "missing 'schema_version:' (current: 1)", _line_of(node, ())
                )
            ]
        )
    cls = model_cls or model_for_kind(str(kind or expect_kind))
    try:
        return cls.model_validate(data)
    except ValidationError as e:
        raise SpecError(problems_from_validation(e, label, node, cls, data=data)) from None
    except RecursionError:
        raise SpecError([SpecProblem(label, "", "document nests too deeply")]) from None


def iter_spec_files(paths: list[str]) -> list[Path]:
    """Expand files and folders into spec files (sorted, hidden folders skipped)."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            out.extend(
                sorted(
                    f
                    for f in p.rglob("*")
                    if f.is_file()
                    and f.suffix in SPEC_SUFFIXES
                    and not any(part.startswith(".") for part in f.relative_to(p).parts)
                )
            )
        else:
            out.append(p)
    return out
