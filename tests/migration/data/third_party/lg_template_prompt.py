"""``create_react_agent(model, tools, prompt=ChatPromptTemplate...)``: a prompt template with a fixed system
message and the conversation placeholder, given as the prompt itself."""

from langchain_core.prompts import ChatPromptTemplate
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent


@tool
def ping(host: str) -> str:
    """Ping a host."""
    return "pong"


prompt = ChatPromptTemplate.from_messages(
    [("system", "You are a network bot."), ("placeholder", "{messages}")]
)
agent = create_react_agent(ChatOpenAI(model="gpt-4o"), [ping], prompt=prompt)
