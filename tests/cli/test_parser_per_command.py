"""A command line naming a known command builds only that subcommand's parser (start-up time); it must
parse, print help and refuse bad arguments exactly as the whole parser does."""

from __future__ import annotations

import contextlib
import io

import pytest

from portagent import cli


def _outcome(parser_only: str | None, argv: list[str]) -> tuple[object, str, str]:
    parser = cli.build_parser(parser_only)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            result: object = vars(parser.parse_args(argv))
        except SystemExit as e:
            result = ("exit", e.code)
    return result, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("command", cli.COMMANDS)
def test_help_is_the_same_from_the_single_command_parser(command: str) -> None:
    assert _outcome(command, [command, "--help"]) == _outcome(None, [command, "--help"])


@pytest.mark.parametrize(
    "argv",
    [
        ["validate", "examples/support_desk", "--provider", "openai"],
        ["validate", "x", "--provider", "nope"],
        ["validate"],
        ["eval", "suite.yaml", "--replay", "--workers", "2"],
        ["eval", "suite.yaml", "--workers", "many"],
        ["demo", "--frobnicate"],
    ],
)
def test_parsing_and_usage_errors_are_the_same(argv: list[str]) -> None:
    assert _outcome(cli._named_command(argv), argv) == _outcome(None, argv)


def test_anything_but_a_known_command_first_gets_the_whole_parser() -> None:
    assert cli._named_command([]) is None
    assert cli._named_command(["--version"]) is None
    assert cli._named_command(["valdate", "x"]) is None  # a typo still gets "invalid choice" and the list
    assert cli._named_command(["validate", "x"]) == "validate"
