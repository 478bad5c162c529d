"""Reading a suite file (``kind: suite``) into a ``LoadedSuite``: the contract as written, its
``case_files`` pulled in, and every path it names resolved and checked.

Every problem is reported at once, with file and field path (``SpecError``): a missing agent spec,
case file, emulator script or judge; an agent spec that does not load; a case file that is not a case
mapping; a duplicate ``case_id``; a grader a case names that the suite does not define, or an inline one
that shadows the suite's; a tool name a case gives that no agent under test has
(``contracts/suite_tools.py``). The contract itself is ``contracts/suite.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from portagent.contracts.errors import SpecError, SpecProblem
from portagent.contracts.suite import Case, Suite


@dataclass(frozen=True)
class LoadedSuite:
    """A suite file after ``load_suite``: the contract as written plus every case and resolved path."""

    path: Path
    """The suite file."""
    suite: Suite
    """The contract as written."""
    cases: tuple[Case, ...]
    """Inline cases, then the cases of each ``case_files`` entry, in order."""
    agents: dict[str, Path]
    """Role (``agent`` / ``baseline`` / ``candidate``) → absolute spec path."""
    emulator_scripts: dict[str, Path]
    """case_id → absolute emulator script path (the case's own, else the suite's); absent: none."""

    def case(self, case_id: str) -> Case:
        for c in self.cases:
            if c.case_id == case_id:
                return c
        raise KeyError(case_id)


def load_suite(path: str | Path) -> LoadedSuite:
    """Read a suite file and its case files; check every referenced path exists.

    Raises ``SpecError`` listing every problem (file, field path, line when known).
    """
    from portagent.contracts.loader import read_document, validate_document
    from portagent.contracts.validation_problems import problems_from_validation

    suite_path = Path(path)
    label = str(path)
    data, node = read_document(suite_path)
    suite = validate_document(data, label, node, Suite)
    assert isinstance(suite, Suite)
    base = suite_path.resolve().parent
    problems: list[SpecProblem] = []

    def exists(rel: str, where: str, what: str, file: str = label, rel_base: Path = base) -> Path:
        p = (rel_base / rel).resolve()
        if not p.is_file():
            problems.append(SpecProblem(file, where, f"{what} not found: {rel} (looked for {p})"))
        return p

    agents = {role: exists(ref, role, "agent spec") for role, ref in suite.agent_refs.items()}
    suite_script = (
        exists(suite.emulator_script, "emulator_script", "emulator script") if suite.emulator_script else None
    )

    cases: list[Case] = list(suite.cases)
    origins: dict[str, str] = {c.case_id: f"{label} [cases]" for c in cases}
    written: dict[str, tuple[str, Any, tuple[Any, ...]]] = {  # case_id → file, YAML tree, field path
        c.case_id: (label, node, ("cases", i)) for i, c in enumerate(cases)
    }
    scripts: dict[str, Path] = {}
    for i, c in enumerate(suite.cases):
        if c.emulator_script:
            scripts[c.case_id] = exists(c.emulator_script, f"cases.{i}.emulator_script", "emulator script")
    for i, rel in enumerate(suite.case_files):
        case_path = base / rel
        if not case_path.is_file():
            problems.append(
                SpecProblem(
                    label, f"case_files.{i}", f"case file not found: {rel} (looked for {case_path.resolve()})"
                )
            )
            continue
        try:
            cdata, cnode = read_document(case_path)
        except SpecError as e:
            problems.extend(e.problems)
            continue
        items = cdata if isinstance(cdata, list) else [cdata]
        for j, item in enumerate(items):
            prefix: tuple[Any, ...] = (j,) if isinstance(cdata, list) else ()
            clabel = str(case_path)
            if not isinstance(item, dict):
                problems.append(
                    SpecProblem(
                        clabel,
                        ".".join(map(str, prefix)),
                        f"expected a case mapping, got {type(item).__name__}",
                    )
                )
                continue
            try:
                case = Case.model_validate(item)
            except ValidationError as e:
                problems.extend(problems_from_validation(e, clabel, cnode, Case, prefix, data=item))
                continue
            where = f"{clabel} [{'.'.join(map(str, prefix)) or 'case'}]"
            if case.case_id in origins:
                problems.append(
                    SpecProblem(
                        clabel,
                        ".".join(map(str, (*prefix, "case_id"))),
                        f"duplicate case_id {case.case_id!r} (also in {origins[case.case_id]})",
                    )
                )
                continue
            origins[case.case_id] = where
            written[case.case_id] = (clabel, cnode, prefix)
            cases.append(case)
            if case.emulator_script:
                scripts[case.case_id] = exists(
                    case.emulator_script,
                    ".".join(map(str, (*prefix, "emulator_script"))),
                    "emulator script",
                    clabel,
                    case_path.resolve().parent,
                )
    _check_graders(label, suite, cases, origins, problems, exists)
    _check_tool_names(label, node, suite, agents, cases, written, problems)
    if problems:
        raise SpecError(problems)
    if suite_script is not None:
        for c in cases:
            scripts.setdefault(c.case_id, suite_script)
    return LoadedSuite(suite_path, suite, tuple(cases), agents, scripts)


def _check_graders(
    label: str,
    suite: Suite,
    cases: list[Case],
    origins: dict[str, str],
    problems: list[SpecProblem],
    exists: Any,
) -> None:
    """Every grader a case names is one of the suite's, an inline one does not shadow a suite grader,
    and every judge spec and judge emulator script exists (paths relative to the suite file)."""
    names = {g.name for g in suite.graders}
    seen: set[str] = set()
    for i, spec in enumerate(suite.graders):
        exists(spec.judge, f"graders.{i}.judge", "judge agent spec")
        if spec.emulator_script:
            exists(spec.emulator_script, f"graders.{i}.emulator_script", "emulator script")
    for c in cases:
        where = origins.get(c.case_id, "")
        for j, g in enumerate(c.expect.graders):
            path = f"case {c.case_id} ({where}): expect.graders.{j}"
            if isinstance(g, str):
                if g not in names:
                    known = ", ".join(sorted(names)) or "none defined"
                    problems.append(
                        SpecProblem(label, path, f"unknown grader {g!r} (suite graders: {known})")
                    )
                continue
            if g.name in names:
                problems.append(
                    SpecProblem(label, path, f"inline grader {g.name!r} shadows the suite's grader")
                )
            if g.name not in seen:
                seen.add(g.name)
                exists(g.judge, f"{path}.judge", "judge agent spec")
                if g.emulator_script:
                    exists(g.emulator_script, f"{path}.emulator_script", "emulator script")


def _check_tool_names(
    label: str,
    node: Any,
    suite: Suite,
    agents: dict[str, Path],
    cases: list[Case],
    written: dict[str, tuple[str, Any, tuple[Any, ...]]],
    problems: list[SpecProblem],
) -> None:
    """Every tool name a case gives is one an agent under test can call (``contracts/suite_tools.py``).
    An agent spec that does not load is one problem, and the names are then left unchecked (against the
    other agent alone, a name only the broken one has would look unknown)."""
    from portagent.contracts.bundle import load_agent
    from portagent.contracts.suite_tools import KnownTools, unknown_tool_problems
    from portagent.contracts.validation_problems import line_of

    known: list[KnownTools] = []
    complete = True
    for role, ref in suite.agent_refs.items():
        if not agents[role].is_file():
            complete = False  # reported as not found
            continue
        try:
            bundle = load_agent(agents[role])
        except SpecError as e:
            complete = False
            n = len(e.problems)
            problems.append(
                SpecProblem(
                    label,
                    role,
                    f"agent spec {ref} does not load ({n} problem{'s' if n != 1 else ''}), so the tool "
                    "names the cases give are not checked",
                    line_of(node, (role,)),
                    causes=tuple(e.problems),
                )
            )
            continue
        known.append(KnownTools.of(bundle))
    if not complete:
        return
    for c in cases:
        file, tree, at = written[c.case_id]
        problems.extend(unknown_tool_problems(c, known, file, at, tree))
