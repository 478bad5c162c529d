"""``create_react_agent`` as the LangGraph docs show it: tools imported from lg_shared_tools.py, a custom
state (an ``AgentState`` subclass), a ``prompt=`` function putting a fixed system message in front of the
messages, ``checkpointer=MemorySaver()`` and ``interrupt_before=["tools"]``."""

from langchain_anthropic import ChatAnthropic
from langchain_core.messages import AnyMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import MemorySaver
from langgraph.prebuilt import create_react_agent
from langgraph.prebuilt.chat_agent_executor import AgentState
from lg_shared_tools import get_stock_price, search_web

SYSTEM_PROMPT = "You are a markets analyst. Check the latest price before giving an opinion."


class CustomState(AgentState):
    user_name: str


def prompt(state: AgentState, config: RunnableConfig) -> list[AnyMessage]:
    return [SystemMessage(content=SYSTEM_PROMPT)] + state["messages"]


model = ChatAnthropic(model="claude-3-7-sonnet-latest", max_tokens=1000)
agent = create_react_agent(
    model,
    tools=[search_web, get_stock_price],
    prompt=prompt,
    state_schema=CustomState,
    checkpointer=MemorySaver(),
    interrupt_before=["tools"],
    name="markets_analyst",
)
