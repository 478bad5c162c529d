"""Where log records go in portagent's own processes: the CLI and the eval/record workers it starts.

The vendor SDKs log their own view of an error portagent already reports in one line (ADK: each failed
node with its traceback, hundreds of lines; openai-agents: "Error getting response"; vcrpy's "How to fix"
advice on a drifted cassette, which contradicts ``record --drifted``). With no handler set, Python prints
every such warning to stderr. ``route_logs`` keeps portagent's own warnings (``portagent: …``) and drops
the rest, unless ``PORTAGENT_LOG`` asks for everything. A program that embeds portagent is left alone:
only the CLI and portagent's worker processes call it.
"""

from __future__ import annotations

import logging
import os
import sys

LOG_ENV = "PORTAGENT_LOG"
"""``debug`` / ``info`` / ``warning`` / ``error``: show every library's log records at that level (the
vendor SDKs' included), for diagnosing an SDK."""

HANDLER_NAME = "portagent-cli"


class _OwnRecords(logging.Filter):
    """Only portagent's own log records reach the terminal."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.name.startswith("portagent")


def route_logs() -> None:
    """Set up this process's logging as above (once; a second call changes nothing)."""
    level = os.environ.get(LOG_ENV, "").strip().upper()
    if level:
        if level not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
            level = "DEBUG"
        logging.basicConfig(level=level, format="%(name)s: %(levelname)s: %(message)s")
        return
    root = logging.getLogger()
    if any(h.get_name() == HANDLER_NAME for h in root.handlers):
        return  # main() called again in one process (tests, an embedding program)
    handler = logging.StreamHandler(sys.stderr)
    handler.set_name(HANDLER_NAME)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("portagent: %(message)s"))
    handler.addFilter(_OwnRecords())
    root.addHandler(handler)
