"""``portagent emulate``: serve an emulator script until Ctrl-C (docs/emulator.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "emulate",
        help="serve a scripted stand-in for the OpenAI, Anthropic and Gemini APIs",
        description="Serve an emulator script on a local port, speaking the OpenAI (Responses, Chat "
        "Completions), Anthropic (Messages) and Gemini (generateContent) wire protocols.",
    )
    p.add_argument("--script", required=True, metavar="FILE", help="emulator script (YAML or JSON)")
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="port (default: 8765; 0 picks a free one)")
    p.add_argument("--log", metavar="FILE", default=None, help="append every request to this JSONL file")
    p.add_argument("--verbose", action="store_true", help="print one line per request on stderr")
    return p


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from portagent.contracts.emulator_script import load_script
    from portagent.contracts.errors import UsageError
    from portagent.emulator.api import RunningEmulator, run_forever

    if not Path(args.script).is_file():
        raise UsageError(f"script file not found: {args.script}")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be between 0 and 65535, got {args.port}")
    script = load_script(args.script)

    def ready(emu: RunningEmulator) -> None:
        n = len(script.conversations)
        name = f" {script.name!r}" if script.name else ""
        out = sys.stdout
        out.write(
            f"portagent emulator: script{name} ({n} conversation{'s' if n != 1 else ''}) "
            f"listening on {emu.base_url}\n"
        )
        for key, value in emu.env().items():
            out.write(f"  {key}={value}\n")
        if emu.log_path is not None:
            out.write(f"  request log: {emu.log_path}\n")
        out.write("Press Ctrl-C to stop.\n")
        out.flush()

    try:
        run_forever(
            script, host=args.host, port=args.port, log_path=args.log, on_ready=ready, verbose=args.verbose
        )
    except KeyboardInterrupt:
        sys.stdout.write("portagent emulator: stopped\n")
    return 0
