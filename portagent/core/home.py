"""Where portagent keeps its state: one folder, ``PORTAGENT_HOME`` (default ``./.portagent``).

It holds the approvals store (``approvals.db``), the effect ledger (``ledger.db``) and run records.
The variable is read at call time, never at import time, so tests and CLI invocations that set it
late still get the right folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from portagent.contracts.errors import UsageError

ENV_VAR = "PORTAGENT_HOME"
DEFAULT_HOME = ".portagent"

APPROVALS_DB = "approvals.db"
LEDGER_DB = "ledger.db"


def portagent_home(override: str | os.PathLike[str] | None = None, *, create: bool = False) -> Path:
    """The state folder: ``override``, else ``$PORTAGENT_HOME``, else ``./.portagent``.

    With ``create=True`` the folder is made if missing; a path that exists but is not a folder is a
    configuration error (exit 2), named in the message.
    """
    raw = override if override is not None else (os.environ.get(ENV_VAR) or DEFAULT_HOME)
    home = Path(raw).expanduser()
    if home.exists() and not home.is_dir():
        raise UsageError(f"{ENV_VAR} {str(home)!r} exists but is not a folder")
    if create:
        try:
            home.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UsageError(f"cannot create {ENV_VAR} folder {str(home)!r}: {e.strerror}") from e
    return home


def state_file(name: str, override: str | os.PathLike[str] | None = None, *, create: bool = True) -> Path:
    """Path of one state file (``approvals.db``, ``ledger.db`` …) inside the state folder."""
    return portagent_home(override, create=create) / name
