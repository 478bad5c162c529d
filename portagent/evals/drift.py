"""Recording drift: what changed since a cassette was recorded, and the command that re-records it.

A replay sends the *current* agent, tools, policy and case request; the cassette holds what was sent
when it was recorded. When they no longer match, the replay fails with ``cassette_drift`` — that is a
stale recording, not an agent regression (issue 15). These pure functions name the part that changed
(from the hashes the recording's manifest keeps) and build the exact ``portagent record --drifted``
line that fixes it.

A recording made against the emulator is also stale when the emulator script the suite names has changed
since (``run.json`` keeps the script's hash): the cassette holds the scripted model's *old* answers, so a
replay would gate the agent on answers the current script no longer gives, and pass. The hash covers the
whole file — which of its rules a run used is not known — so any edit of the script makes every run
recorded with it stale; re-recording against the emulator costs nothing. Recordings made ``--live`` keep
no script hash and are never affected.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from portagent.contracts.run import RunManifest

CHANGED_PREFIX: Final = "changed since the recording: "
"""Prefix of the run warnings that name what changed since a replayed run was recorded."""

SCRIPT_CHANGE: Final = "the emulator script"
"""What changed, when the emulator script a run was recorded against has changed since."""


def script_changed(manifest: RunManifest, script_hash: str | None) -> bool:
    """The run (a recording, or a replay of one) was recorded against the emulator with a script whose hash
    differs from ``script_hash``, the hash of the script the suite names now. False for recordings made
    ``--live`` (no script hash) and when there is no script to compare with (``script_hash`` None)."""
    recorded = manifest.recorded_source or manifest.source
    return (
        recorded == "emulator"
        and bool(manifest.emulator_script_hash)
        and script_hash is not None
        and manifest.emulator_script_hash != script_hash
    )


def script_drift(script: str) -> str:
    """The drift message of a replay whose emulator script changed since the recording (``script_changed``)."""
    return (
        f"the emulator script changed since the recording ({script}): the cassette holds the scripted "
        "model's old answers"
    )


def recording_changes(
    manifest: RunManifest,
    *,
    spec_hash: str,
    policy_hash: str,
    tool_hashes: Mapping[str, str],
    request: Mapping[str, Any] | None = None,
    script_hash: str | None = None,
) -> list[str]:
    """What differs between a recording (its manifest) and what a replay sends now, readable:
    ``the agent spec (instructions, models, tool list or settings)``, ``the policy``, ``tool
    send_email (its schema or description)``, ``the case's input``, ``the emulator script`` (given
    ``script_hash``, the current script's) … Empty when nothing the manifest hashes changed (the drift then
    comes from elsewhere, e.g. an SDK version)."""
    out: list[str] = []
    if manifest.spec_hash and manifest.spec_hash != spec_hash:
        out.append("the agent spec (instructions, models, tool list or settings)")
    if manifest.policy_hash and manifest.policy_hash != policy_hash:
        out.append("the policy")
    recorded = manifest.tool_hashes
    for name in sorted(set(recorded) | set(tool_hashes)):
        if name not in tool_hashes:
            out.append(f"tool {name} (removed)")
        elif name not in recorded:
            out.append(f"tool {name} (added)")
        elif recorded[name] != tool_hashes[name]:
            out.append(f"tool {name} (its schema, description or settings)")
    if request is not None and manifest.request:
        keys = sorted(set(manifest.request) | set(request))
        changed = [k for k in keys if manifest.request.get(k) != request.get(k) and k != "idempotency_key"]
        if changed:
            out.append("the case's request (" + ", ".join(changed) + ")")
    if script_changed(manifest, script_hash):
        out.append(SCRIPT_CHANGE)
    return out


def rerecord_command(
    suite: str | None,
    providers: Iterable[str],
    cases: Iterable[str],
    *,
    source: str | None = "emulator",
    cassettes: str | None = None,
) -> str:
    """The ``portagent record … --drifted`` line that re-records the drifted runs of ``cases`` on
    ``providers`` (``--live`` when the recordings came from a vendor, ``--emulator`` otherwise)."""
    parts = ["portagent", "record", _shown(suite) if suite else "SUITE.yaml"]
    provs = sorted(set(providers))
    if provs:
        parts += ["--providers", ",".join(provs)]
    parts.append("--live" if source == "live" else "--emulator")
    parts.append("--drifted")
    for case in sorted(set(cases)):
        parts += ["--case", case]
    if cassettes and _shown(cassettes) != "cassettes":
        parts += ["--out", _shown(cassettes)]
    return shlex.join(parts)


def _shown(path: str) -> str:
    """A path as the user would type it from the current folder (relative when below it)."""
    p = Path(path)
    if not p.is_absolute():
        return str(p)
    try:
        return str(p.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)
