"""Resolving and calling ``module:function`` strings (handlers, preconditions, reconcile functions).

Resolution is lazy (at the first call, never at validation time). Inside a handler scope (the runner
opens one per run, ``bundle_scope``) the module is looked for first in the folder of the file that
declared the tool — a shared tools file's folder, or the agent spec's for an inline tool — then in the
agent specs' folders (the root's first), then in the other tools files' folders, and imported from there
(``core/handler_folders.py``: per folder, without putting the folder on ``sys.path``), then the ordinary
way (an installed package, ``PYTHONPATH``). Two agents' ``tools:get_order`` in two folders are two
functions, cached per folder; outside a scope, a reference is imported from ``sys.path`` and cached per
string. Calling convention of a tool handler (ADR 0004):

- it declares a parameter named ``context`` → ``handler(args, context)`` (the arguments dict and the
  run context dict);
- it declares a parameter annotated ``ToolContext`` (any name; ``tools/tool_context.py``) →
  ``handler(**args, <that name>=tool_context)`` — this wins over the ``context`` rule;
- otherwise → ``handler(**args)``.

Sync functions run in a daemon worker thread so ``timeout_ms`` can be enforced without blocking the
event loop; a timed-out sync handler cannot be killed (Python threads cannot be), it is abandoned and
its late result ignored. Async functions are awaited in the caller's own task under
``asyncio.timeout``: no thread hop and no extra task (a sync handler's hop costs about 0.3 ms a call on
a busy 2-core machine, benchmarks/adapter_overhead.py), so ``async def`` is the fast way to write a
handler that does not block.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import inspect
import queue
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from portagent.contracts.bundle import HandlerPlan, clash_message, plan_handlers
from portagent.core import handler_folders
from portagent.tools.tool_context import ToolContext, tool_context_param

if TYPE_CHECKING:
    from portagent.contracts.bundle import AgentBundle
    from portagent.contracts.tool import ToolSpec


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
"""References resolved outside any ``handler_scope`` (from ``sys.path``), by string."""
_CACHE_LOCK = threading.Lock()
_FOLDER_CACHE: dict[tuple[tuple[str, ...], str], tuple[Resolved, str, ModuleType]] = {}
"""(folders looked in, reference) → the function, and the module it came from under its name in
``sys.modules`` (a module taken out of ``sys.modules`` is imported again, as outside a scope)."""


HandlerScope = HandlerPlan
"""Where ``module:function`` references of a run are looked for before ``sys.path``: the plan itself
(``contracts/bundle.py``), which ``validate``, ``eval --reuse`` and ``port-check`` read too."""


_SCOPE: ContextVar[HandlerScope | None] = ContextVar("portagent_handler_scope", default=None)


@contextlib.contextmanager
def handler_scope(
    folders: Iterable[str | Path], prefer: Mapping[str, str | Path] | None = None
) -> Iterator[HandlerScope]:
    """References resolved in this context (and in tasks started in it) look in ``folders`` first."""
    with within(
        HandlerScope(
            tuple(dict.fromkeys(str(f) for f in folders)), {ref: str(f) for ref, f in (prefer or {}).items()}
        )
    ) as scope:
        yield scope


@contextlib.contextmanager
def within(scope: HandlerScope) -> Iterator[HandlerScope]:
    """References resolved in this context (and in tasks started in it) are looked for as ``scope`` says."""
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)


def bundle_scope(bundle: AgentBundle) -> HandlerScope:
    """Where a run of ``bundle`` looks for its references (``AgentBundle.handler_plan``): each in its
    tool's folder first, then the agent specs' folders, then the other tools files' folders."""
    return bundle.handler_plan(_holds)


def plan_scope(spec_folders: Iterable[str], tools: Iterable[tuple[ToolSpec, str]]) -> HandlerScope:
    """``plan_handlers`` for tools not of an agent (a router's)."""
    return plan_handlers(spec_folders, tools, _holds)


def _holds(module: str, folder: str) -> bool:
    return handler_folders.holds(module, folder) is not None


