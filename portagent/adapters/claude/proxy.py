"""The Claude recording proxy (design (a) of SDK_NOTES §4.6): ``ANTHROPIC_BASE_URL`` → portagent → upstream.

The Claude Code CLI does its HTTP in its own process, out of vcrpy's reach. Pointed at this proxy, every
request it makes goes through portagent:

- **record** — forwarded to the upstream (the real API with ``--live``, or the emulator), the answer
  streamed back to the CLI chunk by chunk as it arrives (an SSE stream is never buffered, so the CLI
  sees the same timing as without the proxy), and each interaction kept in a vcrpy cassette written
  with vcrpy's own ``Request`` and serializer: ``vcr.use_cassette`` and ``portagent trace import`` read
  it. ``Accept-Encoding: identity`` is asked upstream so bodies are stored as text. Credentials
  (``x-api-key``, ``authorization``, cookies, org ids — ``scrub.SECRET_HEADERS``) are dropped before
  anything is written, and a cassette in which a secret survives is refused.
- **replay** — serves a cassette in recorded order, single use, matched on method (any case), path
  and query. The real CLI then runs the whole agent loop offline: this is how a new CLI version is
  checked against an old recording (an unexpected request is answered 400 and listed in
  ``unmatched``), and what the transport cassette's replay is measured against.

The proxy itself is vendor-neutral (``recording/http_proxy.py``, which the run journal uses too); this
module gives it the Anthropic upstream and the cassette's file name.
"""

from __future__ import annotations

from pathlib import Path

from portagent.recording.http_proxy import ForwardGate, HttpProxy

HTTP_CASSETTE = "http.yaml"
"""The proxy's vcrpy cassette in a Claude run folder (beside ``transport.jsonl``)."""

DEFAULT_UPSTREAM = "https://api.anthropic.com"


class ClaudeProxy(HttpProxy):
    """``with ClaudeProxy(upstream=…, cassette=path) as url:`` — give the CLI ``ANTHROPIC_BASE_URL=url``;
    call :meth:`save` after the run (record mode)."""

    def __init__(
        self,
        *,
        upstream: str | None = None,
        cassette: Path | None = None,
        mode: str = "record",
        api_key: str | None = None,
        gate: ForwardGate | None = None,
    ) -> None:
        super().__init__(
            upstream=upstream,
            cassette=cassette,
            mode=mode,
            api_key=api_key,
            gate=gate,
            default_upstream=DEFAULT_UPSTREAM,
            name="portagent-claude-proxy",
        )
