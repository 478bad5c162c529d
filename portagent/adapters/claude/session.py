"""The cassette side of one Claude run: what the adapter uses in ``record`` and ``replay`` mode.

``open_cassette(session)`` (None in ``direct`` mode) decides between recording and replaying, gives the
adapter the transport factory to use (``claude_record.RecordingTransport`` around the CLI transport, or
``claude_replay.ReplayTransport`` instead of it), starts the recording proxy (``claude_proxy``) when the
CLI's HTTP traffic is kept too, and after the run writes the files or fills the replay report
(``session.cassette_report``, which the runner puts in ``run.json``). docs/cassettes.md.
"""

from __future__ import annotations

from collections.abc import AsyncIterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from claude_agent_sdk import ClaudeAgentOptions, Transport

from portagent.adapters.claude.cassette import (
    TRANSPORT_FILE,
    TransportCassette,
    TransportDrift,
    TransportReport,
    new_header,
    option_summary,
)
from portagent.adapters.claude.record import RecordingTransport
from portagent.contracts.errors import RecordingError
from portagent.recording.vcr_cassette import RECORD_MODES

if TYPE_CHECKING:
    from portagent.adapters.claude.proxy import ClaudeProxy
    from portagent.adapters.claude.replay import ReplayTransport
    from portagent.adapters.claude.transport import TransportFactory
    from portagent.adapters.port import RunSession

HTTP_CASSETTE_KEY = "claude_http_cassette"
"""``RunOptions.extra`` key: also record the CLI's HTTP traffic through the recording proxy (``http.yaml``).
Default: on for ``live`` recordings, off for emulator ones (the emulator's own request log shows the same)."""

STALL_KEY = "claude_replay_stall_s"
"""``RunOptions.extra`` key: how long a replay waits for an SDK line the recording has before calling it
drift (default :data:`STALL_S`)."""

STALL_S = 30.0


class ClaudeCassette:
    """One Claude run's cassette in ``record`` or ``replay`` mode (see the module docstring).

    Replay when the endpoint replays, or when recording with ``record_mode`` ``none`` (or ``once`` and the
    cassette exists, as vcrpy would); otherwise record (``all`` and ``new_episodes`` both record the whole
    conversation again: a transport stream cannot be extended with new episodes).
    """

    def __init__(self, session: RunSession) -> None:
        endpoint = session.endpoint
        assert endpoint.cassette_dir is not None
        if endpoint.record_mode not in RECORD_MODES:
            raise RecordingError(
                f"unknown record mode {endpoint.record_mode!r}; expected one of {', '.join(RECORD_MODES)}"
            )
        self.session = session
        self.folder = Path(endpoint.cassette_dir)
        self.path = self.folder / TRANSPORT_FILE
        self.replaying = (
            endpoint.mode == "replay"
            or endpoint.record_mode == "none"
            or (endpoint.record_mode == "once" and self.path.exists())
        )
        self.report = TransportReport()
        self.recorded: TransportCassette | None = None
        self.recording: RecordingTransport | None = None
        self.replay: ReplayTransport | None = None
        self.proxy: ClaudeProxy | None = None
        if self.replaying:
            self.recorded = TransportCassette.load(self.path)  # a missing or corrupt cassette fails now
            self.report.total = self.recorded.messages
            self.report.version_changes = _version_changes(self.recorded.header)

    @property
    def records_http(self) -> bool:
        wanted = self.session.options.extra.get(HTTP_CASSETTE_KEY)
        return not self.replaying and (
            bool(wanted) if wanted is not None else self.session.endpoint.source in ("live", "endpoint")
        )

    def start(self) -> str | None:
        """Start what the run needs before the CLI starts; returns the base URL the CLI must use
        instead of the endpoint's (the recording proxy's), or None."""
        if not self.records_http:
            return None
        from portagent.adapters.claude.proxy import HTTP_CASSETTE, ClaudeProxy

        endpoint = self.session.endpoint
        self.proxy = ClaudeProxy(
            upstream=endpoint.base_url,
            cassette=self.folder / HTTP_CASSETTE,
            api_key=endpoint.api_key,
            gate=self.session.request_gate,  # a recording's per-request limits, when it has them
        )
        return self.proxy.start()

    def transport_factory(self, inner: TransportFactory) -> TransportFactory:
        """The factory the adapter passes to ``PortagentTransport``."""

        def make(prompt: str | AsyncIterable[dict[str, Any]], cli_options: ClaudeAgentOptions) -> Transport:
            options = option_summary(cli_options)
            if self.recorded is not None:
                from portagent.adapters.claude.replay import ReplayTransport

                stall = float(self.session.options.extra.get(STALL_KEY, STALL_S))
                self.replay = ReplayTransport(self.recorded, options, stall_s=stall)
                return self.replay
            self.recording = RecordingTransport(
                inner(prompt, cli_options), TransportCassette(self.path, new_header(options))
            )
            return self.recording

        return make

    @property
    def drift(self) -> TransportDrift | None:
        return self.replay.drift if self.replay is not None else None

    def finish(self) -> None:
        """After the run: write the recording (refused if a secret is found) or fill the replay report."""
        if self.proxy is not None:
            self.proxy.stop()
        if self.replay is not None:
            self.replay.fill(self.report)
            return
        if self.recording is None or not self.recording.connected:
            return  # the CLI never started: nothing to keep (the run fails on its own)
        key = self.session.endpoint.api_key
        secrets = [key] if key and len(key) >= 8 else None
        # Both files are checked before either is written: a refusal leaves nothing behind.
        if self.proxy is not None:
            self.proxy.check(secrets)
        self.recording.cassette.save(secrets=secrets)
        self.report.total = self.recording.cassette.messages
        if self.proxy is not None:
            self.proxy.save(secrets)
            self.report.http = {
                "file": self.proxy.cassette.name if self.proxy.cassette else None,
                "interactions": len(self.proxy.interactions),
            }


def _version_changes(header: dict[str, Any]) -> list[str]:
    from claude_agent_sdk._cli_version import __cli_version__

    from portagent.adapters.base import package_version

    out = []
    sdk_now = package_version("claude-agent-sdk")
    if header.get("sdk_version") not in (None, sdk_now):
        out.append(f"claude-agent-sdk {header['sdk_version']} at recording, {sdk_now} installed")
    if header.get("cli_version") not in (None, __cli_version__):
        out.append(f"Claude Code CLI {header['cli_version']} at recording, {__cli_version__} installed")
    return out


def open_cassette(session: RunSession) -> ClaudeCassette | None:
    """The cassette of a ``record`` / ``replay`` run (None in ``direct`` mode or without a cassette folder)."""
    if session.endpoint.mode not in ("record", "replay") or session.endpoint.cassette_dir is None:
        return None
    return ClaudeCassette(session)
