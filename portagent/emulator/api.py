"""Starting the emulator from Python: :func:`serve` (a context manager) and :func:`run_forever`.

``mode="thread"`` runs the server in a daemon thread of this process (fast, in-memory log);
``mode="subprocess"`` runs ``python -m portagent.emulator`` (no GIL sharing with the code under
test; the log is read back from its JSONL file).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import selectors
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from portagent.contracts.emulator_script import EmulatorScript, load_script
from portagent.contracts.errors import EmulatorError
from portagent.emulator.engine import Engine
from portagent.emulator.requestlog import RequestLog, read_jsonl
from portagent.emulator.server import EmulatorHTTPServer

ScriptSource = EmulatorScript | Mapping[str, Any] | str | os.PathLike[str]


class RunningEmulator:
    """A running emulator: its URLs and its request log."""

    def __init__(
        self,
        host: str,
        port: int,
        requests: Callable[[], list[dict[str, Any]]],
        reset: Callable[[], None],
        log_path: Path | None,
    ) -> None:
        self.host = host
        """The interface it listens on."""
        self.port = port
        """The port it listens on (the chosen one when started with port 0)."""
        self.log_path = log_path
        """The JSONL request log, when there is one."""
        self._requests = requests
        self._reset = reset

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """For ``OpenAI(base_url=…)`` / ``OPENAI_BASE_URL`` (ends in ``/v1``)."""
        return self.base_url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """For ``Anthropic(base_url=…)`` / ``ANTHROPIC_BASE_URL``."""
        return self.base_url

    @property
    def gemini_base_url(self) -> str:
        """For ``HttpOptions(base_url=…)``, ADK ``Gemini(base_url=…)`` / ``GOOGLE_GEMINI_BASE_URL``."""
        return self.base_url

    def env(self) -> dict[str, str]:
        """Environment variables pointing each vendor SDK at this emulator."""
        return {
            "OPENAI_BASE_URL": self.openai_base_url,
            "ANTHROPIC_BASE_URL": self.anthropic_base_url,
            "GOOGLE_GEMINI_BASE_URL": self.gemini_base_url,
        }

    def requests(self) -> list[dict[str, Any]]:
        """The request log: one dict per request (method, path, query, headers masked, body, …)."""
        return self._requests()

    def reset(self) -> None:
        """Forget fault counters (``times``) and remembered response ids."""
        self._reset()


def _as_script(script: ScriptSource) -> EmulatorScript:
    if isinstance(script, EmulatorScript):
        return script
    if isinstance(script, Mapping):
        return EmulatorScript.model_validate(dict(script))
    return load_script(script)


def bind(
    script: EmulatorScript,
    host: str,
    port: int,
    log: RequestLog,
    verbose: bool = False,
    engine: type[Engine] = Engine,
) -> EmulatorHTTPServer:
    """Create the server socket, turning bind failures into :class:`EmulatorError`."""
    try:
        return EmulatorHTTPServer((host, port), engine(script), log, verbose=verbose)
    except OSError as e:
        log.close()
        if e.errno == errno.EADDRINUSE:
            raise EmulatorError(
                f"port {port} on {host} is already in use; pick another with --port, "
                f"or --port 0 for a free one"
            ) from e
        raise EmulatorError(f"cannot listen on {host}:{port}: {e.strerror or e}") from e


@contextlib.contextmanager
def serve(
    script: ScriptSource,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    mode: Literal["thread", "subprocess"] = "thread",
    log_path: str | os.PathLike[str] | None = None,
    verbose: bool = False,
    engine: type[Engine] = Engine,
) -> Iterator[RunningEmulator]:
    """Run the emulator for the duration of a ``with`` block (``port=0``: a free port). ``engine``: an
    ``Engine`` subclass that shapes answers the script cannot (tests inject faults with one; thread mode)."""
    if mode == "subprocess":
        if engine is not Engine:
            raise ValueError("a custom engine runs in thread mode only")
        with _serve_subprocess(script, host, port, log_path) as handle:
            yield handle
        return
    log = RequestLog(log_path)
    httpd = bind(_as_script(script), host, port, log, verbose, engine)
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="portagent-emulator", daemon=True
    )
    thread.start()
    try:
        yield RunningEmulator(host, httpd.server_address[1], httpd.log.entries, httpd.engine.reset, log.path)
    finally:
        _stop(httpd, thread)
        log.close()


def _stop(httpd: Any, thread: threading.Thread) -> None:
    """Stop the serving thread, waiting a bounded time: ``shutdown()`` waits for ``serve_forever`` to
    notice, forever — and a thread frozen by the interpreter's exit (an emulator closed only at exit, after
    Ctrl-C) never does."""
    if thread.is_alive():
        stopper = threading.Thread(target=httpd.shutdown, name="portagent-emulator-stop", daemon=True)
        stopper.start()
        stopper.join(timeout=5)
    httpd.server_close()
    thread.join(timeout=5)


def run_forever(
    script: EmulatorScript,
    *,
    host: str,
    port: int,
    log_path: str | os.PathLike[str] | None,
    on_ready: Callable[[RunningEmulator], None],
    verbose: bool = False,
) -> None:
    """Serve in the foreground until interrupted (used by ``portagent emulate``).

    Only the last 1000 requests stay in memory (``GET /_emulator/requests``); ``log_path`` keeps all.
    """
    log = RequestLog(log_path, keep=1000)
    httpd = bind(script, host, port, log, verbose)
    try:
        on_ready(RunningEmulator(host, httpd.server_address[1], log.entries, httpd.engine.reset, log.path))
        httpd.serve_forever(poll_interval=0.2)
    finally:
        httpd.server_close()
        log.close()


@contextlib.contextmanager
def _serve_subprocess(
    script: ScriptSource, host: str, port: int, log_path: str | os.PathLike[str] | None
) -> Iterator[RunningEmulator]:
    with tempfile.TemporaryDirectory(prefix="portagent-emulator-") as tmp:
        if isinstance(script, EmulatorScript | Mapping):
            script_path = Path(tmp) / "script.json"
            data = (
                script.model_dump(mode="json", exclude_unset=True)
                if isinstance(script, EmulatorScript)
                else dict(script)
            )
            script_path.write_text(json.dumps(data), encoding="utf-8")
        else:
            script_path = Path(script)
        log = Path(log_path) if log_path is not None else Path(tmp) / "requests.jsonl"
        cmd = [
            sys.executable,
            "-m",
            "portagent.emulator",
            "--script",
            str(script_path),
            "--host",
            host,
            "--port",
            str(port),
            "--log",
            str(log),
        ]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        try:
            ready = _read_ready(proc, timeout=30.0)
            base = f"http://{host}:{ready['port']}"

            def reset() -> None:
                req = urllib.request.Request(base + "/_emulator/reset", data=b"{}", method="POST")
                with urllib.request.urlopen(req, timeout=10):
                    pass

            yield RunningEmulator(host, int(ready["port"]), lambda: read_jsonl(log), reset, log)
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()


def _read_ready(proc: subprocess.Popen[bytes], timeout: float) -> dict[str, Any]:
    assert proc.stdout is not None and proc.stderr is not None
    deadline = time.monotonic() + timeout
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    buf = b""
    try:
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise EmulatorError(f"the emulator subprocess did not start within {timeout:.0f} s")
            if not sel.select(timeout=min(left, 0.5)):
                if proc.poll() is not None:
                    break
                continue
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                break
            buf += chunk
    finally:
        sel.close()
    line = buf.split(b"\n", 1)[0]
    if not line:
        proc.wait(timeout=5)
        err = proc.stderr.read().decode("utf-8", "replace").strip()
        raise EmulatorError(
            err.removeprefix("portagent: ") or f"the emulator subprocess exited with {proc.returncode}"
        )
    return json.loads(line)  # type: ignore[no-any-return]
