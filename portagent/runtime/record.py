"""Recording runs into cassette folders (the code path is the same for the emulator and ``--live``).

A recording is made in a hidden *staging* folder next to its final place, ``.<name>.stage-<pid>-<start>.
<random>``, and moved into place only when it is complete — ``run.json``, ``trace.jsonl`` and the vendor
cassette (``cassette.yaml``, or ``transport.jsonl`` for Claude) all present — and, when the caller
verifies (``portagent record`` replays every new recording), only when its replay is clean. A process
killed half-way leaves at most a staging folder; the next recording into the same parent removes the
staging folders whose process is gone (pid *and* start identity, so a reused pid does not keep one).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from portagent.adapters.port import Endpoint
from portagent.contracts.errors import RecordingError
from portagent.contracts.run import RunRequest
from portagent.core.files import staging_dir

_LEGACY = re.compile(r"^\.r\d+\.[a-z0-9_]{8}$")  # ``.r0.<mkdtemp suffix>`` of versions before staging tags
_STAGING = re.compile(r"^\.(?P<name>.+?)\.(?:stage|old)-(?P<pid>\d+)-(?P<start>.*)\.[a-z0-9_]+$")


def _tag() -> str:
    from portagent.tools.ledger import start_identity

    return f"{os.getpid()}-{start_identity(os.getpid()) or ''}"


def clean_staging(parent: Path, *, own: bool = False) -> list[Path]:
    """Remove the staging folders in ``parent`` left by recordings whose process is gone (and hidden
    ``.<name>.<random>`` folders of older versions, which were always abandoned). ``own``: this process's
    too — it is done recording (an interrupt can land between a staging folder's creation and whatever
    would have placed or discarded it). Returns what it removed."""
    from portagent.tools.ledger import pid_alive, start_identity

    removed: list[Path] = []
    if not parent.is_dir():
        return removed
    mine = _tag()
    for d in parent.iterdir():
        if not d.name.startswith(".") or not d.is_dir():
            continue
        m = _STAGING.match(d.name)
        if m is not None:
            pid, start = int(m["pid"]), m["start"]
            done_with = own and f"{pid}-{start}" == mine  # this process's, and it is done recording
            if not done_with and pid_alive(pid) and (not start or start_identity(pid) in (None, start)):
                continue  # a live recording's staging folder
        elif not _LEGACY.match(d.name):
            continue  # not a staging folder of ours
        shutil.rmtree(d, ignore_errors=True)
        removed.append(d)
    return removed


def missing_files(folder: Path, provider: str) -> list[str]:
    """What a complete recording holds and ``folder`` lacks."""
    from portagent.recording.layout import vendor_cassette

    need = ["run.json", "trace.jsonl", vendor_cassette(folder, provider).name]
    return [f for f in need if not (folder / f).is_file()]


def place(staging: Path, folder: Path, provider: str) -> None:
    """Move a complete staging folder into place. An earlier recording there is moved aside first and
    removed after, so the final path never holds a half-written folder."""
    lacking = missing_files(staging, provider)
    if lacking:
        shutil.rmtree(staging, ignore_errors=True)
        raise RecordingError(
            f"recording {folder} is incomplete ({', '.join(lacking)} missing); nothing was moved into place"
        )
    old: Path | None = None
    if folder.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{folder.name}.old-{_tag()}.", dir=folder.parent))
        old.rmdir()
        folder.replace(old)
    staging.replace(folder)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def discard(staging: Path) -> None:
    shutil.rmtree(staging, ignore_errors=True)


def prune_empty(folder: Path, levels: int = 5) -> None:
    """Remove ``folder`` and up to ``levels`` of its parents while they are empty: the layout folders a
    recording made before it was interrupted or failed (``<suite>/<agent>@<v>/<case>/<provider>/r<n>``)."""
    for d in (folder, *list(folder.parents)[: levels - 1]):
        try:
            d.rmdir()  # only an empty folder goes
        except FileNotFoundError:
            continue  # never made (or made and removed): its parent may still be empty
        except OSError:
            return


async def stage_run(
    agent: Any,
    request: RunRequest,
    folder: Path,
    endpoint: Endpoint,
    *,
    approver: Any = "auto-deny",
    record_mode: str = "all",
    scope: str | None = None,
    ids: Any = None,
    extra: dict[str, Any] | None = None,
) -> tuple[Any, Path]:
    """Record one run into a fresh staging folder next to ``folder`` (nothing at ``folder`` changes).
    Returns the RunOutput and the staging folder; the caller ``place``s or ``discard``s it. ``extra``: the
    run's ``RunOptions.extra`` (``eval_plan.options_extra``)."""
    from portagent.adapters.port import RunOptions
    from portagent.runtime.runner import RunConfig, arun_full
    from portagent.tools.ledger import EffectLedger

    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    clean_staging(folder.parent)
    tmp = staging_dir(folder.parent, f".{folder.name}.stage-{_tag()}.")
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
            ledger = EffectLedger()
            try:
                ledger.clear_scope(scope)  # a recording starts clean, like its replays will
            finally:
                ledger.close()
        for stale in ("trace.jsonl", "run.json"):
            (tmp / stale).unlink(missing_ok=True)
        output = await arun_full(
            agent,
            request,
            RunConfig(
                endpoint=ep,
                approver=approver,
                out_dir=tmp,
                scope=scope,
                ids=ids,
                options=RunOptions(extra=dict(extra or {})),
            ),
        )
        if output.result.status == "failed" and output.result.stop_reason == "sdk_error":
            raise RecordingError(f"recording {folder} failed: {output.result.error}")
        return output, tmp
    except BaseException:
        with contextlib.suppress(OSError):
            shutil.rmtree(tmp, ignore_errors=True)
        raise


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
    """Record one run into ``folder`` atomically: it is written to a staging sibling folder and moved
    into place only when the run was recorded in full (a refused secret leaves nothing behind).
    ``ids``: pass ``replay.replay_ids(...)`` so ids that reach the model replay identically."""
    folder = Path(folder)
    output, tmp = await stage_run(
        agent,
        request,
        folder,
        endpoint,
        approver=approver,
        record_mode=record_mode,
        scope=scope,
        ids=ids,
    )
    place(tmp, folder, request.provider)
    return output
