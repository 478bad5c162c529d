"""A sync loop whose tools each take the whole ``input`` dict: the dispatch dict written inside the
loop's function, the function looked up with ``.get`` and called as ``fn(tool_use.input)``; a helper
``execute_tool(name, args)`` calls another table the same way; one tool is called with ``**`` keywords."""

import anthropic

client = anthropic.Anthropic()
MODEL = "claude-3-7-sonnet-latest"

tools = [
    {
        "name": "calculator",
        "description": "Evaluate a math expression.",
        "input_schema": {
            "type": "object",
            "properties": {"expression": {"type": "string"}},
            "required": ["expression"],
        },
    },
    {
        "name": "word_count",
        "description": "Count the words of a text.",
        "input_schema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    },
    {
        "name": "reverse",
        "description": "Reverse a text.",
        "input_schema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    },
]


def calculator(args):
    return str(eval(args["expression"], {"__builtins__": {}}))


def word_count(data: dict) -> int:
    return len(data["text"].split())


def reverse(text: str) -> str:
    return text[::-1]


KEYWORD_TOOLS = {"reverse": reverse}


def execute_tool(name, args):
    if name in KEYWORD_TOOLS:
        return KEYWORD_TOOLS[name](**args)
    return {"word_count": word_count}[name](args)


def ask(question: str) -> str:
    handlers = {"calculator": calculator}
    messages = [{"role": "user", "content": question}]
    response = client.messages.create(model=MODEL, max_tokens=512, tools=tools, messages=messages)
    while response.stop_reason == "tool_use":
        results = []
        for tool_use in [b for b in response.content if b.type == "tool_use"]:
            fn = handlers.get(tool_use.name)
            output = fn(tool_use.input) if fn is not None else execute_tool(tool_use.name, tool_use.input)
            results.append({"type": "tool_result", "tool_use_id": tool_use.id, "content": str(output)})
        messages += [{"role": "assistant", "content": response.content}, {"role": "user", "content": results}]
        response = client.messages.create(model=MODEL, max_tokens=512, tools=tools, messages=messages)
    return response.content[0].text
