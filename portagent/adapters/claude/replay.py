"""Replaying a Claude transport cassette without the Claude Code CLI.

:class:`ReplayTransport` stands where the CLI's subprocess transport would. It walks the recording in
order:

- a ``cli->sdk`` line is handed to the SDK once every ``sdk->cli`` line recorded *before* it has been
  written by the live SDK (so nothing reaches the SDK earlier than the CLI could have sent it). Control
  responses to the SDK's own requests (``initialize`` …) get the live ``request_id``: the SDK draws
  ``req_<n>_<hex>`` at random;
- a line the SDK writes is matched with its recording — an answer by the CLI request id it answers
  (replayed unchanged, so parallel answers may come in any order), a request or a user message by its
  rank — and compared after ``claude_cassette.normalize``. A difference, a line the recording does not
  have, or an expected line that does not come within the stall timeout is drift: the stream ends
  with :class:`~portagent.adapters.claude.cassette.TransportDrift`, which the runner reports as
  ``cassette_drift`` with a diff.

Because the CLI's control requests (``mcp_message`` ``tools/call``, ``can_use_tool``, ``hook_callback``)
are replayed and the SDK answers them live, portagent's in-process tools, its permission decisions and
hooks run again. Nothing is started, nothing touches the network.

After the recording's last line the transport behaves like a CLI waiting for its stdin to close.

*Played*, in the report, is deterministic: an SDK line is played when the SDK wrote it as recorded; a
CLI line when every SDK line recorded before it was (it was deliverable, whether or not the SDK read
it before the run stopped).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import logging
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from claude_agent_sdk import CLIConnectionError, ProcessError, Transport

from portagent.adapters.claude.cassette import (
    SDK,
    Entry,
    TransportCassette,
    TransportDrift,
    TransportReport,
    compared_options,
    describe,
    describe_message,
    normalize,
)

UNPLAYED_SHOWN = 20
"""Unplayed lines listed in the report (the rest are counted)."""


class _QuietDrift(logging.Filter):
    """Drift ends the CLI side by raising from ``read_messages`` (the only way to fail the SDK's pending
    control requests at once); the SDK then logs "Fatal error in message reader: …" on stderr. portagent
    reports the drift itself, with a diff: that one log line is dropped, nothing else."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Fatal error in message reader: the SDK sent ")


logging.getLogger("claude_agent_sdk._internal.query").addFilter(_QuietDrift())


