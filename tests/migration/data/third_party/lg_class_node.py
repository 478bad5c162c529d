"""A hand-built graph whose model node is an object, as in LangGraph's customer-support tutorial and
many blog posts: ``class Agent`` keeps the tool-bound chat model and its prompt on ``self`` and is called
through ``__call__``; the state is a ``MessagesState`` subclass; tools come from lg_shared_tools.py; the
graph keeps threads with ``MemorySaver``."""

from langchain_core.messages import SystemMessage
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from lg_shared_tools import get_stock_price, search_web


class State(MessagesState):
    summary: str


class Agent:
    def __init__(self, tools, system: str = "You are a financial research assistant. Cite your sources."):
        self.system = system
        self.llm = ChatOpenAI(model="gpt-4o", temperature=0).bind_tools(tools)

    def __call__(self, state: State):
        messages = [SystemMessage(content=self.system)] + state["messages"]
        return {"messages": [self.llm.invoke(messages)]}


tools = [search_web, get_stock_price]
builder = StateGraph(State)
builder.add_node("agent", Agent(tools))
builder.add_node("tools", ToolNode(tools))
builder.add_edge(START, "agent")
builder.add_conditional_edges("agent", tools_condition, ["tools", END])
builder.add_edge("tools", "agent")
graph = builder.compile(checkpointer=MemorySaver())
