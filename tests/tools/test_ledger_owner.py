"""Owner liveness of ledger intents survives pid reuse (issue 14, crash consistency): a token names the
owner's pid *and* its start identity, so a later process that got the same pid is not the owner."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from portagent.tools.ledger import owner_alive, owner_token, start_identity

pytestmark = pytest.mark.skipif(start_identity(os.getpid()) is None, reason="needs /proc (Linux)")


def test_the_token_carries_the_start_identity() -> None:
    token = owner_token()
    assert token == f"{socket.gethostname()}:{os.getpid()}@{start_identity(os.getpid())}"
    assert owner_alive(token) is True


def test_a_reused_pid_is_not_the_owner() -> None:
    # pid 1 is alive, but it is not the process that wrote this token (another start identity)
    assert owner_alive(f"{socket.gethostname()}:1@{start_identity(os.getpid())}") is False
    assert owner_alive(f"{socket.gethostname()}:1@{start_identity(1)}") is True
    assert owner_alive(f"{socket.gethostname()}:1") is True  # tokens without one: the pid alone decides


def test_a_dead_owner_is_dead_with_or_without_start_identity() -> None:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait(timeout=60)
    assert owner_alive(f"{socket.gethostname()}:{p.pid}") is False
    assert owner_alive(f"{socket.gethostname()}:{p.pid}@0.0") is False
    assert owner_alive(f"elsewhere:{p.pid}@0.0") is None
