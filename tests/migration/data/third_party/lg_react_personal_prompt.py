"""The LangGraph docs' dynamic prompt: ``prompt=`` a function that writes the user's name from the run's
``config`` into the system message (computed per run: the import cannot read it), with a dict message."""

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent


@tool
def get_weather(city: str) -> str:
    """Get the weather for a city."""
    return f"It's always sunny in {city}!"


def prompt(state, config):
    user_name = config["configurable"].get("user_name")
    system_msg = f"You are a helpful assistant. Address the user as {user_name}."
    return [{"role": "system", "content": system_msg}] + state["messages"]


agent = create_react_agent(model=ChatOpenAI(model="gpt-4o"), tools=[get_weather], prompt=prompt)
