"""Where a run stopped at its time limit was stuck (``eval --run-timeout``; ``eval_workers``).

Each eval worker registers ``faulthandler`` on SIGUSR1 into its own file (``<folder>/<pid>.stack``, a folder
the pool creates and removes). faulthandler writes from the C signal handler without the GIL, so the dump
comes even when the worker's main thread is stuck in C code (``time.sleep``) or holds a lock. Before the
eval stops an overdue worker it sends SIGUSR1, waits up to ~1 s for the dump, and names in the run error
the few frames that matter; the dump of every thread goes to the run's folder as ``stuck-stack.txt``.

Which thread: the one whose innermost frame is user code (neither portagent, the standard library nor an
installed package) — an ``async def`` handler blocking the event loop is on the worker's main thread, a
sync handler on a tool thread while the main thread only waits on the loop —, else the main thread, which
runs the run (``eval_execute.execute``). Which frames: from the innermost (where it waits) out to the
innermost user frame and the user frames that called it (a handler's helper, then the handler), at most
five; with no user frame, the innermost three.

The stacks folder (``portagent-stacks-<pid>-<random>`` in the system temp folder) is removed when the pool
ends; an eval killed outright (SIGKILL: a CI job's timeout) cannot, so the next eval's pool removes such
leftovers (``sweep``). Whether a folder's eval is gone is told by a lock, not by its pid: the eval holds an
exclusive ``flock`` on ``<folder>/owner.lock`` while it lives and the kernel releases it when the process
dies, however it dies — a pid can be reused by another process, and a temp folder shared by containers
names pids of other pid namespaces."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STACK_FILE = "stuck-stack.txt"
"""The dump of every thread, in the folder of the run stopped at its time limit."""

DUMP_WAIT_S = 1.0
"""How long the eval waits for a worker's dump before stopping it anyway."""

STACKS_PREFIX = "portagent-stacks-"
_OWNER = "owner.lock"
_OURS = re.compile(re.escape(STACKS_PREFIX) + r"\d+-[a-z0-9_]+$")
_LEGACY = re.compile(re.escape(STACKS_PREFIX) + r"[a-z0-9_]{8}$")  # before owner locks: no way to tell
UNOWNED_AGE_S = 3600.0
"""A folder whose lock no eval ever took (its eval was killed between making the folder and locking it,
a moment) is removed once unchanged this long; younger, its eval may be about to lock it."""
LEGACY_AGE_S = 7 * 86400.0
"""A folder of a version before owner locks is removed once unchanged this long (its eval cannot be
asked; every worker's start writes in the folder, so a live eval's changes far more often)."""
_HELD: dict[str, int] = {}  # the stacks folders of this process and their locks' descriptors


def make_stacks(base: str | None = None) -> str:
    """A new stacks folder in ``base`` (the system temp folder), locked by this process until
    ``remove_stacks``; the leftovers of evals that are gone are removed first (``sweep``)."""
    sweep(base)
    folder = tempfile.mkdtemp(prefix=f"{STACKS_PREFIX}{os.getpid()}-", dir=base)
    with contextlib.suppress(OSError, ImportError):  # no lock (Windows, a file system without): never swept
        import fcntl

        fd = os.open(os.path.join(folder, _OWNER), os.O_RDWR | os.O_CREAT, 0o600)  # not inherited by exec
        _HELD[folder] = fd
        fcntl.flock(fd, fcntl.LOCK_EX)  # waits while a sweep tests it (a moment)
        os.write(fd, f"{os.getpid()}\n".encode())  # locked and written: a sweep may now judge it
    return folder


def remove_stacks(folder: str) -> None:
    """Let go of the folder's lock and remove it (the pool's end)."""
    fd = _HELD.pop(folder, None)
    if fd is not None:
        os.close(fd)
    shutil.rmtree(folder, ignore_errors=True)


