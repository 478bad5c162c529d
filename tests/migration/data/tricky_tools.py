"""Tool shapes that real programs have and that broke `portagent import`: tool names a Python module
cannot hold as they are (a keyword; two names differing only by `-` and `_`), parameters the SDK converts
before the function sees them (a pydantic model, a date), a LangChain parameter named `context`, and
parameters LangGraph injects at run time. One anthropic tool runner and one LangGraph agent hold them."""

from __future__ import annotations

import datetime as dt
import warnings
from typing import Annotated, Any

from anthropic import beta_tool
from langchain_core.tools import InjectedToolArg, tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

with warnings.catch_warnings():  # create_react_agent is deprecated in favour of langchain.agents
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent


class Ticket(BaseModel):
    title: str
    priority: int = 3


# --- anthropic -------------------------------------------------------------------------------------


@beta_tool(name="import")
def import_csv(path: str) -> str:
    """Import a CSV file."""
    return f"imported {path}"


@beta_tool(name="get-order")
def get_order_v1(order_id: str) -> str:
    """Read an order (v1)."""
    return f"v1 {order_id}"


@beta_tool(name="get_order")
def get_order_v2(order_id: str) -> str:
    """Read an order (v2)."""
    return f"v2 {order_id}"


@beta_tool
def open_ticket(ticket: Ticket, due: dt.date) -> dict[str, Any]:
    """Open a ticket due on a date."""
    return {"title": ticket.title.upper(), "priority": ticket.priority, "weekday": due.isoweekday()}


@beta_tool(name="call_original")
def shadowing(x: int) -> int:
    """A tool named like a helper of the generated module."""
    return x + 1


AGENT = {
    "model": "claude-sonnet-4-6",
    "system": "You handle orders and tickets.",
    "max_tokens": 512,
    "tools": [import_csv, get_order_v1, get_order_v2, open_ticket, shadowing],
}


# --- langgraph -------------------------------------------------------------------------------------


@tool("import")
def lg_import(path: str) -> str:
    """Import a CSV file."""
    return f"imported {path}"


@tool("get-forecast")
def forecast_v1(city: str) -> str:
    """Forecast (v1)."""
    return f"v1 {city}"


@tool("get_forecast")
def forecast_v2(city: str) -> str:
    """Forecast (v2)."""
    return f"v2 {city}"


@tool
def grade_answer(question: str, context: str) -> dict[str, Any]:
    """Is the answer grounded in the context?"""
    return {"grounded": question.split()[0].lower() in context.lower()}


@tool
def register(ticket: Ticket, due: dt.date) -> dict[str, Any]:
    """Register a ticket due on a date."""
    return {"title": ticket.title.upper(), "priority": ticket.priority, "weekday": due.isoweekday()}


@tool
def escalate(ticket_id: str, user_id: Annotated[str, InjectedToolArg]) -> str:
    """Escalate a ticket for the user the application injects."""
    return f"{ticket_id} by {user_id}"


with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    graph = create_react_agent(
        ChatOpenAI(model="gpt-4.1-mini", base_url="http://127.0.0.1:9/v1", api_key="sk-portagent-dummy"),
        [lg_import, forecast_v1, forecast_v2, grade_answer, register, escalate],
        prompt="You answer forecasts and tickets.",
        name="tricky",
    )


# --- settings a program gives beside its tools (each must be imported or reported) -------------------


class Verdict(BaseModel):
    answer: str
    confident: bool


@beta_tool(strict=True)
def refund(order_id: str) -> str:
    """Refund an order."""
    return f"refunded {order_id}"


SETTINGS = {
    "model": "claude-sonnet-4-6",
    "system": [{"type": "text", "text": "You refund orders."}, {"type": "text", "text": ""}],
    "max_tokens": 512,
    "tools": [refund, lambda order_id: order_id],
    "output_format": Verdict,
}


def _dynamic_prompt(state: dict) -> list:
    return state["messages"]


def _lg_graph(**kwargs: Any) -> Any:
    from langchain_core.messages import SystemMessage
    from langgraph.checkpoint.memory import InMemorySaver

    chat = ChatOpenAI(
        model="gpt-4.1-mini",
        base_url="http://127.0.0.1:9/v1",
        api_key="sk-portagent-dummy",
        top_p=0.5,
        seed=7,
    )
    options = {
        "system": {"prompt": SystemMessage(content="You are Tier-1 support.")},
        "dynamic": {"prompt": _dynamic_prompt},
        "paused": {
            "prompt": "You forecast.",
            "checkpointer": InMemorySaver(),
            "interrupt_before": ["tools"],
        },
    }[kwargs.pop("variant")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(
            chat,
            [
                forecast_v2,
                {
                    "type": "function",
                    "function": {
                        "name": "noop",
                        "description": "Nothing.",
                        "parameters": {"type": "object", "properties": {}},
                    },
                },
            ],
            name="settings",
            **options,
            **kwargs,
        )


SYSTEM_MESSAGE_GRAPH = _lg_graph(variant="system")
DYNAMIC_PROMPT_GRAPH = _lg_graph(variant="dynamic")
PAUSED_GRAPH = _lg_graph(variant="paused")
