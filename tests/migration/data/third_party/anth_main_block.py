"""A script whose loop runs at the top level under ``if __name__ == "__main__":`` (nothing of it runs on
import); tool definitions as dicts whose schemas come from pydantic models, plus list elements the
importer cannot read (a comprehension spread into the list, a factory call)."""

import anthropic
from pydantic import BaseModel, Field


class GetStockPrice(BaseModel):
    ticker: str = Field(description="The stock ticker symbol, e.g. AAPL")


def get_stock_price(ticker: str) -> float:
    return {"AAPL": 190.5}.get(ticker, 0.0)


def make_tool(name):
    return {"name": name, "description": name, "input_schema": {"type": "object", "properties": {}}}


EXTRA = {"get_news": "Latest headlines for a ticker."}

if __name__ == "__main__":
    client = anthropic.Anthropic()
    tools = [
        {
            "name": "get_stock_price",
            "description": "Get the current stock price for a given ticker symbol.",
            "input_schema": GetStockPrice.model_json_schema(),
        },
        *[{"name": n, "description": d, "input_schema": {"type": "object"}} for n, d in EXTRA.items()],
        make_tool("lookup"),
    ]
    response = client.messages.create(
        model="claude-opus-4-1",
        max_tokens=1024,
        system="You are a stock assistant.",
        tools=tools,
        tool_choice={"type": "any"},
        messages=[{"role": "user", "content": "What is AAPL at?"}],
    )
    print(response)
