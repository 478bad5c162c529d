"""The LangGraph quickstart shape: plain typed functions (no ``@tool``) given to ``create_react_agent``,
which wraps them itself; a ``SystemMessage`` prompt."""

from langchain_anthropic import ChatAnthropic
from langchain_core.messages import SystemMessage
from langgraph.prebuilt import create_react_agent


def get_weather(city: str) -> str:
    """Get weather for a given city."""
    return f"It's always sunny in {city}!"


async def get_population(city: str, year: int = 2024) -> int:
    """Get the population of a city in a given year."""
    return 1000


agent = create_react_agent(
    model=ChatAnthropic(model="claude-3-7-sonnet-latest", temperature=0),
    tools=[get_weather, get_population],
    prompt=SystemMessage(content="You are a helpful assistant"),
)
