"""``mcp serve`` over stdio: the client's lines read without a blocking thread, so SIGTERM ends a session.

The MCP SDK's ``stdio_server`` reads stdin with ``readline`` in a worker thread. A thread blocked in a read
cannot be cancelled: SIGTERM cancelled the serving task, and the task then waited for the thread, which
waited for a line the idle client never sent — the server ignored SIGTERM until the client wrote or closed
stdin, and the client's own SIGTERM-then-wait (what MCP clients do when closing stdin is not enough) ran
into its kill timeout, leaving a trace without ``run.completed``.

``claimed_stdin`` does what ``stdio_server`` does with fd 0 when it reads it itself (the wire moves to a
private descriptor and fd 0 points at the null device, so a handler reading stdin gets EOF instead of the
client's messages; restored on exit) and gives ``stdio_server`` an iterator of lines that waits on the
event loop (``add_reader``): cancelling the task stops the wait at once. A stdin the event loop cannot
watch (a regular file) is read in a thread: a file always ends, so no wait is left hanging.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Iterator

CHUNK = 65536


class LoopLines:
    """The lines of ``fd`` (UTF-8, invalid bytes replaced as ``stdio_server`` does), each with its newline;
    ``async for`` over it is what ``stdio_server`` does with the stdin it is given."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = b""
        self._eof = False

    def __aiter__(self) -> AsyncIterator[str]:
        return self

    async def __anext__(self) -> str:
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line, self._buffer = self._buffer[: end + 1], self._buffer[end + 1 :]
                return line.decode("utf-8", errors="replace")
            if self._eof:
                if not self._buffer:
                    raise StopAsyncIteration
                line, self._buffer = self._buffer, b""
                return line.decode("utf-8", errors="replace")
            chunk = await self._read()
            self._eof = not chunk
            self._buffer += chunk

    async def _read(self) -> bytes:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        try:
            loop.add_reader(self.fd, wake)
        except (PermissionError, ValueError, OSError):  # not pollable (a regular file): it ends by itself
            return await asyncio.to_thread(os.read, self.fd, CHUNK)
        try:
            await ready  # cancelled here, at once, when the session is stopped
        finally:
            loop.remove_reader(self.fd)
        return os.read(self.fd, CHUNK)  # readable: returns what is there without blocking


@contextlib.contextmanager
def claimed_stdin() -> Iterator[LoopLines | None]:
    """The client's lines, from a private copy of fd 0, with fd 0 on the null device until the end. None
    where fd 0 cannot be claimed so (no ``fcntl``: Windows; fd 0 closed): ``stdio_server`` then reads it
    its own way."""
    try:
        import fcntl

        private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except (ImportError, OSError):
        yield None
        return
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    try:
        yield LoopLines(private)
    finally:
        with contextlib.suppress(OSError):
            os.dup2(private, 0)
        os.close(private)
