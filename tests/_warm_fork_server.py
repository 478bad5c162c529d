"""Helpers of the eval/runtime modules that run ``portagent eval`` / ``record`` in the test process.

An eval's workers fork from this process's one ``multiprocessing`` fork server (``runtime.fork_server``),
which an eval keeps once started: it preloads the SDK of the providers of the FIRST eval the process made
(one provider: its SDK; several: none). In a pytest worker that first eval may be another module's, and
then every openai worker of every later eval imported the OpenAI Agents SDK itself (~5 s of CPU each).
``openai_fork_server`` starts the server as a lone-openai eval would, for one module, and ends it after.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def openai_fork_server() -> Iterator[None]:
    """This process's fork server, started afresh with the openai SDK preloaded; ended on exit."""
    from portagent.runtime.fork_server import stop_warm_workers, warm_workers

    stop_warm_workers()
    warm_workers(["openai"])
    try:
        yield
    finally:
        stop_warm_workers()
