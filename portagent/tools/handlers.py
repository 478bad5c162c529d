"""Resolving and calling ``module:function`` strings (handlers, preconditions, reconcile functions).

Resolution is lazy (at the first call, never at validation time) and cached per string. Calling
convention of a tool handler (ADR 0004):

- it declares a parameter named ``context`` → ``handler(args, context)`` (the arguments dict and the
  run context dict);
- otherwise → ``handler(**args)``.

Sync functions run in a daemon worker thread so ``timeout_ms`` can be enforced without blocking the
event loop; a timed-out sync handler cannot be killed (Python threads cannot be), it is abandoned and
its late result ignored. Async functions are awaited under ``asyncio.wait_for``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import importlib
import inspect
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class HandlerImportError(Exception):
    """A ``module:function`` string could not be resolved; the message names the module."""


@dataclass(frozen=True)
class Resolved:
    fn: Callable[..., Any]
    is_async: bool
    takes_context: bool


_CACHE: dict[str, Resolved] = {}
_CACHE_LOCK = threading.Lock()


def resolve(ref: str) -> Resolved:
    """Import ``module:function`` once. Failures are not cached (the module may appear later)."""
    hit = _CACHE.get(ref)
    if hit is not None:
        return hit
    module_name, _, attr = ref.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as e:
        raise HandlerImportError(f"cannot import module {module_name!r} for {ref!r}: {e}") from e
    except Exception as e:  # a module that raises while importing
        raise HandlerImportError(
            f"importing module {module_name!r} for {ref!r} failed: {type(e).__name__}: {e}"
        ) from e
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as e:
            raise HandlerImportError(f"module {module_name!r} has no attribute {attr!r} ({ref!r})") from e
    if not callable(obj):
        raise HandlerImportError(f"{ref!r} is not callable")
    takes_context = False
    with contextlib.suppress(TypeError, ValueError):  # builtins without a signature
        takes_context = "context" in inspect.signature(obj).parameters
    call_method = obj.__call__ if not inspect.isroutine(obj) else None  # callable instances
    resolved = Resolved(
        fn=obj,
        is_async=inspect.iscoroutinefunction(obj) or inspect.iscoroutinefunction(call_method),
        takes_context=takes_context,
    )
    with _CACHE_LOCK:
        _CACHE[ref] = resolved
    return resolved


class _DaemonPool:
    """Daemon worker threads for sync functions: a hung handler never blocks interpreter exit
    (``asyncio.run`` would wait for the default executor's threads)."""

    def __init__(self) -> None:
        self._q: queue.SimpleQueue[tuple[Callable[[], Any], concurrent.futures.Future[Any]]] = (
            queue.SimpleQueue()
        )
        self._lock = threading.Lock()
        self._idle = 0

    def submit(self, fn: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        fut: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._lock:
            self._q.put((fn, fut))
            if self._idle > 0:
                self._idle -= 1
            else:
                threading.Thread(target=self._work, name="portagent-tool", daemon=True).start()
        return fut

    def _work(self) -> None:
        while True:
            fn, fut = self._q.get()
            if fut.set_running_or_notify_cancel():
                try:
                    fut.set_result(fn())
                except BaseException as e:
                    fut.set_exception(e)
            with self._lock:
                self._idle += 1


_POOL = _DaemonPool()


async def call_function(
    resolved: Resolved, args: tuple[Any, ...], kwargs: dict[str, Any], timeout_s: float | None
) -> Any:
    """Call a resolved function (sync in a worker thread, async awaited) under an optional timeout.

    Raises ``asyncio.TimeoutError`` on timeout; anything the function raises propagates.
    """
    if resolved.is_async:
        coro = resolved.fn(*args, **kwargs)
        return await (asyncio.wait_for(coro, timeout_s) if timeout_s else coro)
    fut = _POOL.submit(lambda: resolved.fn(*args, **kwargs))
    wrapped = asyncio.wrap_future(fut)
    try:
        result = await (asyncio.wait_for(wrapped, timeout_s) if timeout_s else wrapped)
    except TimeoutError:
        fut.cancel()
        raise
    if inspect.isawaitable(result):  # a sync function that returned a coroutine
        result = await (asyncio.wait_for(result, timeout_s) if timeout_s else result)
    return result


async def call_handler(
    resolved: Resolved, args: dict[str, Any], context: dict[str, Any], timeout_s: float | None
) -> Any:
    """A tool handler, with the calling convention above."""
    if resolved.takes_context:
        return await call_function(resolved, (args, context), {}, timeout_s)
    return await call_function(resolved, (), dict(args), timeout_s)
