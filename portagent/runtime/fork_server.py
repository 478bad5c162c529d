"""The fork server eval workers start from: started warm, ended early, given a socket folder that fits.

Workers are forked from one ``multiprocessing`` fork server per process (``eval_pool``, ``eval_scheduled``,
``record``'s verification, the demo). It preloads ``runtime.warm`` (and, when one provider's workers share
it, that provider's SDK), so each worker forks with the run path already imported.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from typing import Any

WARM_SDKS_ENV = "PORTAGENT_WARM_SDKS"
"""Adapter modules, and the modules their SDK imports on a first run (``AdapterInfo.warm_modules``),
comma-separated, that the fork server also imports (``runtime.warm``)."""


def warm_workers(providers: Sequence[str]) -> bool:
    """Start the workers' fork server now, preloading ``runtime.warm``: it imports the run path (and, when
    one provider's workers will share it, that provider's adapter and SDK) while the eval plans, so each
    worker forks ready. A fork server already running (an earlier eval in this process) is kept. True when
    this call started it (``stop_warm_workers`` may end it then)."""
    import multiprocessing as mp
    from multiprocessing import forkserver

    _short_socket_folder()
    mp.get_context("forkserver").set_forkserver_preload(["portagent.runtime.warm"])
    chosen = list(dict.fromkeys(providers))
    sdk = ""
    if len(chosen) == 1:  # the registry (its capability contracts) loads only when one SDK is preloaded
        from portagent.adapters.base import REGISTRY

        info = REGISTRY.get(chosen[0])
        sdk = ",".join((info.module, *info.warm_modules)) if info is not None else ""
    server = forkserver._forkserver
    before_pid = getattr(server, "_forkserver_pid", None)
    before = os.environ.get(WARM_SDKS_ENV)
    os.environ[WARM_SDKS_ENV] = sdk
    try:
        forkserver.ensure_running()
    finally:
        if before is None:
            os.environ.pop(WARM_SDKS_ENV, None)
        else:
            os.environ[WARM_SDKS_ENV] = before
    pid = getattr(server, "_forkserver_pid", None)
    return pid is not None and pid != before_pid


_SOCKET_PATH_MAX = 107
"""Bytes of a Unix socket's path (``sun_path`` is 108 with its NUL)."""
_SOCKET_NAME_LEN = len("/pymp-12345678/listener-12345678")
"""What multiprocessing adds to its temp folder's parent for the fork server's socket."""


def _short_socket_folder() -> None:
    """Give multiprocessing a temp folder short enough for the fork server's socket.

    On Python 3.11 the fork server listens on a Unix socket in multiprocessing's temp folder, made under
    ``TMPDIR``; with a deep ``TMPDIR`` (a CI runner's work folder, a macOS user folder, a test's tmp folder)
    the path passes the socket limit and every eval failed with "AF_UNIX path too long". Python 3.12 falls
    back to a short system folder in that case; this does the same before the folder is first made."""
    import tempfile
    from multiprocessing import process, util

    config: dict[str, Any] = getattr(process.current_process(), "_config")  # noqa: B009 -- util.get_temp_dir keeps its choice there
    if config.get("tempdir") is not None:
        return
    if len(os.fsencode(tempfile.gettempdir())) + _SOCKET_NAME_LEN <= _SOCKET_PATH_MAX:
        return
    for base in ("/tmp", "/var/tmp", "/usr/tmp"):
        if os.path.isdir(base) and os.access(base, os.W_OK | os.X_OK):
            import shutil

            folder = tempfile.mkdtemp(prefix="pymp-", dir=base)
            util.Finalize(None, shutil.rmtree, args=(folder, True), exitpriority=-100)
            config["tempdir"] = folder
            return


def stop_warm_workers() -> None:
    """End the fork server ``warm_workers`` started, at once, for a command refused after it started the
    warm-up early: the server holds the command's output pipes until its preload is done (a caller reading
    the refusal through a pipe waited for the imports), and it would go on importing for nothing."""
    import signal
    from multiprocessing import forkserver

    server = forkserver._forkserver
    pid = getattr(server, "_forkserver_pid", None)
    if pid is None:
        return
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)  # mid-import it reads no "alive" pipe: closing that would not stop it
    # reaps it, closes the "alive" pipe, removes its socket: a later pool starts a new one
    stop = getattr(server, "_stop", None)
    if stop is not None:
        with contextlib.suppress(Exception):
            stop()
