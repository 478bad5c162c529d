"""Shapes that once broke the import: the model as a ``str`` enum member (written into YAML as an enum
object: a traceback), the call in a function nested inside the one to import, and the request settings
spread from a dict written in the call (``**{**BASE, "system": s}``) that holds a parameter."""

import enum

import anthropic
from anthropic import beta_tool


class Model(str, enum.Enum):  # noqa: UP042 (the pre-3.11 shape third-party code uses)
    FAST = "claude-haiku-4-5"
    SMART = "claude-opus-4-1"


@beta_tool
def lookup(term: str) -> str:
    """Look a term up.

    Args:
        term: The term.
    """
    return term


BASE = {"max_tokens": 100, "temperature": 0.5}
client = anthropic.Anthropic()


def answer(question, system):
    def ask():
        return client.beta.messages.tool_runner(
            **{**BASE, "system": system},
            model=Model.FAST,
            tools=[lookup],
            messages=[{"role": "user", "content": question}],
        ).until_done()

    return ask()
