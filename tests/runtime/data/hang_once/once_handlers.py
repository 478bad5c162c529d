"""A handler that hangs the first time it is called and answers at once after: the file $HANG_ONCE marks
that it was called. A run stopped at its time limit, then made again (``eval --resume``), finishes."""

import os
import time
from pathlib import Path


def write_note(note_id: str, text: str) -> dict:
    marker = Path(os.environ["HANG_ONCE"])
    if not marker.exists():
        marker.touch()
        time.sleep(60)  # past the run's limit: the worker is stopped
    return {"note_id": note_id, "written": True}
