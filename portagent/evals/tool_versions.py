"""Tools changed without a version bump (issue 15): what ``record``, ``eval`` and ``gate`` warn about.

A tool's ``spec_hash`` covers its schema, description and settings *and* its ``version``. When the
hash of a tool differs between two sides (a recording and the current spec, or a baseline and a
candidate) while its ``version`` did not move, the tool changed without a version bump: traces name
``tool@version``, so two different tools would carry the same name. That is flagged — a warning by
default, an error with ``--strict``. A tool whose version *was* bumped is not flagged here (a replay
still reports the recording drift).

The versions come from the manifest's ``tool_versions`` (written since issue 15). For an older
recording they fall back to the ``tool_version`` of the trace's ``tool.call`` events; a tool never
called in such a recording has no known version and cannot be judged — it is said so, never guessed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import ValidationError

from portagent.contracts.run import RunManifest, RunRecord

UNVERSIONED_PREFIX: Final = "tool changed without a version bump: "
"""Start of a warning (or, with ``--strict``, a gate reason) about a tool changed without a bump."""
UNJUDGED_PREFIX: Final = "tool version unknown: "
"""Start of a warning about a changed tool whose earlier version was never recorded."""


@dataclass(frozen=True)
class ToolState:
    """A tool as one side knows it: its spec hash and its version (None: not recorded)."""

    hash: str
    version: str | None


@dataclass(frozen=True)
class ToolChange:
    """A tool whose hash changed while its version did not (``unversioned``), or whose earlier
    version is unknown (``unjudged``)."""

    tool: str
    kind: Literal["unversioned", "unjudged"]
    version: str | None
    """The version both sides share (unversioned) or the current one (unjudged)."""
    since: str
    """What the change is measured against: ``the recording``, ``the baseline``."""

    @property
    def message(self) -> str:
        if self.kind == "unversioned":
            return (
                f"{UNVERSIONED_PREFIX}{self.tool}@{self.version} changed since {self.since} (its schema, "
                f"description or settings) but kept version {self.version}; bump its version"
            )
        return (
            f"{UNJUDGED_PREFIX}{self.tool} changed since {self.since}, which does not record its "
            "version (made before tool_versions were recorded, and the tool was never called in its "
            "trace): cannot tell whether its version was bumped"
        )


def recorded_tools(manifest: RunManifest, events: Iterable[Any] = ()) -> dict[str, ToolState]:
    """The tools of a recorded run: hashes from the manifest, versions from its ``tool_versions``
    or, for a tool it does not list (older recordings), from the trace's ``tool.call`` events."""
    versions = dict(manifest.tool_versions)
    for e in events:
        if getattr(e, "type", None) == "tool.call" and getattr(e, "tool_version", ""):
            versions.setdefault(e.tool, e.tool_version)
    return {name: ToolState(h, versions.get(name)) for name, h in manifest.tool_hashes.items()}


def current_tools(bundle: Any) -> dict[str, ToolState]:
    """The tools of an agent bundle (``contracts.bundle.AgentBundle``) as they are now."""
    return {name: ToolState(t.spec_hash, t.version) for name, t in sorted(bundle.all_tools().items())}


def tool_versions(bundle: Any) -> dict[str, str]:
    """Tool name → version of an agent bundle (what a manifest's ``tool_versions`` records)."""
    return {name: t.version for name, t in sorted(bundle.all_tools().items())}


def unversioned_changes(
    before: Mapping[str, ToolState], after: Mapping[str, ToolState], *, since: str
) -> list[ToolChange]:
    """Tools present on both sides whose hash changed while their version did not (``unversioned``),
    or whose version on a side is unknown (``unjudged``). Added, removed and bumped tools are not
    reported here."""
    out: list[ToolChange] = []
    for name in sorted(set(before) & set(after)):
        b, a = before[name], after[name]
        if b.hash == a.hash:
            continue
        if b.version is None or a.version is None:
            out.append(ToolChange(name, "unjudged", a.version or b.version, since))
        elif b.version == a.version:
            out.append(ToolChange(name, "unversioned", a.version, since))
    return out


def _read_events(path: Path) -> list[Any]:
    from portagent.tracing.recorder import read_trace

    try:
        return read_trace(path)
    except (OSError, ValueError, ValidationError):
        return []


def read_folder_tools(folder: Path) -> dict[str, ToolState] | None:
    """The tools a run folder (``run.json`` + ``trace.jsonl``) recorded; None without a readable
    ``run.json``. The trace is read only when the manifest lacks a version."""
    try:
        record = RunRecord.model_validate_json((folder / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, ValidationError):
        return None
    m = record.manifest
    events = [] if set(m.tool_hashes) <= set(m.tool_versions) else _read_events(folder / "trace.jsonl")
    return recorded_tools(m, events)


def merge_tools(sides: Iterable[Mapping[str, ToolState]]) -> dict[str, ToolState]:
    """One view of many runs of a side: the first state of each tool, completed by a later run of
    the same hash that knows the version (an older recording may call a tool in one case only)."""
    out: dict[str, ToolState] = {}
    for tools in sides:
        for name, st in tools.items():
            have = out.get(name)
            if have is None or (have.version is None and st.version and st.hash == have.hash):
                out[name] = st
    return out


def results_tools(folder: Path, runs: Iterable[Any]) -> dict[str, ToolState]:
    """The tools of ``runs`` (``RunScore``) of a results folder, from their ``runs/…/run.json``."""
    found = []
    for r in runs:
        p = r.provenance
        run_dir = folder / "runs" / f"{p.agent}@{p.agent_version}" / p.case_id / p.provider / f"r{p.repeat}"
        tools = read_folder_tools(run_dir)
        if tools is not None:
            found.append(tools)
    return merge_tools(found)


def run_warnings(changes: Iterable[ToolChange]) -> list[str]:
    """The changes as run warnings (a replay's ``RunScore.warnings``), one per tool."""
    return list(dict.fromkeys(c.message for c in changes))


def warnings_of(texts: Iterable[str]) -> tuple[list[str], list[str]]:
    """(unversioned, unjudged) messages among run warnings, deduplicated, in order."""
    texts = list(dict.fromkeys(texts))
    return (
        [t for t in texts if t.startswith(UNVERSIONED_PREFIX)],
        [t for t in texts if t.startswith(UNJUDGED_PREFIX)],
    )
