"""Two agents in one file: a triage bot and a billing bot, each with its own loop."""

import anthropic
from anthropic import beta_tool

client = anthropic.Anthropic()


@beta_tool
def route(team: str) -> str:
    """Route the conversation to a team.

    Args:
        team: billing or tech.
    """
    return team


@beta_tool
def refund(order_id: str, amount_eur: float) -> str:
    """Refund an order.

    Args:
        order_id: The order.
        amount_eur: How much.
    """
    return "ok"


def triage(text):
    return client.beta.messages.tool_runner(
        model="claude-haiku-4-5",
        max_tokens=512,
        system="Route the user.",
        tools=[route],
        messages=[{"role": "user", "content": text}],
    ).until_done()


def billing(text):
    return client.beta.messages.tool_runner(
        model="claude-sonnet-4-5",
        max_tokens=1024,
        system="Handle refunds.",
        tools=[refund],
        messages=[{"role": "user", "content": text}],
    ).until_done()
