"""Shared set-up for the gateway/policy/approvals/ledger tests.

Every test gets its own ``PORTAGENT_HOME`` (a tmp folder) and a clean spy in the fixture handlers.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
if str(FIXTURES) not in sys.path:
    sys.path.insert(0, str(FIXTURES))

import acceptance_tools  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORTAGENT_HOME", str(tmp_path / "home"))
    acceptance_tools.reset()


@pytest.fixture
def spy():
    return acceptance_tools
