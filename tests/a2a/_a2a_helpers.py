"""Helpers of the A2A tests: the support-desk agent served over A2A, its model answered by portagent's
emulator (a real SDK on each side of the wire, nothing mocked)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _support import EXAMPLES

AGENT = EXAMPLES / "support_desk" / "agent.yaml"
SCRIPT = EXAMPLES / "support_desk" / "emulator.yaml"
TOKEN = "a2a-test-token-0123456789"


def start(tmp: Path, provider: str = "openai", *, tokens: list[str] | None = None, **extra: Any) -> Any:
    """A context manager: (url, request log path) of a server of the support desk on ``provider``;
    ``extra``: more ``ServeConfig`` fields (``allow_hosts``, ``allow_origins``)."""
    import contextlib

    from portagent.a2a.server import ServeConfig, serve_in_thread
    from portagent.adapters.base import REGISTRY
    from portagent.adapters.port import Endpoint
    from portagent.contracts.bundle import load_agent
    from portagent.emulator import load_script
    from portagent.emulator import serve as emulate

    @contextlib.contextmanager
    def running() -> Iterator[tuple[str, Path]]:
        log = tmp / "a2a-requests.jsonl"
        with emulate(load_script(SCRIPT)) as emu:
            endpoint = Endpoint(
                source="emulator", mode="direct", base_url=emu.base_url, api_key=REGISTRY[provider].dummy_key
            )
            config = ServeConfig(
                bundle=load_agent(AGENT),
                provider=provider,
                endpoint=endpoint,
                runs_dir=tmp / "runs",
                scopes=["email:send", "tickets:write"],
                tokens=tokens or [],
                request_log=log,
                **extra,
            )
            with serve_in_thread(config) as url:
                yield url, log

    return running()
