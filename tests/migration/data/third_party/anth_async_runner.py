"""An async tool runner: ``AsyncAnthropic``, ``@beta_async_tool`` functions, the system prompt as a list
of text blocks with ``cache_control``, ``await runner.until_done()``."""

import asyncio

from anthropic import AsyncAnthropic, beta_async_tool

client = AsyncAnthropic()


@beta_async_tool
async def fetch_page(url: str) -> str:
    """Fetch a web page and return its text.

    Args:
        url: The address to fetch.
    """
    return f"<html>{url}</html>"


@beta_async_tool
async def summarize(text: str, max_words: int = 50) -> str:
    """Summarize a text.

    Args:
        text: What to summarize.
        max_words: Length limit.
    """
    return text[:max_words]


async def main() -> None:
    runner = client.beta.messages.tool_runner(
        model="claude-opus-4-1",
        max_tokens=4096,
        system=[
            {
                "type": "text",
                "text": "You are a research assistant. Fetch sources before you summarize them.",
                "cache_control": {"type": "ephemeral"},
            }
        ],
        tools=[fetch_page, summarize],
        messages=[{"role": "user", "content": "Summarize https://example.com"}],
    )
    final = await runner.until_done()
    print(final.content)


if __name__ == "__main__":
    asyncio.run(main())
