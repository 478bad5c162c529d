"""Loading spec files (YAML or JSON) into contracts, with errors that name file, field path and line.

Anything a user can put in a file ends either in a contract instance or in ``SpecError`` — never in
a YAML, pydantic or Unicode exception (a Hypothesis test holds the loader to that).
"""

from __future__ import annotations

import contextlib
import contextvars
import difflib
import importlib
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar, overload

import yaml
from pydantic import BaseModel, ValidationError

from portagent.contracts.errors import SpecError, SpecProblem
from portagent.contracts.validation_problems import line_of, problems_from_validation

SPEC_SUFFIXES = (".yaml", ".yml", ".json")

MAX_SPEC_BYTES_VAR = "PORTAGENT_MAX_SPEC_BYTES"
DEFAULT_MAX_SPEC_BYTES = 4 * 1024 * 1024
"""Spec files larger than this are refused before they are parsed (``$PORTAGENT_MAX_SPEC_BYTES``)."""

MAX_ALIAS_NODES_VAR = "PORTAGENT_MAX_ALIAS_NODES"
DEFAULT_MAX_ALIAS_NODES = 100_000
"""How many nodes YAML aliases may add to a document once expanded (``$PORTAGENT_MAX_ALIAS_NODES``).
A file without aliases is bounded by its size; aliases multiply it ("billion laughs"), in any mapping,
open ones such as ``input_schema`` included."""

KINDS: dict[str, str] = {
    "agent": "portagent.contracts.agent:AgentSpec",
    "tool": "portagent.contracts.tool:ToolSpec",
    "tools": "portagent.contracts.tool:ToolSet",
    "policy": "portagent.contracts.policy:PermissionPolicy",
    "suite": "portagent.contracts.suite:Suite",
    "emulator-script": "portagent.contracts.emulator_script:EmulatorScript",
    "run": "portagent.contracts.run:RunRecord",
    "router": "portagent.contracts.router:RouterSpec",
}
"""File kind → contract class (imported only when a file of that kind is loaded)."""

M = TypeVar("M", bound=BaseModel)


def model_for_kind(kind: str) -> type[BaseModel]:
    module, _, name = KINDS[kind].partition(":")
    cls: type[BaseModel] = getattr(importlib.import_module(module), name)
    return cls


