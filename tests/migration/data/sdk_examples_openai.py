"""An openai-agents agent written the way the SDK's own examples write them (examples/customer_service,
examples/basic/tools.py, examples/handoffs): a context dataclass read and written through
``RunContextWrapper``, tools returning pydantic models, a handoff with ``on_handoff`` and an input
filter, and an ``output_type`` model."""

from __future__ import annotations

from agents import Agent, RunContextWrapper, function_tool, handoff
from agents.extensions import handoff_filters
from pydantic import BaseModel


class AirlineAgentContext(BaseModel):
    passenger_name: str | None = None
    seat_number: str | None = None
    confirmation_number: str | None = None


class Booking(BaseModel):
    seat: str | None
    passenger: str | None
    confirmed: bool


class SeatAnswer(BaseModel):
    seat: str
    confirmed: bool


@function_tool
async def update_seat(context: RunContextWrapper[AirlineAgentContext], new_seat: str) -> str:
    """Update the seat for the passenger.

    Args:
        new_seat: The new seat to update to.
    """
    context.context.seat_number = new_seat
    context.context.confirmation_number = "CONF-" + new_seat
    return f"Updated seat to {new_seat}"


@function_tool
def current_booking(wrapper: RunContextWrapper[AirlineAgentContext]) -> Booking:
    """Read the passenger's booking as it stands."""
    ctx = wrapper.context
    return Booking(seat=ctx.seat_number, passenger=ctx.passenger_name, confirmed=ctx.seat_number is not None)


@function_tool
def usage_so_far(wrapper: RunContextWrapper[AirlineAgentContext]) -> int:
    """How many requests the run made (reads the SDK's usage, which has no portable equivalent)."""
    return wrapper.usage.requests


async def on_seat_handoff(context: RunContextWrapper[AirlineAgentContext]) -> None:
    context.context.confirmation_number = "HANDED-OFF"


faq_agent = Agent[AirlineAgentContext](
    name="faq_agent",
    handoff_description="Answers questions about the airline.",
    instructions="Answer the customer's question.",
)  # no model: the SDK's default model and its default settings (not a choice of the author's)

seat_booking_agent = Agent[AirlineAgentContext](
    name="seat_booking_agent",
    handoff_description="Updates a seat on a flight.",
    instructions="Update the seat with update_seat, read it back with current_booking, then answer.",
    model="gpt-4.1-mini",
    tools=[update_seat, current_booking],
    output_type=SeatAnswer,
)

triage_agent = Agent[AirlineAgentContext](
    name="triage_agent",
    instructions="Route the customer to the right agent.",
    model="gpt-4.1-mini",
    tools=[usage_so_far],
    handoffs=[
        faq_agent,
        handoff(
            agent=seat_booking_agent,
            on_handoff=on_seat_handoff,
            input_filter=handoff_filters.remove_all_tools,
        ),
    ],
)
