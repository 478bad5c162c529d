"""GitHub Actions output of ``gate`` and ``eval``: workflow-command annotations and a job summary.

Under ``GITHUB_ACTIONS=true``:

- every blocking finding of the gate decision is one ``::error file=<suite file>,line=<case line>,title=…::``
  line on stdout (the file that holds the case — the suite or one of its ``case_files`` — and the line of
  its ``case_id``; a finding about no single case points at the suite file, without a line); non-blocking
  findings and the decision's warnings are ``::warning`` lines;
- a Markdown summary (decision, verdict, every reason with its place) is appended to the file named by
  ``$GITHUB_STEP_SUMMARY``.

File paths are relative to ``$GITHUB_WORKSPACE`` (else the current folder) when the file is inside it, so
GitHub places the annotation on the file in the pull request. Values are escaped as the workflow-command
syntax requires (``%``, CR, LF; ``:`` and ``,`` in properties). Nothing here starts a run.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from portagent.evals.gate import GateDecision
    from portagent.evals.report import Results


@dataclass(frozen=True)
class Place:
    """Where a case is written: its file (relative to the workspace when inside it) and 1-based line."""

    file: str
    line: int | None = None


def case_locations(suite_path: str | Path) -> dict[str, tuple[Path, int]]:
    """case_id → (file, 1-based line of the case's mapping) for the suite's inline ``cases`` and the
    files its ``case_files`` name. A file that cannot be read gives no locations (never an error)."""
    import yaml

    from portagent.contracts.errors import PortagentError
    from portagent.contracts.loader import read_document

    out: dict[str, tuple[Path, int]] = {}

    def items(node: Any) -> list[Any]:
        return list(node.value) if isinstance(node, yaml.SequenceNode) else [node]

    def take(path: Path, nodes: list[Any]) -> None:
        for item in nodes:
            if not isinstance(item, yaml.MappingNode):
                continue
            for k, v in item.value:
                if getattr(k, "value", None) == "case_id" and isinstance(v, yaml.ScalarNode):
                    out.setdefault(str(v.value), (path, item.start_mark.line + 1))

    suite = Path(suite_path)
    try:
        _, root = read_document(suite)
    except (PortagentError, OSError):
        return out
    if not isinstance(root, yaml.MappingNode):
        return out
    case_files: list[str] = []
    for k, v in root.value:
        key = getattr(k, "value", None)
        if key == "cases":
            take(suite, items(v))
        elif key == "case_files" and isinstance(v, yaml.SequenceNode):
            case_files += [str(n.value) for n in v.value if isinstance(n, yaml.ScalarNode)]
    for rel in case_files:
        path = (suite.parent / rel).resolve()
        try:
            _, node = read_document(path)
        except (PortagentError, OSError):
            continue
        if node is not None:
            take(path, items(node))
    return out


def display_path(path: str | Path, env: Mapping[str, str] | None = None) -> str:
    """``path`` relative to ``$GITHUB_WORKSPACE`` (else the current folder) when inside it, POSIX style."""
    env = os.environ if env is None else env
    p = Path(path).resolve()
    for base in (env.get("GITHUB_WORKSPACE"), os.getcwd()):
        if base:
            try:
                return p.relative_to(Path(base).resolve()).as_posix()
            except ValueError:
                continue
    return p.as_posix()


def case_places(suite_path: str | Path | None, env: Mapping[str, str] | None = None) -> dict[str, Place]:
    """case_id → its ``Place`` (file shown relative to the workspace)."""
    if not suite_path:
        return {}
    return {cid: Place(display_path(f, env), line) for cid, (f, line) in case_locations(suite_path).items()}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(level: str, message: str, *, file: str | None, line: int | None, title: str) -> str:
    """One workflow command line: ``::error file=…,line=…,title=…::message``."""
    props = []
    if file:
        props.append(f"file={_escape_property(file)}")
        if line:
            props.append(f"line={line}")
    props.append(f"title={_escape_property(title)}")
    return f"::{level} {','.join(props)}::{_escape_data(message)}"


def workflow_commands(
    decision: GateDecision, suite_path: str | Path | None, env: Mapping[str, str] | None = None
) -> list[str]:
    """The workflow commands for a gate decision (see the module docstring)."""
    places = case_places(suite_path, env)
    suite_file = display_path(suite_path, env) if suite_path else None
    lines: list[str] = []
    for f in decision.findings:
        if f.category == "improvement":
            continue
        place = places.get(f.case_id or "") if f.case_id else None
        where = f"{f.case_id}" + (f" [{f.provider}]" if f.provider else "") if f.case_id else f.provider or ""
        title = f"portagent {decision.suite_id}: {where}" if where else f"portagent {decision.suite_id}"
        lines.append(
            command(
                "error" if f.blocking else "warning",
                f.message + (f"\nfix: {f.fix}" if f.fix else ""),
                file=place.file if place else suite_file,
                line=place.line if place else None,
                title=title,
            )
        )
    if not decision.passed and not any(f.blocking for f in decision.findings):
        for reason in decision.reasons:  # a block not tied to a finding still shows on the suite
            lines.append(
                command("error", reason, file=suite_file, line=None, title=f"portagent {decision.suite_id}")
            )
    for w in decision.warnings:
        lines.append(
            command("warning", w, file=suite_file, line=None, title=f"portagent {decision.suite_id}")
        )
    return lines


def summary_markdown(
    decision: GateDecision, suite_path: str | Path | None, env: Mapping[str, str] | None = None
) -> str:
    """The job summary: decision, verdict, and every finding with the file and line of its case."""
    places = case_places(suite_path, env)
    head = "PASS ✅" if decision.passed else "BLOCK ❌"
    out = [
        f"## portagent gate: {head}",
        "",
        f"suite `{decision.suite_id}` · dataset `{decision.dataset_version}`",
    ]
    if decision.verdict:
        out += ["", decision.verdict]
    rows = [f for f in decision.findings if f.category != "improvement"]
    if rows:
        out += ["", "| | category | case | provider | where | what |", "|---|---|---|---|---|---|"]
        for f in rows:
            place = places.get(f.case_id or "")
            where = f"`{place.file}:{place.line}`" if place else ""
            mark = "❌" if f.blocking else "⚠️"
            out.append(
                f"| {mark} | {f.category} | {_cell(f.case_id or '')} | {_cell(f.provider or '')} | {where} | "
                f"{_cell(f.message)} |"
            )
    elif decision.reasons:
        out += ["", *(f"- {_cell(r)}" for r in decision.reasons)]
    if decision.warnings:
        out += ["", "Warnings:", "", *(f"- {_cell(w)}" for w in decision.warnings)]
    if decision.fixes:
        out += ["", "To fix:", "", "```", *decision.fixes, "```"]
    return "\n".join(out) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def report_to_github(
    decision: GateDecision,
    results: Results | None,
    *,
    env: Mapping[str, str] | None = None,
    stdout: TextIO | None = None,
) -> bool:
    """Under ``GITHUB_ACTIONS=true``: print the annotations and append the job summary. Returns whether it
    did. A summary file that cannot be written is one warning on stderr, never a failure of the command."""
    env = os.environ if env is None else env
    if env.get("GITHUB_ACTIONS", "").lower() != "true":
        return False
    suite = results.meta.suite if results is not None and results.meta is not None else None
    out = stdout or sys.stdout
    for line in workflow_commands(decision, suite, env):
        out.write(line + "\n")
    out.flush()
    target = env.get("GITHUB_STEP_SUMMARY")
    if target:
        try:
            with open(target, "a", encoding="utf-8") as fh:
                fh.write(summary_markdown(decision, suite, env) + "\n")
        except OSError as e:
            sys.stderr.write(
                f"portagent: warning: cannot write the job summary to {target}: {e.strerror or e}\n"
            )
    return True