def _limit(var: str, default: int, label: str) -> int:
    raw = os.environ.get(var, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:  # the environment is set wrong, not the spec: a configuration error (exit 2)
        from portagent.contracts.errors import UsageError

        raise UsageError(f"${var} must be a positive integer, got {raw!r}")
    return value


def max_spec_bytes(label: str = "") -> int:
    """The size limit of one spec file (``$PORTAGENT_MAX_SPEC_BYTES``, default 4 MiB)."""
    return _limit(MAX_SPEC_BYTES_VAR, DEFAULT_MAX_SPEC_BYTES, label or MAX_SPEC_BYTES_VAR)


def _read_spec_bytes(path: Path, label: str) -> bytes:
    """The file's bytes, if it is a regular file within the size limit. Opened without blocking (a FIFO
    with no writer answers at once) and checked on the open descriptor (no stat-then-open race)."""
    limit = max_spec_bytes(label)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise SpecError([SpecProblem(label, "", "file not found")]) from None
    except IsADirectoryError:
        raise SpecError([SpecProblem(label, "", "is a directory, expected a spec file")]) from None
    except (OSError, ValueError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise SpecError([SpecProblem(label, "", f"cannot read file: {reason}")]) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise SpecError([SpecProblem(label, "", "is a directory, expected a spec file")])
        if not stat.S_ISREG(st.st_mode):
            raise SpecError(
                [SpecProblem(label, "", f"is {_file_type(st.st_mode)}; spec files must be regular files")]
            )
        too_big = SpecProblem(
            label,
            "",
            f"is larger than {limit} bytes, the limit for a spec file (set ${MAX_SPEC_BYTES_VAR} to change it)",
        )
        if st.st_size > limit:
            raise SpecError([too_big])
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:  # grew while being read
            raise SpecError([too_big])
        return b"".join(chunks)
    except OSError as e:
        raise SpecError([SpecProblem(label, "", f"cannot read file: {e.strerror or e}")]) from None
    finally:
        os.close(fd)


def _file_type(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicate_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def read_document(path: Path) -> tuple[Any, yaml.Node | None]:
    """Parse a YAML/JSON file. Returns the data and the YAML node tree (for line numbers).

    Refused with one ``SpecError``: a file that is not a regular file or is larger than
    ``$PORTAGENT_MAX_SPEC_BYTES``, a duplicate key in any mapping (a later key would silently replace an
    earlier one), and YAML aliases that expand to more than ``$PORTAGENT_MAX_ALIAS_NODES`` extra nodes."""
    label = str(path)
    parsed = _parsed.get()
    key = _file_key(path) if parsed is not None and path.suffix != ".json" else None
    if parsed is not None and key is not None and key in parsed:
        return _construct(parsed[key]), parsed[key]
    raw = _read_spec_bytes(path, label)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SpecError([SpecProblem(label, "", f"not UTF-8 text (bad byte at offset {e.start})")]) from None
    if not text.strip():
        raise SpecError([SpecProblem(label, "", "empty file: expected a spec starting with 'kind:'")])
    if path.suffix == ".json":
        try:
            return json.loads(text, object_pairs_hook=_no_duplicate_pairs), None
        except _DuplicateKey as e:
            raise SpecError(
                [SpecProblem(label, "", f"duplicate key {e.key!r}: each key may appear once per object")]
            ) from None
        except json.JSONDecodeError as e:
            raise SpecError(
                [SpecProblem(label, "", f"JSON syntax error: {e.msg}", e.lineno, e.colno)]
            ) from None
        except RecursionError:
            raise SpecError([SpecProblem(label, "", "document nests too deeply")]) from None
    try:
        data, node = _parse_yaml(text, label)
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
        text = str(e)
        if "integer string conversion" in text:  # Python's own wording names an interpreter setting
            text = "a number has more than 4300 digits; write it as a string or a smaller number"
        raise SpecError([SpecProblem(label, "", f"YAML error: {text}")]) from None
    if parsed is not None and key is not None and node is not None:
        parsed[key] = node
    return data, node


_Loader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: ~10x faster


def _parse_yaml(text: str, label: str = "<string>") -> tuple[Any, yaml.Node | None]:
    """Parse once: the node tree (for line numbers), checked (duplicate keys, alias expansion), then the
    data built from it."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is not None:
            check_node_tree(node, label)
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    return data, node


def _construct(node: yaml.Node) -> Any:
    """The data of a node tree ``_parse_yaml`` built and checked before: constructed anew, so no two
    readers share (and could change) one document's dicts and lists."""
    loader = _Loader("")
    try:
        return loader.construct_document(node)
    finally:
        loader.dispose()


_MERGE_TAG = "tag:yaml.org,2002:merge"


def check_node_tree(root: yaml.Node, label: str) -> None:
    """Refuse duplicate mapping keys (with file, field path and line) and alias expansion beyond the
    limit. Each distinct node is visited once (iteratively: no recursion limit); the expanded size is
    computed from the sizes of shared subtrees, never by expanding them."""
    budget = _limit(MAX_ALIAS_NODES_VAR, DEFAULT_MAX_ALIAS_NODES, label)
    problems: list[SpecProblem] = []
    # Pass 1, top-down over distinct nodes: duplicate keys, with the path where each node is first met.
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, tuple[str, ...]]] = [(root, ())]
    shared = False  # a node met twice: the document uses an alias
    while stack:
        node, where = stack.pop()
        if id(node) in seen:
            shared = True
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first: dict[tuple[str, str], int] = {}
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.tag != _MERGE_TAG:
                    key = (k.tag, k.value)
                    line = k.start_mark.line + 1
                    if key in first:
                        path = ".".join((*where, k.value))
                        problems.append(
                            SpecProblem(
                                label,
                                path,
                                f"duplicate key {k.value!r} (first at line {first[key]}): a later key "
                                "would silently replace the earlier one",
                                line,
                            )
                        )
                    else:
                        first[key] = line
                sub = k.value if isinstance(k, yaml.ScalarNode) else "?"
                stack.append((v, (*where, str(sub))))
                stack.append((k, where))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                stack.append((item, (*where, str(i))))
    if problems:
        raise SpecError(problems)
    if not shared:  # no alias: nothing expands and nothing can refer to itself
        return
    # Pass 2, bottom-up: the expanded size of every distinct node (a recursive alias is refused).
    size: dict[int, int] = {}
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    work: list[tuple[yaml.Node, bool]] = [(root, False)]
    while work:
        node, children_done = work.pop()
        nid = id(node)
        if children_done:
            kids = _children(node)
            total = 1 + sum(size[id(c)] for c in kids)
            size[nid] = total
            state[nid] = 2
            if total - len(seen) > budget:
                _too_many(label, node, budget)
            continue
        if state.get(nid) == 2:
            continue
        if state.get(nid) == 1:
            line = node.start_mark.line + 1
            raise SpecError(
                [SpecProblem(label, "", "a YAML alias refers to itself (recursive document)", line)]
            )
        state[nid] = 1
        work.append((node, True))
        for child in _children(node):
            if state.get(id(child)) != 2:
                work.append((child, False))
    if size.get(id(root), 0) - len(seen) > budget:
        _too_many(label, root, budget)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _too_many(label: str, node: yaml.Node, budget: int) -> None:
    raise SpecError(
        [
            SpecProblem(
                label,
                "",
                f"YAML aliases expand to more than {budget} extra nodes (a 'billion laughs' document?); "
                f"set ${MAX_ALIAS_NODES_VAR} to allow more",
                node.start_mark.line + 1,
            )
        ]
    )


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
    memo = _loaded.get()
    key = _memo_key(p, label, model_cls, expect_kind) if memo is not None else None
    if memo is not None and key is not None and key in memo:
        return memo[key]
    data, node = read_document(p)
    model = validate_document(data, label, node, model_cls, expect_kind=expect_kind)
    if memo is not None and key is not None:
        memo[key] = model
    return model


_loaded: contextvars.ContextVar[dict[tuple[Any, ...], BaseModel] | None] = contextvars.ContextVar(
    "portagent_loaded_specs", default=None
)


_parsed: contextvars.ContextVar[dict[tuple[Any, ...], yaml.Node] | None] = contextvars.ContextVar(
    "portagent_parsed_yaml", default=None
)


@contextlib.contextmanager
def loading_once() -> Iterator[None]:
    """Within this block a spec file that loaded cleanly is not read again while its path, inode, size
    and modification time stay the same (``validate`` meets a shared tools file once per agent that
    names it). Contracts are frozen, so sharing one loaded model is safe; failures are never kept.

    A YAML file is parsed and checked (duplicate keys, alias expansion) once too, whatever reads it
    (``validate`` reads an agent as a file, as a bundle and again for its suite, under other labels and
    contract classes): its checked node tree is kept and each reader gets data constructed from it."""
    token = _loaded.set({})
    parsed = _parsed.set({})
    try:
        yield
    finally:
        _parsed.reset(parsed)
        _loaded.reset(token)


def _file_key(p: Path) -> tuple[Any, ...] | None:
    """Which file, as it is now: resolved path, device, inode, size and modification time."""
    try:
        st = p.stat()
        return (str(p.resolve()), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    except (OSError, RuntimeError):
        return None  # read_document reports it


def _memo_key(
    p: Path, label: str, model_cls: type[BaseModel] | None, expect_kind: str | None
) -> tuple[Any, ...] | None:
    try:
        st = p.stat()
    except OSError:
        return None  # read_document reports it
    return (label, str(p.resolve()), st.st_ino, st.st_size, st.st_mtime_ns, model_cls, expect_kind)


def _shape(value: Any) -> str:
    """How a YAML value reads to the person who wrote it."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r}"


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
            [
                SpecProblem(
                    label,
                    "",
                    f"expected a mapping starting with 'kind:', got {type(data).__name__}"
                    + (
                        " (a suite's case file is checked with the suite that names it)"
                        if isinstance(data, list)
                        else ""
                    ),
                )
            ]
        )
    kind = data.get("kind")
    if kind is not None and not isinstance(kind, str):
        raise SpecError(
            [
                SpecProblem(
                    label,
                    "kind",
                    f"'kind:' must be one word, got {_shape(kind)}; expected one of: {', '.join(KINDS)}",
                    line_of(node, ("kind",)),
                )
            ]
        )
    if model_cls is not None and expect_kind is None:
        field = model_cls.model_fields.get("kind")
        expect_kind = field.default if field is not None else None
    if kind is None and expect_kind is None:
        raise SpecError(
            [
                SpecProblem(
                    label, "kind", f"missing 'kind:'; expected one of: {', '.join(KINDS)}", line_of(node, ())
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
                    line_of(node, ("kind",)),
                )
            ]
        )
    if expect_kind is not None and kind is not None and kind != expect_kind:
        raise SpecError(
            [
                SpecProblem(
                    label, "kind", f"expected kind {expect_kind!r}, got {kind!r}", line_of(node, ("kind",))
                )
            ]
        )
    if "schema_version" not in data:
        raise SpecError(
            [
                SpecProblem(
                    label, "schema_version", "missing 'schema_version:' (current: 1)", line_of(node, ())
                )
            ]
        )
    version = data["schema_version"]
    if type(version) is not int:  # YAML's true and 1.0 equal 1 in Python: a version is an integer
        raise SpecError(
            [
                SpecProblem(
                    label,
                    "schema_version",
                    f"'schema_version:' must be an integer (current: 1), got {_shape(version)}",
                    line_of(node, ("schema_version",)),
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
    """Expand files and folders into spec files (sorted, hidden folders skipped). A file reached twice —
    named and inside a named folder, or as ``agent.yaml`` and ``./agent.yaml`` — is listed once, where it
    was first reached, so every count over the list counts files (a shell glob beside its folder gave
    "7 of 7 valid" for 5 files)."""
    out: list[Path] = []
    seen: set[Path] = set()

    def add(f: Path) -> None:
        key = f.resolve()
        if key not in seen:
            seen.add(key)
            out.append(f)

    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            for f in sorted(
                f
                for f in p.rglob("*")
                if f.is_file()
                and f.suffix in SPEC_SUFFIXES
                and not any(part.startswith(".") for part in f.relative_to(p).parts)
            ):
                add(f)
        else:
            add(p)
    return out
