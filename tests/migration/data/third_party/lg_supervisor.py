"""A supervisor with two sub-agents as tools, and an approval inside one tool via ``interrupt()``;
several graphs in one file."""

from langchain_anthropic import ChatAnthropic
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent
from langgraph.types import interrupt

model = ChatAnthropic(model="claude-sonnet-4-5", temperature=0.3)


@tool
def web_lookup(query: str) -> str:
    """Look something up on the web."""
    return "result"


@tool
def compute(expression: str) -> str:
    """Evaluate an arithmetic expression."""
    return str(eval(expression, {}))


research_agent = create_react_agent(model, [web_lookup], prompt="You research facts.", name="researcher")
math_agent = create_react_agent(model, [compute], prompt="You do math.", name="mathematician")


@tool
def ask_researcher(question: str) -> str:
    """Ask the research agent a question."""
    result = research_agent.invoke({"messages": [("user", question)]})
    return result["messages"][-1].content


@tool
def ask_mathematician(problem: str) -> str:
    """Ask the math agent to solve a problem."""
    result = math_agent.invoke({"messages": [("user", problem)]})
    return result["messages"][-1].content


@tool
def send_report(to: str, body: str) -> str:
    """Email the final report."""
    answer = interrupt({"question": f"Send to {to}?"})
    return "sent" if answer == "yes" else "cancelled"


supervisor = create_react_agent(
    model,
    [ask_researcher, ask_mathematician, send_report],
    prompt="You coordinate a researcher and a mathematician.",
    name="supervisor",
)
