"""Two independent agents in one file."""

from langchain_anthropic import ChatAnthropic
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent

llm = ChatAnthropic(model="claude-haiku-4-5")


@tool
def ping(text: str) -> str:
    """Echo the text."""
    return text


echo_agent = create_react_agent(llm, [ping], prompt="Echo.")
shout_agent = create_react_agent(llm, [ping], prompt="Shout.")
