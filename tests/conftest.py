import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import EXAMPLES, IN_CI, REPO, SAMPLES, require_path, run_cli  # noqa: F401


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path, monkeypatch):
    """Every test gets its own PORTAGENT_HOME so state never leaks between tests."""
    monkeypatch.setenv("PORTAGENT_HOME", str(tmp_path / ".portagent"))
    yield
