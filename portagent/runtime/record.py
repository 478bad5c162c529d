"""Recording runs into cassette folders (the code path is the same for the emulator and ``--live``)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from portagent.adapters.port import Endpoint
from portagent.contracts.errors import RecordingError
from portagent.contracts.run import RunRequest


async def record_run(
    agent: Any,
    request: RunRequest,
    folder: Path,
    endpoint: Endpoint,
    *,
    approver: Any = "auto-deny",
    record_mode: str = "all",
    scope: str | None = None,
    ids: Any = None,
) -> Any:
    """Record one run into ``folder`` atomically: it is written to a temporary sibling folder and moved
    into place only when the run was recorded in full (a refused secret leaves nothing behind).
    ``ids``: pass ``replay.replay_ids(...)`` so ids that reach the model replay identically."""
    from portagent.runtime.runner import RunConfig, arun_full
    from portagent.tools.ledger import EffectLedger

    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        if record_mode in ("once", "new_episodes") and folder.exists():
            for f in folder.iterdir():
                if f.is_file():
                    shutil.copy2(f, tmp / f.name)
        ep = Endpoint(
            source=endpoint.source,
            mode="record",
            base_url=endpoint.base_url,
            api_key=endpoint.api_key,
            script_hash=endpoint.script_hash,
            cassette_dir=tmp,
            record_mode=record_mode,
        )
        if scope:
            EffectLedger().clear_scope(scope)  # a recording starts clean, like its replays will
        for stale in ("trace.jsonl", "run.json"):
            (tmp / stale).unlink(missing_ok=True)
        output = await arun_full(
            agent, request, RunConfig(endpoint=ep, approver=approver, out_dir=tmp, scope=scope, ids=ids)
        )
        if output.result.status == "failed" and output.result.stop_reason == "sdk_error":
            raise RecordingError(f"recording {folder} failed: {output.result.error}")
        if folder.exists():
            shutil.rmtree(folder)
        tmp.replace(folder)
        return output
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
