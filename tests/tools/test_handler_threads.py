"""Sync handlers run in daemon worker threads (tools/handlers.py): the guarantees the hop keeps."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from portagent.tools.handlers import HandlerExit, Resolved, call_function


def _sync(fn) -> Resolved:  # type: ignore[no-untyped-def]
    return Resolved(fn=fn, is_async=False, takes_context=False)


def test_a_call_runs_off_the_loop_thread_and_returns() -> None:
    async def go() -> tuple[str, str]:
        worker = await call_function(_sync(lambda: threading.current_thread().name), (), {}, 2.0)
        return worker, threading.current_thread().name

    worker, loop_thread = asyncio.run(go())
    assert worker == "portagent-tool" and worker != loop_thread


def test_a_timed_out_call_answers_timeout_and_its_late_result_is_ignored() -> None:
    release = threading.Event()
    finished: list[str] = []

    def hang() -> str:
        release.wait(5)
        finished.append("late")
        return "late"

    async def go() -> None:
        with pytest.raises(TimeoutError):
            await call_function(_sync(hang), (), {}, 0.05)
        release.set()
        await asyncio.sleep(0.1)  # the worker delivers onto the loop: nothing waits, nothing breaks
        assert await call_function(_sync(lambda: "next"), (), {}, 2.0) == "next"

    asyncio.run(go())
    assert finished == ["late"]


def test_cancelling_the_caller_before_a_worker_takes_the_call_keeps_it_from_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from portagent.tools import handlers

    ran: list[int] = []
    taken = threading.Event()
    original_submit = handlers._POOL.submit

    def slow_submit(job):  # type: ignore[no-untyped-def]
        def later() -> None:
            taken.wait(5)
            original_submit(job)

        threading.Thread(target=later, daemon=True).start()

    monkeypatch.setattr(handlers._POOL, "submit", slow_submit)

    async def go() -> None:
        task = asyncio.ensure_future(call_function(_sync(lambda: ran.append(1)), (), {}, 5.0))
        await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        taken.set()  # only now does a worker see the call
        await asyncio.sleep(0.2)

    asyncio.run(go())
    assert ran == []


def test_exit_and_stop_iteration_in_a_handler_become_ordinary_failures() -> None:
    def exits() -> None:
        raise SystemExit(3)

    def stops() -> None:
        raise StopIteration("done")

    async def go() -> None:
        with pytest.raises(HandlerExit):
            await call_function(_sync(exits), (), {}, 30.0)
        with pytest.raises(RuntimeError, match="StopIteration"):
            await call_function(_sync(stops), (), {}, 30.0)

    t0 = time.monotonic()
    asyncio.run(go())
    assert time.monotonic() - t0 < 10  # neither waits for its 30 s timeout (room for a loaded machine)


def _async(fn) -> Resolved:  # type: ignore[no-untyped-def]
    return Resolved(fn=fn, is_async=True, takes_context=False)


def test_an_async_handler_runs_in_the_callers_task_and_is_bounded_by_its_timeout() -> None:
    async def whose_task() -> object:
        return asyncio.current_task()

    async def hangs() -> None:
        await asyncio.sleep(60)

    async def go() -> None:
        assert await call_function(_async(whose_task), (), {}, 2.0) is asyncio.current_task()
        t0 = time.monotonic()
        with pytest.raises(TimeoutError):
            await call_function(_async(hangs), (), {}, 0.05)
        assert time.monotonic() - t0 < 10  # the 0.05 s timeout, not the 60 s sleep

    asyncio.run(go())


def test_cancelling_the_caller_of_an_async_handler_is_a_cancellation_not_a_timeout() -> None:
    started = asyncio.Event()

    async def hangs() -> None:
        started.set()
        await asyncio.sleep(5)

    async def go() -> None:
        task = asyncio.ensure_future(call_function(_async(hangs), (), {}, 30.0))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
