"""Handlers for the crash tests: each effect is one line in $CRASH_EFFECTS; with $CRASH_HANG set the
handler makes its effect, touches $CRASH_HANG and hangs (the test kills the process there)."""

import json
import os
import time
from pathlib import Path


def write_note(note_id: str, text: str) -> dict:
    with open(os.environ["CRASH_EFFECTS"], "a", encoding="utf-8") as f:
        f.write(json.dumps({"note_id": note_id, "text": text, "pid": os.getpid()}) + "\n")
    hang = os.environ.get("CRASH_HANG")
    if hang:
        Path(hang).touch()
        time.sleep(120)
    return {"note_id": note_id, "written": True}


def find_note(key: str, args: dict, context: dict) -> dict | None:
    """Reconcile: the note exists when the effects file holds it."""
    path = Path(os.environ["CRASH_EFFECTS"])
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if json.loads(line)["note_id"] == key:
                return {"note_id": key, "written": True}
    return None


def slow_note(note_id: str, text: str) -> dict:
    """One effect per call, then a pause (so an eval has runs in flight when it is killed)."""
    with open(os.environ["CRASH_EFFECTS"], "a", encoding="utf-8") as f:
        f.write(json.dumps({"note_id": note_id, "pid": os.getpid(), "t": time.time()}) + "\n")
    time.sleep(float(os.environ.get("CRASH_PAUSE_S", "0.4")))
    return {"note_id": note_id, "written": True}
