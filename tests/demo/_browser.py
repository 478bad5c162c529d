"""Open a local HTML file in headless Chromium over the DevTools protocol and report what happened.

Why not ``--dump-dom``: it cannot tell a page that threw from one that did not. Here the page's
console errors, uncaught exceptions, log errors and every network request are collected, and a JS
expression is evaluated once the page has loaded.

Outside CI a missing browser (or the ``websockets`` client) skips the test with the reason; under
``CI=true`` it fails (``.ci/run`` installs Debian's ``chromium``).
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _support import IN_CI

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "/usr/bin/chromium")


def _skip_or_fail(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"{reason} (CI=true turns this skip into a failure)")
    pytest.skip(reason)


def require_chromium() -> str:
    for name in CANDIDATES:
        found = shutil.which(name) or (name if Path(name).is_file() else None)
        if found:
            try:
                import websockets.sync.client  # noqa: F401
            except ImportError:
                _skip_or_fail("the 'websockets' package is needed to talk to Chromium's DevTools")
            return found
    _skip_or_fail("headless Chromium not installed (apt-get install chromium)")
    raise AssertionError("unreachable")


@dataclass
class PageReport:
    console_errors: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    value: Any = None


def open_page(browser: str, page: Path, expression: str, timeout_s: float = 30.0) -> PageReport:
    from websockets.sync.client import connect

    profile = tempfile.mkdtemp(prefix="portagent-chromium-")
    proc = subprocess.Popen(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--disable-extensions",
            f"--user-data-dir={profile}",
            "--remote-debugging-port=0",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        port = _devtools_port(proc, timeout_s)
        targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10).read())
        ws_url = next(t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page")
        report = PageReport()
        with connect(ws_url, max_size=None, open_timeout=timeout_s) as ws:
            ids = iter(range(1, 10_000))

            def send(method: str, **params: Any) -> int:
                i = next(ids)
                ws.send(json.dumps({"id": i, "method": method, "params": params}))
                return i

            def pump(until: Any, deadline: float) -> Any:
                while time.monotonic() < deadline:
                    msg = json.loads(ws.recv(timeout=max(0.1, deadline - time.monotonic())))
                    _collect(msg, report)
                    if until(msg):
                        return msg
                raise TimeoutError("Chromium did not answer in time")

            deadline = time.monotonic() + timeout_s
            for method in ("Runtime.enable", "Log.enable", "Page.enable", "Network.enable"):
                i = send(method)
                pump(lambda m, i=i: m.get("id") == i, deadline)
            send("Page.navigate", url=page.resolve().as_uri())
            pump(lambda m: m.get("method") == "Page.loadEventFired", deadline)
            i = send("Runtime.evaluate", expression=expression, returnByValue=True)
            answer = pump(lambda m: m.get("id") == i, deadline)
            result = answer.get("result", {})
            if "exceptionDetails" in result:
                report.exceptions.append(json.dumps(result["exceptionDetails"])[:500])
            report.value = result.get("result", {}).get("value")
            # late errors (timers, listeners) still count: give the page a moment
            with contextlib.suppress(TimeoutError):
                pump(lambda m: False, time.monotonic() + 0.5)
        return report
    finally:
        proc.kill()
        proc.wait(timeout=10)
        shutil.rmtree(profile, ignore_errors=True)


def _devtools_port(proc: subprocess.Popen[str], timeout_s: float) -> int:
    assert proc.stderr is not None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            raise RuntimeError(f"Chromium exited with {proc.returncode}")
        m = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
        if m:
            return int(m.group(1))
    raise TimeoutError("Chromium did not print its DevTools port")


def _collect(msg: dict[str, Any], report: PageReport) -> None:
    method = msg.get("method")
    params = msg.get("params", {})
    if method == "Runtime.exceptionThrown":
        report.exceptions.append(json.dumps(params.get("exceptionDetails", {}))[:500])
    elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
        report.console_errors.append(
            " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
        )
    elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
        report.console_errors.append(params["entry"].get("text", ""))
    elif method == "Network.requestWillBeSent":
        report.requests.append(params.get("request", {}).get("url", ""))
