"""What an eval's worker processes share before they exist: imported once, in the fork server.

Workers are forked from multiprocessing's fork server (``eval_pool``). By default that server is an
empty interpreter, so every worker imported portagent's run path, vcrpy and pydantic, built the same
validators and compiled the same secret patterns again — half a second to a second per worker, paid
for every provider's first worker and every extra one. ``warm_workers`` starts the server early (while
the eval plans) with this module as its preload: importing it imports the run path and does the
one-time work, and every worker forked afterwards starts with it done.

Importing this module *is* the warm-up (``multiprocessing`` preloads modules by name); nothing else
imports it.
"""

from __future__ import annotations

import contextlib
import importlib
import os

RUN_PATH = (
    "portagent.runtime.eval_pool",
    "portagent.runtime.eval_workers",
    "portagent.runtime.eval_execute",  # the pools and workers import it (and the plan's types) where it runs
    "portagent.runtime.runner",
    "portagent.runtime.replay",
    "portagent.recording.vcr_cassette",
    "portagent.recording.player",
    "vcr",  # imported lazily by the cassette code; ~0.15 s on a worker's first replay
    "portagent.recording.http_proxy",
    "portagent.tracing.recorder",
    "portagent.tools.gateway",
    "portagent.tools.approvals",
    "portagent.tools.ledger",
    "portagent.evals.scoring",
    "portagent.evals.tool_versions",
    "portagent.evals.drift",
)


def warm() -> None:
    """Import the run path (and the adapters named in ``$PORTAGENT_WARM_SDKS``, set by
    ``fork_server.warm_workers``), then build what every run builds on first use whatever its provider:
    contract validators, the secret scanner's patterns, the price table, the TLS context."""
    for name in RUN_PATH:
        importlib.import_module(name)
    from portagent.runtime.fork_server import WARM_SDKS_ENV

    for name in filter(None, os.environ.get(WARM_SDKS_ENV, "").split(",")):
        # the worker imports it again and reports a failure itself; an SDK that exits on import must not end
        # the fork server (every later worker of the eval would fail to start)
        with contextlib.suppress(Exception, SystemExit):
            importlib.import_module(name)
    from portagent.contracts._base import Contract
    from portagent.core.secrets import _any_gate, _patterns

    _patterns()
    _any_gate()
    from portagent.core.pricing import model_cost

    # the price table loads on the first cost asked (~0.1 s): ask one, as every run's first model call would
    model_cost("openai", "gpt-4.1-mini", input_tokens=1, output_tokens=1)
    from portagent.adapters._shared import tls_context

    tls_context()  # the CA bundle (~50 ms), per CA setting: a worker whose setting differs builds its own
    todo = list(Contract.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        with contextlib.suppress(Exception):  # unresolved names: it builds (and fails) where it is used
            cls.model_rebuild()


warm()