def sweep(base: str | None = None) -> list[str]:
    """Remove the stacks folders in ``base`` (the system temp folder) whose eval is gone: their lock is
    free and was taken once (a live eval holds it, this process's included). One listing of the folder;
    only ``portagent-stacks-*`` entries are looked into. Returns the folders removed."""
    try:
        import fcntl
    except ImportError:  # Windows: no flock; a leftover stays, as before
        return []
    base = base or tempfile.gettempdir()
    try:
        names = os.listdir(base)
    except OSError:
        return []
    removed: list[str] = []
    for name in names:
        folder = os.path.join(base, name)
        if _LEGACY.match(name):
            if _unchanged_s(folder) > LEGACY_AGE_S:
                _remove(folder, removed)
            continue
        if not _OURS.match(name):
            continue
        try:
            # never follows a link nor waits on a pipe someone else put in the shared temp folder
            fd = os.open(os.path.join(folder, _OWNER), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            fd = None  # made, not locked yet (or never: its eval was killed in between)
        except OSError:
            continue
        try:
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held by a live eval: BlockingIOError
            taken = fd is not None and os.fstat(fd).st_size > 0
            if taken or _unchanged_s(folder) > UNOWNED_AGE_S:
                _remove(folder, removed)
        except OSError:
            continue
        finally:
            if fd is not None:
                os.close(fd)
    return removed


def _remove(folder: str, removed: list[str]) -> None:
    shutil.rmtree(folder, ignore_errors=True)  # not a folder, or not ours to remove: stays
    if not os.path.lexists(folder):
        removed.append(folder)


def _unchanged_s(folder: str) -> float:
    try:
        return time.time() - os.stat(folder).st_mtime
    except OSError:
        return 0.0


_MAIN = "portagent eval worker {pid}, main thread 0x{ident:x}\n"
_MAIN_RE = re.compile(r"main thread (0x[0-9a-fA-F]+)")
_THREAD_RE = re.compile(r"^(Current thread|Thread) (0x[0-9a-fA-F]+) \(most recent call first\):")
_FRAME_RE = re.compile(r'^\s+File "(.*)", line (\d+|\?\?\?) in (.*)$')
_MAX_SHOWN = 5


def dump_on_signal(folder: str) -> None:
    """In a worker: dump every thread's stack into ``<folder>/<pid>.stack`` on SIGUSR1. The file's first
    line names the main thread (faulthandler marks the thread the signal landed on, not necessarily it).
    Where SIGUSR1 does not exist (Windows) nothing is registered: the run error then says no more."""
    import faulthandler
    import signal
    import threading

    usr1 = getattr(signal, "SIGUSR1", None)
    if usr1 is None:
        return
    with contextlib.suppress(OSError):
        f = open(os.path.join(folder, f"{os.getpid()}.stack"), "w", encoding="utf-8")  # noqa: SIM115 -- faulthandler keeps it open
        f.write(_MAIN.format(pid=os.getpid(), ident=threading.main_thread().ident or 0))
        f.flush()
        faulthandler.register(usr1, file=f, all_threads=True, chain=False)


@dataclass(frozen=True)
class _Frame:
    path: str
    line: str
    func: str


@dataclass(frozen=True)
class _Thread:
    ident: int
    current: bool
    frames: tuple[_Frame, ...]  # innermost first


def parse(dump: str) -> tuple[int | None, list[_Thread]]:
    """(main thread id, threads) of a worker's dump; unknown lines are skipped."""
    main: int | None = None
    threads: list[_Thread] = []
    head: tuple[int, bool] | None = None
    frames: list[_Frame] = []
    for line in dump.splitlines():
        if main is None and (m := _MAIN_RE.search(line)) and not threads and head is None:
            main = int(m.group(1), 16)
        elif m := _THREAD_RE.match(line):
            if head is not None:
                threads.append(_Thread(*head, tuple(frames)))
            head, frames = (int(m.group(2), 16), m.group(1) == "Current thread"), []
        elif head is not None and (m := _FRAME_RE.match(line)):
            frames.append(_Frame(*m.groups()))
    if head is not None:
        threads.append(_Thread(*head, tuple(frames)))
    return main, threads


def _library_roots() -> list[str]:
    import site
    import sysconfig

    import portagent

    paths = sysconfig.get_paths()
    roots = [paths.get(k, "") for k in ("stdlib", "platstdlib", "purelib", "platlib")]
    with contextlib.suppress(AttributeError):  # site may be a stripped-down one (embedded interpreters)
        roots += [*site.getsitepackages(), site.getusersitepackages()]
    roots.append(str(Path(portagent.__file__).parent))
    return [os.path.realpath(r) for r in roots if r]


def _is_user(frame: _Frame, roots: list[str]) -> bool:
    if frame.path.startswith("<"):  # <frozen importlib._bootstrap>, <string>
        return False
    real = os.path.realpath(frame.path)
    return not any(real == r or real.startswith(r + os.sep) for r in roots)


def _short(path: str, roots: list[str]) -> str:
    """Relative to the eval's folder, else to the library folder it lies in (``asyncio/events.py``),
    else as it is."""
    real = os.path.realpath(path)
    for base in (os.getcwd(), *sorted(roots, key=len, reverse=True)):
        if real.startswith(base + os.sep):
            rel = os.path.relpath(real, base)
            return rel if base != roots[-1] else os.path.join("portagent", rel)
    return path


def _source(frame: _Frame) -> str:
    """The frame's source line without its comment, shortened; '' when unreadable."""
    import io
    import linecache
    import tokenize

    if not frame.line.isdigit():
        return ""
    text = linecache.getline(frame.path, int(frame.line)).strip()
    with contextlib.suppress(tokenize.TokenError, SyntaxError, IndentationError):
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                text = text[: tok.start[1]].rstrip()
                break
    return text if len(text) <= 80 else text[:77] + "..."


def _chosen(main: int | None, threads: list[_Thread], roots: list[str]) -> _Thread | None:
    with_frames = [t for t in threads if t.frames]
    user = [t for t in with_frames if _is_user(t.frames[0], roots)]
    main_thread = [t for t in with_frames if t.ident == main] or [t for t in with_frames if t.current]
    for group in ([t for t in user if t in main_thread], user, main_thread, with_frames):
        if group:
            return group[0]
    return None


def summary(dump: str) -> str:
    """Where the run was stuck, one sentence from a worker's dump ('' when it names no frame)."""
    main, threads = parse(dump)
    roots = _library_roots()
    thread = _chosen(main, threads, roots)
    if thread is None:
        return ""
    frames = list(thread.frames)
    users = [i for i, f in enumerate(frames) if _is_user(f, roots)]
    shown: list[_Frame | None]
    if users:
        first = users[0]
        shown = list(frames[: first + 1]) if first < 3 else [frames[0], None, frames[first]]
        for f in frames[first + 1 :]:  # the user frames that called it: a helper's caller, the handler
            if len(shown) >= _MAX_SHOWN or not _is_user(f, roots):
                break
            shown.append(f)
    else:
        shown = list(frames[:3])

    def at(f: _Frame | None) -> str:
        return "..." if f is None else f"{_short(f.path, roots)}:{f.line} in {f.func}"

    inner = frames[0]
    where = at(inner) + (f" ({code})" if (code := _source(inner)) else "")
    callers = ", ".join(at(f) for f in shown[1:])
    thread_note = "" if thread.ident == main else " on a thread other than the worker's main thread"
    return f"It was stuck{thread_note} at {where}" + (f", called from {callers}" if callers else "")


def collect(proc: Any, folder: str | None) -> str:
    """Ask a live worker for its dump (SIGUSR1) and wait until it stops growing (up to ``DUMP_WAIT_S``);
    '' when the worker is gone, the signal cannot be sent or nothing came."""
    import signal

    usr1 = getattr(signal, "SIGUSR1", None)
    pid = proc.pid
    if folder is None or usr1 is None or pid is None or not proc.is_alive():
        return ""
    path = Path(folder) / f"{pid}.stack"
    try:
        before = path.stat().st_size  # the header the worker wrote: it registered the handler
        os.kill(pid, usr1)
    except OSError:
        return ""
    deadline = time.monotonic() + DUMP_WAIT_S
    size = before
    while time.monotonic() < deadline:
        time.sleep(0.05)
        try:
            now = path.stat().st_size
        except OSError:
            return ""
        if now > before and now == size:  # grew, then stopped growing
            break
        size = now
    try:
        return path.read_text(encoding="utf-8", errors="replace") if size > before else ""
    except OSError:
        return ""


def stuck_reason(reason: str, proc: Any, folder: str | None, out_dir: Path | None) -> str:
    """``reason`` (``eval_workers.too_long``, or ``slow_start`` for a worker's start-up), then where the run
    was stuck and where every thread's stack was written (the run's folder). Exactly ``reason`` when no
    dump came."""
    dump = collect(proc, folder)
    where = summary(dump) if dump else ""
    if not where:
        return reason
    message = f"{reason}. {where}"
    if out_dir is not None:
        with contextlib.suppress(OSError):
            out_dir.mkdir(parents=True, exist_ok=True)
            intro = (
                f"{reason}.\nEvery thread of worker {proc.pid} when it was stopped, most recent call first "
                "(Python's faulthandler; the line above the threads names the worker's main thread, which ran the "
                "run):\n\n"
            )
            (out_dir / STACK_FILE).write_text(intro + dump, encoding="utf-8")
            message += f"; every thread's stack: {out_dir / STACK_FILE}"
    return message
