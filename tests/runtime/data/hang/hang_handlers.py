"""Handlers for the run time limit tests. ``stuck_note`` is the realistic user bug: an ``async def``
handler that calls ``time.sleep`` blocks the event loop, so its ``timeout_ms`` (enforced with asyncio)
never fires. Before blocking it starts a child process (as a worker starts the Claude Code CLI) and writes
its own pid and the child's into $HANG_PIDS, so a test can check both are gone."""

import os
import subprocess
import sys
import time


def write_note(note_id: str, text: str) -> dict:
    return {"note_id": note_id, "written": True}


async def stuck_note(note_id: str, text: str) -> dict:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    with open(os.environ["HANG_PIDS"], "a", encoding="utf-8") as f:
        f.write(f"{os.getpid()} {child.pid}\n")
    time.sleep(60)  # blocks the event loop: the tool's 1 s timeout_ms cannot fire
    return {"note_id": note_id, "written": True}


def slow_lookup(note_id: str) -> dict:
    """A sync handler: it runs on a tool thread while the run's main thread waits on the event loop. It
    sleeps past the run's limit, within its own timeout_ms."""
    with open(os.environ["HANG_PIDS"], "a", encoding="utf-8") as f:
        f.write(f"{os.getpid()}\n")
    time.sleep(60)  # on the tool thread
    return {"note_id": note_id, "found": True}


def dying_note(note_id: str) -> dict:
    """The process making the run is killed without a word (as the OOM killer or a segfault ends it)."""
    import signal

    os.kill(os.getpid(), signal.SIGKILL)
    return {"note_id": note_id, "written": False}
