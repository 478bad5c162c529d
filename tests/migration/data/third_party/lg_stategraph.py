"""A hand-built LangGraph agent, as in the LangGraph quickstart: a ``StateGraph`` with a chatbot node
calling a tool-bound ``ChatAnthropic``, a ``ToolNode`` and ``tools_condition``."""

from langchain_anthropic import ChatAnthropic
from langchain_core.messages import SystemMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

SYSTEM = "You are a math tutor. Use the calculator for any arithmetic."


@tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: first factor
        b: second factor
    """
    return a * b


@tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


tools = [multiply, add]
llm = ChatAnthropic(model="claude-sonnet-4-5", max_tokens=2048)
llm_with_tools = llm.bind_tools(tools)


def chatbot(state: MessagesState):
    return {"messages": [llm_with_tools.invoke([SystemMessage(content=SYSTEM)] + state["messages"])]}


def log_state(state: MessagesState):
    print(len(state["messages"]))
    return {}


builder = StateGraph(MessagesState)
builder.add_node("chatbot", chatbot)
builder.add_node("tools", ToolNode(tools))
builder.add_node("log", log_state)
builder.add_edge(START, "log")
builder.add_edge("log", "chatbot")
builder.add_conditional_edges("chatbot", tools_condition)
builder.add_edge("tools", "chatbot")
graph = builder.compile(interrupt_before=["tools"])