def _shadowed(module_name: str, folders: Iterable[str] = ()) -> str:
    """Why a handler module lacks the function its file holds, when that is the reason: another module of
    the same name came first — the standard library's (``email.py`` next to the spec, and ``email`` is
    Python's), an installed package's, or one imported earlier — so ``import`` never read the file. Names
    the file that was not read and the module that was; ``""`` when no such file is on the path."""
    module = sys.modules.get(module_name)
    loaded = getattr(module, "__file__", None)
    if module is None or module_name.count("."):
        return ""
    for entry in [*folders, *sys.path]:
        folder = Path(entry or ".")
        for candidate in (folder / f"{module_name}.py", folder / module_name / "__init__.py"):
            with contextlib.suppress(OSError):
                if candidate.is_file() and (loaded is None or not candidate.samefile(loaded)):
                    return (
                        f": Python imported {module_name!r} from {loaded or 'its built-in modules'}, not "
                        f"{str(candidate)!r} — a module of that name (the standard library's, an installed package's, "
                        f"another spec folder's) comes first; rename {candidate.name!r} and the handler "
                        "references to it"
                    )
    return ""


def resolve(ref: str) -> Resolved:
    """Import ``module:function`` once (per folder inside a ``handler_scope``, the same folders looked in
    before ``sys.path``, when it came from there). Failures are not cached (the module may appear later)."""
    scope = _SCOPE.get()
    if scope is None or not scope.folders:
        hit = _CACHE.get(ref)
        if hit is not None:
            return hit
        resolved = _from_sys_path(ref)
        with _CACHE_LOCK:
            _CACHE[ref] = resolved
        return resolved
    if scope.clash and ref in scope.clash:
        raise HandlerImportError(clash_message(ref, scope.clash[ref]))
    folders = scope.order(ref)
    cached = _FOLDER_CACHE.get((folders, ref))
    if cached is not None and sys.modules.get(cached[1]) is cached[2]:
        return cached[0]
    module_name, _, attr = ref.partition(":")
    missing: HandlerImportError | None = None
    for folder in folders:
        local = _import(ref, module_name, functools.partial(handler_folders.load, module_name, folder))
        if local is None:
            continue
        full = local + module_name[len(module_name.partition(".")[0]) :]
        module = _import(ref, module_name, functools.partial(importlib.import_module, full))
        try:
            resolved = _resolved(ref, module, attr, None)
        except HandlerImportError as e:  # another folder of the run may hold the function
            missing = missing or e
            continue
        with _CACHE_LOCK:
            _FOLDER_CACHE[(folders, ref)] = (resolved, full, module)
        return resolved
    if missing is not None:
        raise missing
    other = handler_folders.folder_of(module_name.partition(".")[0])
    if other is not None and other not in folders and other not in sys.path:
        raise HandlerImportError(
            f"cannot import module {module_name!r} for {ref!r}: it is not in the spec's folder "
            f"({', '.join(folders)}) nor on sys.path — the module of that name loaded in this process is "
            f"another spec folder's ({other})"
        )
    resolved = _from_sys_path(ref, folders)  # an installed package's or PYTHONPATH's, resolved once too
    with _CACHE_LOCK:
        _FOLDER_CACHE[(folders, ref)] = (resolved, module_name, sys.modules[module_name])
    return resolved


def _from_sys_path(ref: str, folders: tuple[str, ...] = ()) -> Resolved:
    module_name, _, attr = ref.partition(":")
    module = _import(ref, module_name, functools.partial(importlib.import_module, module_name))
    return _resolved(ref, module, attr, folders)


def _import(ref: str, module_name: str, how: Callable[[], Any]) -> Any:
    """``how()``, its failures as one ``HandlerImportError`` naming the module."""
    try:
        return how()
    except ImportError as e:
        raise HandlerImportError(
            f"cannot import module {module_name!r} for {ref!r}: {handler_folders.display(str(e))}"
        ) from e
    except Exception as e:  # a module that raises while importing
        raise HandlerImportError(
            f"importing module {module_name!r} for {ref!r} failed: {type(e).__name__}: "
            f"{handler_folders.display(str(e))}"
        ) from e
    except SystemExit as e:  # a module that exits while importing
        raise HandlerImportError(
            f"importing module {module_name!r} for {ref!r} failed: it called sys.exit({e.code!r})"
        ) from None


