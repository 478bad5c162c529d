"""Two more ways to hand ``add_node`` a model node, from LangGraph's multi-agent tutorials: a
``functools.partial`` fixing the node function's model and prompt (``graph``), and a ``prompt | model``
chain given as the node itself (``chain_graph``)."""

import functools

from langchain_core.messages import SystemMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition


@tool
def ping(host: str) -> str:
    """Ping a host."""
    return "pong"


def agent_node(state, llm, system):
    return {"messages": [llm.invoke([SystemMessage(content=system)] + state["messages"])]}


b = StateGraph(MessagesState)
b.add_node(
    "agent",
    functools.partial(agent_node, llm=ChatOpenAI(model="gpt-4o-mini").bind_tools([ping]), system="You ping."),
)
b.add_node("tools", ToolNode([ping]))
b.add_edge(START, "agent")
b.add_conditional_edges("agent", tools_condition)
b.add_edge("tools", "agent")
graph = b.compile()

prompt = ChatPromptTemplate.from_messages(
    [("system", "You are a network bot."), ("placeholder", "{messages}")]
)
c = StateGraph(MessagesState)
c.add_node("agent", prompt | ChatOpenAI(model="gpt-4.1").bind_tools([ping]))
c.add_node("tools", ToolNode([ping]))
c.add_edge(START, "agent")
c.add_conditional_edges("agent", tools_condition)
c.add_edge("tools", "agent")
chain_graph = c.compile()
