"""Writing a file so that a reader never sees half of it: the one atomic writer of the package."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_text_atomic(path: Path, text: str, *, mode: int | None = None) -> Path:
    """Write ``text`` to a temporary file beside ``path`` and rename it into place (same folder, so the
    rename is atomic). The folder is created. ``mode``: permissions of the result (a temporary file is
    made 0600; files meant to be read by others — reports — pass 0o644). On failure nothing is left.

    A symlink is written through (its target gets the new file, the link stays); a path that exists and is
    not a regular file — a folder, a FIFO, a device — is refused rather than replaced. A path that cannot
    be written (a parent that is a file, a read-only folder, a full disk) is a ``UsageError`` naming it."""
    from portagent.contracts.errors import UsageError

    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    if target.exists() and not target.is_file():
        raise UsageError(f"{path}: exists and is not a regular file; give the path of a file to write")
    tmp: str | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException as e:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        if isinstance(e, OSError):
            blocker = not_a_folder(target.parent)
            why = f"{blocker} is not a folder" if blocker is not None else (e.strerror or str(e))
            raise UsageError(f"{path}: cannot write it ({why})") from None
        raise
    return path


def not_a_folder(folder: Path) -> Path | None:
    """The first part of ``folder`` that exists and is not a folder (a file where a folder must be)."""
    for part in (*reversed(folder.parents), folder):
        if part.exists() and not part.is_dir():
            return part
    return None


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
