"""The MCP listing memory: each server's last accepted live listing, in ``$PORTAGENT_HOME/mcp_listings.json``.

A run lists each MCP server once (``sources.py``); the tool names of the last listing a run accepted are
kept here, keyed by what decides what the server lists (:func:`identity`), so the next run can report a
tool gone since (an ``McpToolRemoved`` error event) and ``validate`` can check an agent's ``allow`` list
without starting a server. The file is rewritten whole through a temporary file; a memory that cannot be
read or written is warned about and never stops a run.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from portagent.contracts._base import short_hash
from portagent.contracts.agent import McpServerRef
from portagent.tools.mcp.client import describe

log = logging.getLogger("portagent.mcp")

LISTINGS_FILE = "mcp_listings.json"


def identity(ref: McpServerRef, base_dir: Path) -> str:
    """The memory's key: everything that decides what the server lists — its name, command or URL,
    working folder and ``env`` (as written in the spec, hashed: a value may be a secret, and a
    ``${NAME}`` reference keeps one key whatever the variable holds)."""
    key = f"{ref.name} {describe(ref)}"
    if ref.command:
        cwd = base_dir if ref.cwd is None else Path(os.path.normpath(base_dir / ref.cwd))
        key += f" {cwd}"
        if ref.env:
            key += f" env={short_hash(ref.env)}"
    return key


def _read(*, create: bool = True) -> tuple[Path, dict[str, Any]] | None:
    """The memory's file and what it holds ({} when absent or not an object); None, with a warning, when
    it cannot be read. ``create=False`` makes no folder (``validate`` writes nothing)."""
    from portagent.core.home import state_file

    try:
        path = state_file(LISTINGS_FILE, create=create)
        known = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError) as e:
        log.warning("cannot read the MCP listing memory: %s", e)
        return None
    return path, known if isinstance(known, dict) else {}


def tools_gone(listed: dict[str, set[str]]) -> dict[str, list[str]]:
    """For each key (:func:`identity`) → the tool names listed now, the names its last remembered
    listing had that are gone now. Writes nothing."""
    read = _read()
    if read is None:
        return {key: [] for key in listed}
    known = read[1]
    return {
        key: sorted(set((known.get(key) or {}).get("tools") or []) - names) for key, names in listed.items()
    }


def remember(listings: dict[str, tuple[list[str], str]]) -> None:
    """Keep each key's tool names and listing fingerprint, once the run has accepted the listing (the file
    is read again first: other runs may have written since this one read)."""
    read = _read()
    if read is None:
        return
    path, known = read
    for key, (tools, fingerprint) in listings.items():
        known[key] = {"tools": sorted(tools), "fingerprint": fingerprint}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(path)
    except OSError as e:
        log.warning("cannot write the MCP listing memory %s: %s", path, e)


def remembered(keys: dict[str, str]) -> dict[str, list[str]]:
    """Server name → key (:func:`identity`) in, server name → the tool names of its last remembered
    listing out; a server never listed live is absent. Creates nothing, warns about nothing."""
    from portagent.core.home import state_file

    try:
        path = state_file(LISTINGS_FILE, create=False)
        known = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        return {}
    if not isinstance(known, dict):
        return {}
    out: dict[str, list[str]] = {}
    for name, key in keys.items():
        entry = known.get(key)
        if isinstance(entry, dict) and isinstance(entry.get("tools"), list):
            out[name] = [str(n) for n in entry["tools"]]
    return out
