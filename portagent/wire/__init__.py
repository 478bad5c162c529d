"""Vendor wire helpers shared by the emulator and (later) ``portagent trace import``.

Nothing here imports a vendor SDK: these modules read and write the raw HTTP bodies.

- ``items``     — one neutral view of a model request (:class:`RequestView`): system text, the
  conversation as ordered :class:`Item` s, the declared tools, and the derived facts every
  consumer needs (first user text, number of assistant turns, tool results).
- ``openai``    — parse OpenAI Responses and Chat Completions request bodies.
- ``anthropic`` — parse Anthropic Messages request bodies (strips Claude Code's
  ``<system-reminder>`` blocks).
- ``gemini``    — parse Gemini ``generateContent`` request bodies (understands ADK's relayed
  "For context:" turns).
- ``sse``       — Server-Sent Events and Gemini JSON-array stream framing, both ways.
- ``finish``    — how a reply ended, from each wire's own value, in the trace's words (the adapters decide
  with it whether a reply's calls run; the importer reads recorded replies with it).
"""

from __future__ import annotations

from portagent.wire.items import Item, RequestView, ToolDeclaration, WireFormatError

__all__ = ["Item", "RequestView", "ToolDeclaration", "WireFormatError"]
