"""The provider emulator: a scripted local server speaking the OpenAI, Anthropic and Gemini wire
protocols, with fault injection (DESIGN §5, docs/emulator.md).

    from portagent.emulator import serve

    with serve("examples/emulator/weather.yaml") as emu:
        client = openai.OpenAI(base_url=emu.openai_base_url, api_key="sk-dummy")
        ...
        emu.requests()   # what the SDK sent, secrets masked

Everything it produces is scripted: runs against it exercise the real SDKs but say nothing about a
vendor model's quality, and are labelled ``source: emulator``.
"""

from __future__ import annotations

from portagent.contracts.emulator_script import EmulatorScript, load_script
from portagent.emulator.api import RunningEmulator, serve
from portagent.emulator.engine import CONVERSATION_HEADER

__all__ = ["CONVERSATION_HEADER", "EmulatorScript", "RunningEmulator", "load_script", "serve"]
