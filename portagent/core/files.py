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
