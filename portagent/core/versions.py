"""portagent's own version and installed package versions (for manifests and reports)."""

from __future__ import annotations

import functools

PORTAGENT_VERSION = "0.1.0"
"""The version of this package (pyproject.toml says the same; a test pins that they agree)."""


@functools.lru_cache(maxsize=32)
def package_version(package: str) -> str:
    """The installed version of a distribution, or ``unknown`` when it is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"
