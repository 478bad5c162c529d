"""Shared bits of the tracing tests (not a test module)."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
"""Synthetic cassettes for the body forms the real recordings lack (each file's header says which)."""