class ReplayTransport(Transport):
    """Plays the CLI side of a recorded run; checks the SDK side against it."""

    def __init__(
        self, cassette: TransportCassette, options: dict[str, Any], *, stall_s: float = 30.0
    ) -> None:
        self.cassette = cassette
        self.entries: list[Entry] = cassette.entries
        self.options = options
        self.stall_s = stall_s
        self.drift: TransportDrift | None = None
        self._requests: dict[str, dict[str, Any]] = {}
        """Every recorded control request by its id (for labels)."""
        self._answers: dict[str, int] = {}
        """CLI request id → index of the SDK's recorded answer."""
        self._sdk_requests: deque[int] = deque()
        self._sdk_others: deque[int] = deque()
        self._sdk_lines: list[int] = []
        for i, e in enumerate(self.entries):
            if e.msg is None:
                continue
            if e.msg.get("type") == "control_request":
                self._requests[str(e.msg.get("request_id"))] = e.msg.get("request") or {}
            if e.dir != SDK:
                continue
            self._sdk_lines.append(i)
            kind = e.msg.get("type")
            if kind == "control_response":
                self._answers[str((e.msg.get("response") or {}).get("request_id"))] = i
            elif kind == "control_request":
                self._sdk_requests.append(i)
            else:
                self._sdk_others.append(i)
        self._received: set[int] = set()
        self._ok: set[int] = set()
        self._next_sdk = 0
        """Position in ``_sdk_lines`` of the first recorded SDK line not yet received."""
        self._ids: dict[str, str] = {}
        """Recorded SDK request id → the live one."""
        self._ready = False
        self._closed = False
        self._aborted = False
        self._wake = asyncio.Event()

    # --- Transport -----------------------------------------------------------------------------------

    async def connect(self) -> None:
        recorded = self.cassette.header.get("options") or {}
        if compared_options(recorded) != compared_options(self.options):
            self._set_drift(
                TransportDrift(
                    "CLI options",
                    f"they differ from the header of {self.cassette.path.name}",
                    sent=compared_options(self.options),
                    recorded=compared_options(recorded),
                    aspect="options",
                )
            )
            assert self.drift is not None
            raise self.drift
        self._ready = True

    async def write(self, data: str) -> None:
        for line in data.splitlines():
            if line.strip():
                self._on_sdk_line(json.loads(line))

    def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        return self._play()

    async def close(self) -> None:
        self._closed = True
        self._ready = False
        self._wake.set()

    def is_ready(self) -> bool:
        return self._ready

    async def end_input(self) -> None:
        return None

    def on_abort(self) -> None:
        """portagent stopped the run: nothing more is played or compared."""
        self._aborted = True
        self._wake.set()

    # --- the CLI side --------------------------------------------------------------------------------

    async def _play(self) -> AsyncIterator[dict[str, Any]]:
        for i, entry in enumerate(self.entries):
            if entry.dir == SDK:
                if entry.event == "abort":  # the recording's CLI was stopped here
                    break
                continue
            if not await self._wait_sdk_before(i):
                return
            if entry.event == "eof":
                return
            if entry.event == "error":
                raise _rebuild(entry.error or {})
            assert entry.msg is not None
            yield self._live(entry.msg)
        # Like a CLI that has said everything: wait for stdin to close (or for drift).
        while not (self._closed or self._aborted):
            if self.drift is not None:
                raise self.drift
            self._wake.clear()
            await self._wake.wait()

    def _live(self, msg: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(msg)
        if out.get("type") == "control_response":
            response = out.get("response") or {}
            rid = response.get("request_id")
            if rid in self._ids:
                response["request_id"] = self._ids[rid]
        return out

    def _deliverable(self, i: int) -> bool:
        while self._next_sdk < len(self._sdk_lines) and self._sdk_lines[self._next_sdk] in self._received:
            self._next_sdk += 1
        return self._next_sdk == len(self._sdk_lines) or self._sdk_lines[self._next_sdk] > i

    async def _wait_sdk_before(self, i: int) -> bool:
        """Wait until the SDK wrote every line recorded before line ``i``. False: stop playing."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.stall_s
        while True:
            if self.drift is not None:
                raise self.drift
            if self._closed or self._aborted:
                return False
            if self._deliverable(i):
                return True
            remaining = deadline - loop.time()
            if remaining <= 0:
                waited = self.entries[self._sdk_lines[self._next_sdk]]
                self._set_drift(
                    TransportDrift(
                        f"nothing within {self.stall_s:g} s",
                        f"{self._where(self._sdk_lines[self._next_sdk])} has "
                        f"{describe_message(waited.msg or {}, self._requests)} before the CLI's next line",
                        sent=None,
                        recorded=normalize(waited.msg),
                    )
                )
                assert self.drift is not None
                raise self.drift
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await self._wake.wait()

    # --- the SDK side --------------------------------------------------------------------------------

    def _on_sdk_line(self, msg: dict[str, Any]) -> None:
        if self._aborted or self._closed or self.drift is not None:
            return
        kind = msg.get("type")
        index: int | None
        if kind == "control_response":
            index = self._answers.pop(str((msg.get("response") or {}).get("request_id")), None)
        elif kind == "control_request":
            index = self._sdk_requests.popleft() if self._sdk_requests else None
        else:
            index = self._sdk_others.popleft() if self._sdk_others else None
        label = describe_message(msg, self._requests)
        if index is None:
            self._set_drift(
                TransportDrift(
                    label, f"{self.cassette.path.name} has no such line", sent=normalize(msg), recorded=None
                )
            )
            return
        recorded = self.entries[index].msg or {}
        if kind == "control_request":
            self._ids[str(recorded.get("request_id"))] = str(msg.get("request_id"))
        self._received.add(index)
        want, got = normalize(recorded), normalize(msg)
        if want == got:
            self._ok.add(index)
        else:
            self._set_drift(
                TransportDrift(
                    f"{label} ({self._where(index)})", "differs from the recording", sent=got, recorded=want
                )
            )
        self._wake.set()

    def _set_drift(self, drift: TransportDrift) -> None:
        if self.drift is None:
            self.drift = drift
        self._wake.set()

    def _where(self, index: int) -> str:
        return f"{self.cassette.path.name} line {index + 2}"  # line 1 is the header

    # --- the report ----------------------------------------------------------------------------------

    def fill(self, report: TransportReport) -> None:
        """Played / unplayed lines (see the module docstring) and drift, after the run."""
        frontier = next((i for i in self._sdk_lines if i not in self._ok), len(self.entries))
        played = {
            i
            for i, e in enumerate(self.entries)
            if e.msg is not None and (i in self._ok if e.dir == SDK else i < frontier)
        }
        unplayed = [i for i, e in enumerate(self.entries) if e.msg is not None and i not in played]
        report.total = sum(1 for e in self.entries if e.msg is not None)
        report.played = len(played)
        labels = [f"{describe(self.entries[i], self._requests)} ({self._where(i)})" for i in unplayed]
        if len(labels) > UNPLAYED_SHOWN:
            labels = [*labels[:UNPLAYED_SHOWN], f"… and {len(labels) - UNPLAYED_SHOWN} more"]
        report.unplayed = labels
        if self.drift is not None and report.drift is None:
            report.drift = str(self.drift)


def _rebuild(error: dict[str, Any]) -> Exception:
    """The exception reading the CLI raised at this point of the recording."""
    message = str(error.get("message") or "the Claude Code CLI failed")
    if error.get("type") in ("ProcessError", "ResultError"):
        failure = ProcessError(message)  # the recorded message already names the exit code and stderr
        failure.exit_code = error.get("exit_code")
        failure.stderr = error.get("stderr")
        return failure
    return CLIConnectionError(message)
