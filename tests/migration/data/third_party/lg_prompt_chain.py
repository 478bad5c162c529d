"""A hand-built graph in the older LangGraph tutorial shape: a ``ChatPromptTemplate`` with a system
message piped into a tool-bound ``ChatOpenAI`` (``prompt | llm.bind_tools(tools)``), an async model node
named ``agent``, a ``ToolNode`` named ``action`` and a routing function of the program's own."""

from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

prompt = ChatPromptTemplate.from_messages(
    [("system", "You are a librarian. Search the catalog before answering."), MessagesPlaceholder("messages")]
)
llm = ChatOpenAI(model="gpt-4.1", temperature=0.1)


@tool
def search_catalog(title: str, author: str | None = None) -> list[str]:
    """Search the library catalog by title, optionally narrowed to one author."""
    return [title]


tools = [search_catalog]
chain = prompt | llm.bind_tools(tools)


async def call_model(state: MessagesState):
    response = await chain.ainvoke(state)
    return {"messages": [response]}


def should_continue(state: MessagesState):
    last = state["messages"][-1]
    return "action" if getattr(last, "tool_calls", None) else END


workflow = StateGraph(MessagesState)
workflow.add_node("agent", call_model)
workflow.add_node("action", ToolNode(tools))
workflow.add_edge(START, "agent")
workflow.add_conditional_edges("agent", should_continue)
workflow.add_edge("action", "agent")
app = workflow.compile()
