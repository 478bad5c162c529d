"""Recording a Claude run's transport cassette: every JSON line between the SDK and the CLI, in order.

The adapter's transport seam builds ``RecordingTransport(SubprocessCLITransport(prompt, cli_options))``;
after the run ``claude_session.ClaudeCassette.finish`` writes the lines (``claude_cassette`` format),
refusing the file if a secret is found in it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from claude_agent_sdk import Transport

from portagent.adapters.claude.cassette import CLI, SDK, Entry, TransportCassette


class RecordingTransport(Transport):
    """Wraps the CLI transport and keeps every JSON line, in the order it was written or read.

    A line the SDK writes is kept when the write is issued (so a CLI line caused by it is never kept
    before it) and dropped again if the write fails. After :meth:`on_abort` (portagent stopped the
    CLI) nothing more is kept: what the CLI prints while dying is not part of the conversation.
    """

    def __init__(self, inner: Transport, cassette: TransportCassette) -> None:
        self.inner = inner
        self.cassette = cassette
        self.connected = False
        self._aborted = False

    def _keep(self, entry: Entry) -> Entry | None:
        if self._aborted:
            return None
        self.cassette.entries.append(entry)
        return entry

    async def connect(self) -> None:
        await self.inner.connect()
        self.connected = True

    async def write(self, data: str) -> None:
        kept = [self._keep(Entry(SDK, json.loads(line))) for line in data.splitlines() if line.strip()]
        try:
            await self.inner.write(data)
        except BaseException:
            for entry in kept:
                if entry is not None:
                    with contextlib.suppress(ValueError):
                        self.cassette.entries.remove(entry)
            raise

    def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        return self._read()

    async def _read(self) -> AsyncIterator[dict[str, Any]]:
        try:
            async for message in self.inner.read_messages():
                self._keep(Entry(CLI, json.loads(json.dumps(message))))
                yield message
        except Exception as e:
            self._keep(
                Entry(
                    CLI,
                    event="error",
                    error={
                        "type": type(e).__name__,
                        "message": str(e.args[0]) if e.args else str(e),
                        "exit_code": getattr(e, "exit_code", None),
                        "stderr": getattr(e, "stderr", None),
                    },
                )
            )
            raise
        self._keep(Entry(CLI, event="eof"))

    def on_abort(self) -> None:
        if not self._aborted:
            self._keep(Entry(SDK, event="abort"))
            self._aborted = True

    async def close(self) -> None:
        await self.inner.close()

    def is_ready(self) -> bool:
        return self.inner.is_ready()

    async def end_input(self) -> None:
        self._keep(Entry(SDK, event="end_input"))
        await self.inner.end_input()
