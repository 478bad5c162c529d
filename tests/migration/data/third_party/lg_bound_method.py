"""A model node that is a bound method: ``add_node("assistant", assistant.call_model)``, the object
holding an Anthropic chat model bound to its tools and a ``prompt | model`` chain; the graph pauses before
its tools (``interrupt_before=["tools"]``) and keeps threads with ``MemorySaver``."""

from langchain_anthropic import ChatAnthropic
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.tools import tool
from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition


@tool
def lookup_booking(booking_id: str) -> dict:
    """Look a hotel booking up by its id."""
    return {"id": booking_id, "status": "confirmed"}


@tool
def cancel_booking(booking_id: str, reason: str = "") -> str:
    """Cancel a hotel booking."""
    return "cancelled"


class HotelAssistant:
    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "You are a hotel booking assistant. Confirm before cancelling anything."),
            ("placeholder", "{messages}"),
        ]
    )

    def __init__(self, tools):
        self.tools = tools
        self.chain = self.prompt | ChatAnthropic(model="claude-3-5-haiku-latest", temperature=0.3).bind_tools(
            tools
        )

    def call_model(self, state: MessagesState):
        response = self.chain.invoke({"messages": state["messages"]})
        return {"messages": [response]}


tools = [lookup_booking, cancel_booking]
assistant = HotelAssistant(tools)

workflow = StateGraph(MessagesState)
workflow.add_node("assistant", assistant.call_model)
workflow.add_node("tools", ToolNode(tools))
workflow.set_entry_point("assistant")
workflow.add_conditional_edges("assistant", tools_condition)
workflow.add_edge("tools", "assistant")
app = workflow.compile(checkpointer=MemorySaver(), interrupt_before=["tools"])
