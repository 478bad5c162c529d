"""The fork server's preload (runtime/warm.py) does, once, the provider-independent work every worker's
first run would otherwise do itself."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
import portagent.runtime.warm
from portagent.adapters._shared import _tls
from portagent.core.pricing import _price
from portagent.core.secrets import _patterns

assert "vcr" in sys.modules and "portagent.recording.player" in sys.modules
assert _price.cache_info().currsize >= 1, "price table not loaded"
assert _tls.cache_info().currsize == 1, "TLS context not built"
assert _patterns.cache_info().currsize >= 1, "secret patterns not compiled"
for name in ("openai", "agents", "google.adk", "claude_agent_sdk", "anthropic", "langgraph"):
    assert name not in sys.modules, name + " imported without PORTAGENT_WARM_SDKS"
print("ok")
"""


def test_the_preload_does_the_shared_first_use_work_and_imports_no_sdk() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
