"""Resolving and calling ``module:function`` strings (handlers, preconditions, reconcile functions).

Resolution is lazy (at the first call, never at validation time) and cached per string. Calling
convention of a tool handler (ADR 0004):

- it declares a parameter named ``context`` → ``handler(args, context)`` (the arguments dict and the
  run context dict);
- it declares a parameter annotated ``ToolContext`` (any name; ``tools/tool_context.py``) →
  ``handler(**args, <that name>=tool_context)`` — this wins over the ``context`` rule;
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

from portagent.tools.tool_context import ToolContext, tool_context_param


class HandlerImportError(Exception):
    """A ``module:function`` string could not be resolved; the message names the module."""


class HandlerExit(Exception):
    """A handler (or a function it called) ran ``sys.exit(n)``: the call fails with ``handler_error``
    instead of ending portagent silently with exit ``n``."""

    def __init__(self, code: object) -> None:
        super().__init__(f"called sys.exit({code!r})")
        self.code = code


async def _no_exit(coro: Any) -> Any:
    """Await a handler's coroutine with ``SystemExit`` turned into ``HandlerExit`` inside it — raised out
    of an asyncio task, ``SystemExit`` would stop the event loop."""
    try:
        return await coro
    except SystemExit as e:
        raise HandlerExit(e.code) from None


@dataclass(frozen=True)
class Resolved:
    fn: Callable[..., Any]
    is_async: bool
    takes_context: bool
    tool_context_param: str | None = None
    """The parameter annotated ``ToolContext``, when the function declares one."""


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
    except SystemExit as e:  # a module that exits while importing
        raise HandlerImportError(
            f"importing module {module_name!r} for {ref!r} failed: it called sys.exit({e.code!r})"
        ) from None
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
    tc_param = tool_context_param(obj)
    call_method = obj.__call__ if not inspect.isroutine(obj) else None  # callable instances
    resolved = Resolved(
        fn=obj,
        is_async=inspect.iscoroutinefunction(obj) or inspect.iscoroutinefunction(call_method),
        takes_context=takes_context and tc_param != "context",
        tool_context_param=tc_param,
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
                except SystemExit as e:
                    fut.set_exception(HandlerExit(e.code))
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
        try:
            coro = _no_exit(resolved.fn(*args, **kwargs))
        except SystemExit as e:  # a callable object whose __call__ exits before returning a coroutine
            raise HandlerExit(e.code) from None
        return await (asyncio.wait_for(coro, timeout_s) if timeout_s else coro)
    fut = _POOL.submit(lambda: resolved.fn(*args, **kwargs))
    wrapped = asyncio.wrap_future(fut)
    try:
        result = await (asyncio.wait_for(wrapped, timeout_s) if timeout_s else wrapped)
    except TimeoutError:
        fut.cancel()
        raise
    if inspect.isawaitable(result):  # a sync function that returned a coroutine
        guarded = _no_exit(result)
        result = await (asyncio.wait_for(guarded, timeout_s) if timeout_s else guarded)
    return result


async def call_handler(
    resolved: Resolved,
    args: dict[str, Any],
    context: dict[str, Any],
    timeout_s: float | None,
    tool_context: ToolContext | None = None,
) -> Any:
    """A tool handler, with the calling convention above."""
    if resolved.tool_context_param is not None and tool_context is not None:
        kwargs = {k: v for k, v in args.items() if k != resolved.tool_context_param}
        kwargs[resolved.tool_context_param] = tool_context
        return await call_function(resolved, (), kwargs, timeout_s)
    if resolved.takes_context:
        return await call_function(resolved, (args, context), {}, timeout_s)
    return await call_function(resolved, (), dict(args), timeout_s)
