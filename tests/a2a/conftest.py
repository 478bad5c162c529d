"""Module-scoped A2A servers (one per module: starting one costs an emulator and a uvicorn thread)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _a2a_helpers import TOKEN, start


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    with start(tmp_path_factory.mktemp("a2a")) as pair:
        yield pair


@pytest.fixture(scope="module")
def served_with_token(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    with start(tmp_path_factory.mktemp("a2a-token"), tokens=[TOKEN]) as pair:
        yield pair
