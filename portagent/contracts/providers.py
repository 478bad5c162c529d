"""The providers portagent runs on — the one list every floor and the CLI read.

Standard library only, so the CLI's argument parser can offer the names without loading pydantic.
The adapter registry (``adapters/base.py``) holds each provider's facts under these names; a test
keeps both in the same order.
"""

from __future__ import annotations

from typing import Literal

ProviderName = Literal["openai", "claude", "adk", "anthropic", "langgraph"]
"""The providers portagent runs on."""

PROVIDERS: tuple[ProviderName, ...] = ("openai", "claude", "adk", "anthropic", "langgraph")

DEFAULT_COMPARISON: tuple[ProviderName, ...] = ("openai", "claude", "adk")
"""What a suite without ``providers:`` compares: the three agent SDKs. The newer runtimes (``anthropic``, the
plain Messages API; ``langgraph``) are named when wanted, so adding a runtime never changes an existing
suite's runs, recordings or gate."""
