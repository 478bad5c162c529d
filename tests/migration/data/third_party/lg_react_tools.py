"""A LangGraph ReAct agent the way the LangChain docs write one: ``ChatOpenAI`` pointed at a base URL,
tools as ``@tool`` with ``Annotated`` arguments, with an ``args_schema`` pydantic model, and through
``StructuredTool.from_function``; a checkpointer and ``interrupt_before=["tools"]`` for approval."""

from typing import Annotated, Literal

from langchain_core.tools import StructuredTool, tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import MemorySaver
from langgraph.prebuilt import create_react_agent
from pydantic import BaseModel, Field

SYSTEM_PROMPT = "You are a travel assistant. Check flights before booking anything."

llm = ChatOpenAI(model="gpt-4o-mini", base_url="https://llm.example.com/v1", temperature=0)


@tool
def search_flights(
    origin: Annotated[str, "IATA code of the departure airport"],
    destination: Annotated[str, "IATA code of the arrival airport"],
    max_stops: Annotated[int, "How many stops at most"] = 1,
) -> list[dict]:
    """Search flights between two airports."""
    return [{"flight": "XY1", "origin": origin, "destination": destination}]


class BookingInput(BaseModel):
    flight_id: str = Field(description="The flight to book, as returned by search_flights")
    seat_class: Literal["economy", "business"] = Field("economy", description="Cabin class")
    passengers: int = Field(ge=1, le=9, description="Number of passengers")


@tool("book_flight", args_schema=BookingInput)
def book_flight(flight_id: str, passengers: int, seat_class: str = "economy") -> str:
    """Book a flight for the given passengers."""
    return f"booked {flight_id} x{passengers} in {seat_class}"


def _convert(amount: float, currency: str) -> str:
    """Convert an amount in EUR to another currency."""
    return f"{amount * 1.1:.2f} {currency}"


convert_currency = StructuredTool.from_function(
    func=_convert, name="convert_currency", description="Convert an amount in EUR to another currency."
)

agent = create_react_agent(
    llm,
    tools=[search_flights, book_flight, convert_currency],
    prompt=SYSTEM_PROMPT,
    checkpointer=MemorySaver(),
    interrupt_before=["tools"],
    name="travel_agent",
)

if __name__ == "__main__":
    print(
        agent.invoke({"messages": [("user", "Fly me from CDG to JFK")]}, {"configurable": {"thread_id": "1"}})
    )
