"""The tools of anth_async_loop.py, kept in a module of their own as people split a bot: the definitions
the model is sent, and a dispatch dict mapping each name to a function that takes the whole input dict."""

TOOLS = [
    {
        "name": "get_weather",
        "description": "Get the current weather for a city.",
        "input_schema": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
    {
        "name": "convert_currency",
        "description": "Convert an amount between two currencies.",
        "input_schema": {
            "type": "object",
            "properties": {
                "amount": {"type": "number"},
                "from_currency": {"type": "string"},
                "to_currency": {"type": "string"},
            },
            "required": ["amount", "from_currency", "to_currency"],
        },
    },
]


def get_weather(tool_input: dict) -> str:
    unit = tool_input.get("unit", "celsius")
    return f"18 degrees {unit} in {tool_input['city']}"


def convert_currency(params):
    return round(params["amount"] * 1.1, 2)


TOOL_HANDLERS = {"get_weather": get_weather, "convert_currency": convert_currency}
