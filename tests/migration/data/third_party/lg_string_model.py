"""``create_react_agent(model="openai:gpt-4o", ...)``: the model named by a ``provider:model`` string,
which LangGraph builds with ``langchain``'s ``init_chat_model``."""

from langchain_core.tools import tool
from langgraph.checkpoint.memory import MemorySaver
from langgraph.prebuilt import create_react_agent


@tool
def get_weather(city: str) -> str:
    """Get the weather for a city."""
    return f"It's always sunny in {city}!"


agent = create_react_agent(
    model="openai:gpt-4o",
    tools=[get_weather],
    prompt="You are a helpful weather assistant.",
    checkpointer=MemorySaver(),
)
