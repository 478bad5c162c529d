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


OWNER_SUFFIX = ".portagent-lock"
"""A folder's owner lock is ``.<folder name>.portagent-lock`` beside it (``own_folder``)."""


def owner_lock_path(folder: Path) -> Path:
    """The lock file of ``folder``: beside it, not in it, so that it is never part of what the folder
    holds (a results folder's listing, ``--overwrite``'s emptying, a CI artefact, a cassette tree in git),
    and it stays put when ``eval --reuse R --out R`` renames the folder aside. Symlinks are resolved, so
    two paths to one folder name one lock."""
    real = Path(os.path.realpath(folder))
    if not real.name:  # the file system's root: no folder beside it
        return real / OWNER_SUFFIX
    return real.parent / f".{real.name}{OWNER_SUFFIX}"


class FolderOwner:
    """This process's exclusive ``flock`` on a folder's lock file (``own_folder``), held until ``release``.

    Why a lock and not a check: "is ``--out`` empty?" followed by writing lets two commands that start
    together both find it empty and then both write into it, each exiting as if the folder were its own.
    The kernel releases a ``flock`` when its process dies, however it dies (``kill -9``), so a lock file
    left by a dead process blocks nobody, and no pid or clock has to be trusted. The owner writes its pid
    into the file only so that a refused command can name it. The file is removed at ``release`` while
    still locked; a process that locked the file just before it went checks, once it holds the lock, that
    the path still names the file it locked, and tries again if not — so two owners never hold two
    different files of one folder."""

    def __init__(self, folder: Path, lock: Path, fd: int | None, made: list[Path]) -> None:
        self.folder = folder
        self.lock = lock
        self._fd = fd
        self._made = made

    def release(self) -> None:
        """Let the folder go: the lock file is removed (while still locked), then the lock; the parent
        folders ``own_folder`` created for the lock file are removed again if they are empty."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.lock)
            os.close(self._fd)
            self._fd = None
        made, self._made = self._made, []
        for d in made:  # deepest first; only an empty folder goes
            try:
                d.rmdir()
            except OSError:
                break

    def __enter__(self) -> FolderOwner:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.release()


def own_folder(folder: Path, flag: str) -> FolderOwner:
    """Become the only process writing ``folder`` (created or not), or a ``UsageError`` (exit 2) naming the
    folder and the process that writes it, with nothing written or deleted. ``flag`` names the folder
    in the message (``--out``, ``RESULTS``). Use it as a context manager around the whole write, taken
    before anything in the folder is read to be replaced or deleted. Where ``flock`` does not exist
    (Windows) nothing is locked."""
    from portagent.contracts.errors import UsageError

    try:
        import fcntl
    except ImportError:
        return FolderOwner(folder, owner_lock_path(folder), None, [])
    lock = owner_lock_path(folder)
    made: list[Path] = []  # the lock file's parent and those of its parents that do not exist yet
    for d in (lock.parent, *lock.parent.parents):
        if d.exists():
            break
        made.append(d)
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        blocker = not_a_folder(lock.parent)
        why = f"{blocker} is not a folder" if blocker is not None else (e.strerror or str(e))
        raise UsageError(f"{flag} {folder}: cannot create the folder ({why})") from None
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)  # not inherited by exec
        except OSError as e:
            FolderOwner(folder, lock, None, made).release()
            raise UsageError(
                f"{flag} {folder}: cannot create its lock file {lock} ({e.strerror or e})"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            try:
                pid = os.read(fd, 32).decode("ascii", "replace").strip()
            except OSError:
                pid = ""
            os.close(fd)
            FolderOwner(folder, lock, None, made).release()
            who = f"process {pid}" if pid.isdigit() else "another process"
            raise UsageError(
                f"{flag} {folder}: {who} is writing this folder now (it holds {lock}); wait for it to "
                "end, or choose another folder — two commands writing one folder would mix their results"
            ) from None
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(lock, follow_symlinks=False))
        except OSError:
            same = False
        if same:
            break
        os.close(fd)  # its owner removed it as this process locked it: lock the path's new file
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    return FolderOwner(folder, lock, fd, made)
