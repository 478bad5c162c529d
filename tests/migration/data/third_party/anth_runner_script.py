"""A weather bot in the shape of the anthropic SDK's tool-runner example: ``@beta_tool`` functions, the
model from the environment with a default, the system prompt as cached text blocks, and the runner
built inside ``main()``."""

import json
import os

import anthropic
from anthropic import beta_tool

MODEL = os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5")

client = anthropic.Anthropic()


@beta_tool
def get_weather(location: str, unit: str = "fahrenheit") -> str:
    """Get the current weather in a given location.

    Args:
        location: The city and state, e.g. San Francisco, CA
        unit: Temperature unit, either 'celsius' or 'fahrenheit'
    """
    return json.dumps({"location": location, "temperature": "68", "unit": unit})


@beta_tool
def get_time(timezone: str) -> str:
    """Get the current time in a timezone.

    Args:
        timezone: An IANA timezone name, e.g. America/Los_Angeles
    """
    return "12:00"


def main() -> None:
    runner = client.beta.messages.tool_runner(
        max_tokens=1024,
        model=MODEL,
        tools=[get_weather, get_time],
        system=[
            {"type": "text", "text": "You are a concise weather assistant."},
            {
                "type": "text",
                "text": "Always give temperatures in both units.",
                "cache_control": {"type": "ephemeral"},
            },
        ],
        messages=[{"role": "user", "content": "What is the weather in San Francisco?"}],
    )
    for message in runner:
        print(message.content)


if __name__ == "__main__":
    main()
