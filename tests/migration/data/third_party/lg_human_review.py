"""Human-in-the-loop as the LangGraph docs write it: the model node routes tool calls to a
``human_review`` node that pauses with ``interrupt()`` and then sends them on to the tool node with
``Command(goto=...)``."""

from typing import Literal

from langchain_anthropic import ChatAnthropic
from langchain_core.messages import SystemMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt

INSTRUCTIONS = "You manage the user's calendar. Always confirm the time zone."


@tool
def create_event(title: str, start: str, minutes: int = 30) -> str:
    """Create a calendar event."""
    return f"created {title}"


model = ChatAnthropic(model="claude-sonnet-4-5").bind_tools([create_event])


def call_llm(state: MessagesState) -> Command[Literal["human_review", "__end__"]]:
    reply = model.invoke([SystemMessage(INSTRUCTIONS), *state["messages"]])
    return Command(goto="human_review" if reply.tool_calls else END, update={"messages": [reply]})


def human_review(state: MessagesState) -> Command[Literal["run_tool", "call_llm"]]:
    calls = state["messages"][-1].tool_calls
    decision = interrupt({"question": "Run these tool calls?", "tool_calls": calls})
    if decision.get("action") == "approve":
        return Command(goto="run_tool")
    return Command(goto="call_llm", update={"messages": [{"role": "user", "content": "Rejected."}]})


builder = StateGraph(MessagesState)
builder.add_node(call_llm)
builder.add_node(human_review)
builder.add_node("run_tool", ToolNode([create_event]))
builder.add_edge(START, "call_llm")
builder.add_edge("run_tool", "call_llm")
graph = builder.compile(checkpointer=InMemorySaver())
