"""The SDK README's tool runner: ``client.beta.messages.tool_runner`` with ``@beta_tool`` functions
imported from a module of their own, iterated message by message."""

import anthropic
from anth_beta_tools_mod import calculate, get_weather

client = anthropic.Anthropic()


def main() -> None:
    runner = client.beta.messages.tool_runner(
        max_tokens=1024,
        model="claude-sonnet-4-5",
        tools=[get_weather, calculate],
        messages=[{"role": "user", "content": "What is the weather in SF, and what is 2+2?"}],
    )
    for message in runner:
        print(message.content)


if __name__ == "__main__":
    main()
