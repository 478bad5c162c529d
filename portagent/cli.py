"""The ``portagent`` command line.

The CLI is thin: every subcommand lives in ``portagent/_cli/<name>.py`` with two functions,
``add_parser(subparsers)`` (argparse only, no heavy imports) and ``run(args) -> int``. Heavy
modules (SDKs, vcrpy, rich) are imported inside ``run`` so ``portagent --help`` stays fast.

Exit codes (DESIGN §3): 0 ok · 1 a check failed · 2 usage or configuration error ·
3 provider or runtime error.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Order is the order shown by ``--help``.
COMMANDS: tuple[str, ...] = (
    "init",
    "validate",
    "schema",
    "emulate",
    "run",
    "chat",
    "resume",
    "approvals",
    "sessions",
    "memory",
    "trace",
    "mcp",
    "a2a",
    "route",
    "record",
    "eval",
    "compare",
    "gate",
    "report",
    "demo",
    "import",
    "capabilities",
    "port-check",
    "export",
)

SPECIAL_MODULES: dict[str, str] = {"import": "import_"}
"""Commands whose module name cannot be the command name (``import`` is a Python keyword)."""

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2
EXIT_RUNTIME = 3


class _Parser(argparse.ArgumentParser):
    """argparse exits with 2 on usage errors already; keep its message short and clear."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"portagent: error: {message}\n")
        raise SystemExit(EXIT_USAGE)


def _module(name: str) -> str:
    return "portagent._cli." + SPECIAL_MODULES.get(name, name.replace("-", "_"))


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, or with ``only`` a parser holding just that subcommand: a command line that
    names a known command parses the same either way, without importing the other 23 modules."""
    from portagent.core.versions import PORTAGENT_VERSION as __version__

    parser = _Parser(
        prog="portagent",
        description="Define an agent once; run it on the OpenAI Agents SDK, the Claude Agent SDK, Google ADK, "
        "the Anthropic Messages API (tool runner) and LangGraph.",
    )
    parser.add_argument("--version", action="version", version=f"portagent {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in (only,) if only else COMMANDS:
        module = importlib.import_module(_module(name))
        module.add_parser(sub)
    return parser


def _named_command(argv: Sequence[str]) -> str | None:
    """The subcommand when it is the first argument (``portagent validate …``); anything else (no
    argument, ``--help``, ``--version``, a misspelt command) gets the whole parser and its messages."""
    return argv[0] if argv and argv[0] in COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    from portagent.contracts.errors import PortagentError

    argv = sys.argv[1:] if argv is None else list(argv)
    bad = next((a for a in argv if not _is_text(a)), None)
    if bad is not None:  # bytes that are not UTF-8 reach Python as lone surrogates: nothing could store them
        shown = bad.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
        sys.stderr.write(f"portagent: argument {shown!r} is not valid UTF-8 text\n")
        return EXIT_USAGE
    parser = build_parser(_named_command(argv))
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return EXIT_USAGE
    from portagent.core.logs import route_logs

    route_logs()
    module = importlib.import_module(_module(args.command))
    try:
        return int(module.run(args))
    except PortagentError as e:
        sys.stderr.write(f"portagent: {e.render()}\n")
        return e.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("portagent: interrupted\n")
        return 130
    except BrokenPipeError:  # the reader went away (``portagent … | head``): stop quietly, like other tools
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as e:
        if e.filename is None:  # not a file the user named or owns (a socket, a pipe): a real failure
            raise
        # a path that cannot be read or written (a parent that is a file, a read-only folder, a full
        # disk, a folder where a file goes): the user's environment, one line, like any usage error
        where = e.filename if e.filename2 is None else f"{e.filename} -> {e.filename2}"
        sys.stderr.write(f"portagent: {where}: {e.strerror or e}\n")
        return EXIT_USAGE


def _is_text(arg: str) -> bool:
    try:
        arg.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def entrypoint() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entrypoint()
