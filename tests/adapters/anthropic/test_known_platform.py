"""The model clients of the openai and anthropic adapters are built knowing their platform, so a run makes
no thread hop for the SDK's ``X-Stainless-OS`` probe (``adapters._shared.with_known_platform``).

Both SDKs ask ``get_platform()`` on a worker thread at each client's first request; clients are built per
run, so every run used to start the loop's default thread pool and join it at the end. Real SDKs, the
emulator, and a default executor that counts what is handed to it (lives here, beside the anthropic
adapter's kit, which runs any provider)."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

import pytest
from runtime_testkit import (
    bundle,
    emulator_fixture,  # noqa: F401  (the "emu" fixture)
    fresh_handlers_fixture,  # noqa: F401  (autouse)
    kit,
)

from portagent.adapters._shared import with_known_platform


class _Counting(concurrent.futures.ThreadPoolExecutor):
    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.submitted: list[str] = []

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        self.submitted.append(getattr(fn, "__qualname__", repr(fn)))
        return super().submit(fn, *args, **kwargs)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_run_hands_nothing_to_the_default_thread_pool(emu, provider):
    pytest.importorskip(provider)
    pool = _Counting()

    async def main() -> Any:
        asyncio.get_running_loop().set_default_executor(pool)
        return await kit.run(
            emu, bundle("desk"), "Where is order ORD-7 and how fast do you ship?", provider=provider
        )

    r = asyncio.run(main())
    assert r.result.status == "completed", r.result.error
    assert pool.submitted == []  # the SDK's platform probe ran on the pool once per run before


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_platform_is_the_sdks_own_answer(provider):
    sdk = pytest.importorskip(provider)
    client_type = sdk.AsyncOpenAI if provider == "openai" else sdk.AsyncAnthropic
    client = with_known_platform(client_type(api_key="sk-dummy", base_url="http://127.0.0.1:9"))
    base = __import__(f"{provider}._base_client", fromlist=["get_platform"])
    assert client._platform == base.get_platform()
    assert client._platform is not None
    # the headers the SDK sends carry what its own probe would have found
    probed = client_type(api_key="sk-dummy", base_url="http://127.0.0.1:9")
    probed._platform = base.get_platform()
    assert client.platform_headers() == probed.platform_headers()
