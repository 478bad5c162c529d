"""The graph is only built inside a function."""

from langchain_anthropic import ChatAnthropic
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent


@tool
def ping(text: str) -> str:
    """Echo the text."""
    return text


def build_agent(model_name: str = "claude-haiku-4-5"):
    return create_react_agent(ChatAnthropic(model=model_name), [ping], prompt="Echo.")