def _resolved(ref: str, module: Any, attr: str, folders: tuple[str, ...] | None) -> Resolved:
    """The function ``attr`` of ``module``; ``folders`` (None for a module loaded from a spec folder, which
    nothing shadows) are searched with ``sys.path`` for the file another module of its name hid."""
    module_name = ref.partition(":")[0]
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as e:
            raise HandlerImportError(
                f"module {module_name!r} has no attribute {attr!r} ({ref!r})"
                + (_shadowed(module_name, folders) if folders is not None else "")
            ) from e
    if not callable(obj):
        raise HandlerImportError(f"{ref!r} is not callable")
    takes_context = False
    with contextlib.suppress(TypeError, ValueError):  # builtins without a signature
        takes_context = "context" in inspect.signature(obj).parameters
    tc_param = tool_context_param(obj)
    call_method = obj.__call__ if not inspect.isroutine(obj) else None  # callable instances
    return Resolved(
        fn=obj,
        is_async=inspect.iscoroutinefunction(obj) or inspect.iscoroutinefunction(call_method),
        takes_context=takes_context and tc_param != "context",
        tool_context_param=tc_param,
    )


class _Job:
    """One sync call handed to a worker thread. A call abandoned before a worker took it (its timeout
    passed, or its caller was cancelled) never starts: a handler's effect happens only for a call
    someone still waits for."""

    __slots__ = ("_lock", "_state", "fn", "fut", "loop")

    QUEUED, RUNNING, ABANDONED = 0, 1, 2

    def __init__(
        self, fn: Callable[[], Any], loop: asyncio.AbstractEventLoop, fut: asyncio.Future[Any]
    ) -> None:
        self.fn, self.loop, self.fut = fn, loop, fut
        self._lock = threading.Lock()
        self._state = self.QUEUED

    def claim(self) -> bool:
        with self._lock:
            if self._state == self.ABANDONED:
                return False
            self._state = self.RUNNING
            return True

    def abandon(self) -> None:
        with self._lock:
            if self._state == self.QUEUED:
                self._state = self.ABANDONED

    def deliver(self, result: Any, error: BaseException | None) -> None:
        # straight onto the caller's loop: one wake-up, not a concurrent.futures chain (half the hop)
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            self.loop.call_soon_threadsafe(_settle, self.fut, result, error)


def _settle(fut: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if fut.done():  # timed out or cancelled meanwhile: the late result is ignored
        return
    if error is not None:
        fut.set_exception(error)
    else:
        fut.set_result(result)


def _expire(fut: asyncio.Future[Any]) -> None:
    if not fut.done():
        fut.set_exception(TimeoutError())


class _DaemonPool:
    """Daemon worker threads for sync functions: a hung handler never blocks interpreter exit
    (``asyncio.run`` would wait for the default executor's threads)."""

    def __init__(self) -> None:
        self._q: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def submit(self, job: _Job) -> None:
        with self._lock:
            self._q.put(job)
            if self._idle > 0:
                self._idle -= 1
            else:
                threading.Thread(target=self._work, name="portagent-tool", daemon=True).start()

    def _work(self) -> None:
        while True:
            job = self._q.get()
            if job.claim():
                result: Any = None
                error: BaseException | None = None
                try:
                    result = job.fn()
                except SystemExit as e:
                    error = HandlerExit(e.code)
                except StopIteration as e:  # a future cannot carry it (PEP 479 turns it into this too)
                    error = RuntimeError(f"the function raised StopIteration: {e}")
                except BaseException as e:
                    error = e
                job.deliver(result, error)
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
        return await _bounded(coro, timeout_s)
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[Any] = loop.create_future()
    job = _Job(lambda: resolved.fn(*args, **kwargs), loop, fut)
    _POOL.submit(job)
    timer = loop.call_later(timeout_s, _expire, fut) if timeout_s else None
    try:
        result = await fut
    except BaseException:  # timed out or cancelled: a call not started yet never starts
        job.abandon()
        raise
    finally:
        if timer is not None:
            timer.cancel()
    if inspect.isawaitable(result):  # a sync function that returned a coroutine
        result = await _bounded(_no_exit(result), timeout_s)
    return result


async def _bounded(coro: Any, timeout_s: float | None) -> Any:
    """Await ``coro`` within ``timeout_s`` (``TimeoutError`` past it) in the current task
    (``asyncio.timeout`` creates no task, unlike ``wait_for``)."""
    if not timeout_s:
        return await coro
    async with asyncio.timeout(timeout_s):
        return await coro


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
