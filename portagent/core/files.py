"""Writing a file so that a reader never sees half of it: the one atomic writer of the package."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_text_atomic(path: Path, text: str, *, mode: int | None = None) -> Path:
    """Write ``text`` to a temporary file beside ``path`` and rename it into place (same folder, so the
    rename is atomic). The folder is created. ``mode``: permissions of the result (a temporary file is
    made 0600; files meant to be read by others — reports — pass 0o644). On failure nothing is left."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def staging_dir(parent: Path, prefix: str) -> Path:
    """A new, empty folder in ``parent`` named ``<prefix><random>``, to be filled and then renamed into
    place. Unlike ``tempfile.mkdtemp`` (always 0700), it gets the permissions any folder made here gets
    (0777 less the umask): the folder it becomes is the user's, readable as their other folders are."""
    import secrets

    for _ in range(100):
        path = parent / f"{prefix}{secrets.token_hex(5)}"
        try:
            os.mkdir(path)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"no free name for a staging folder in {parent}")
