"""Fallback spec loader, used only until ``portagent.contracts.loader`` exists.

Parses YAML/JSON, validates with a pydantic model and turns every problem into a
:class:`SpecProblem` naming the file, the field path and (when known) the line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from portagent.contracts.errors import SpecError, SpecProblem, UsageError

M = TypeVar("M", bound=BaseModel)


def _line_index(node: yaml.Node, path: tuple[Any, ...], out: dict[tuple[Any, ...], int]) -> None:
    out.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            k = key.value
            out[(*path, k)] = key.start_mark.line + 1
            _line_index(value, (*path, k), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, value in enumerate(node.value):
            _line_index(value, (*path, i), out)


def _clean_loc(data: Any, loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """Keep only the loc parts that name real places in the data (drops pydantic's union labels)."""
    out: list[Any] = []
    cur = data
    for i, part in enumerate(loc):
        if isinstance(cur, dict) and part in cur:
            out.append(part)
            cur = cur[part]
        elif isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur):
            out.append(part)
            cur = cur[part]
        elif isinstance(cur, dict) and any(isinstance(p, str) and p in cur for p in loc[i + 1:]):
            continue  # a union/tag label such as 'http_429' or 'function-after[...]'
        elif isinstance(part, str) and part.isidentifier():
            out.append(part)  # a missing key
            break
    return tuple(out)


def load_spec_file_fallback(path: str | Path, model_cls: type[M]) -> M:
    file = str(path)
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"{file}: file not found")
    text = p.read_text(encoding="utf-8")
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise SpecError([SpecProblem(file, "", f"not valid YAML/JSON: {getattr(e, 'problem', e)}",
                                     line=mark.line + 1 if mark else None,
                                     column=mark.column + 1 if mark else None)]) from None
    lines: dict[tuple[Any, ...], int] = {}
    if node is not None:
        _line_index(node, (), lines)
    try:
        return model_cls.model_validate(data)
    except ValidationError as e:
        problems = []
        for err in e.errors():
            loc = _clean_loc(data, tuple(err["loc"]))
            line = None
            for n in range(len(loc), -1, -1):
                if loc[:n] in lines:
                    line = lines[loc[:n]]
                    break
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                msg = f"unknown key {loc[-1]!r}" if loc else "unknown key"
            problems.append(SpecProblem(file, ".".join(str(x) for x in loc), msg, line=line))
        raise SpecError(problems) from None
