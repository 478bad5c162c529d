"""The per-session state's finalizer may run on any thread at any allocation — the garbage collector runs
it — including inside ``session_state``'s own lock. It used to take that lock (not re-entrant): a replayed
Claude run deadlocked building its gateway (py-spy: ``session_state`` → ``weakref.finalize`` allocating →
a collection → an earlier owner's finalizer → ``_drop`` waiting on the lock its own thread held), and the
process waited forever. Each check runs in a fresh interpreter under a timeout: a deadlock fails it."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_a_finalizer_running_inside_the_lock_does_not_wait_for_it() -> None:
    """What a collection falling inside ``session_state``'s lock does: the dead owner's state is dropped on
    the same thread, at once."""
    out = _run(
        """
        import threading
        from portagent.tools import tool_context as tc

        tc._STATES[12345] = tc.SessionState()
        done = []

        def collect_inside_the_lock():
            with tc._STATES_LOCK:
                tc._drop(12345)  # as the garbage collector calls it, on the thread holding the lock
            done.append(True)

        t = threading.Thread(target=collect_inside_the_lock, daemon=True)
        t.start()
        t.join(10)
        print(bool(done), 12345 in tc._STATES)
        """
    )
    assert out == "True False"


def test_states_of_dead_owners_are_dropped_under_constant_collection() -> None:
    """Owners made and dropped (some in reference cycles, freed only by the collector) while a collection
    runs on nearly every allocation: every session gets its own state, and no dead owner's state stays."""
    out = _run(
        """
        import gc
        from portagent.tools.tool_context import _STATES, session_state

        class Owner:
            pass

        gc.set_threshold(1, 1, 1)
        for i in range(3000):
            o = Owner()
            if i % 3 == 0:
                o.me = o  # a cycle: freed by the collector, its finalizer runs inside some later call
            state = session_state(o)
            assert session_state(o) is state and state == {}
            state["i"] = i
        del o, state
        gc.collect()
        print(len(_STATES))
        """
    )
    assert out == "0"
