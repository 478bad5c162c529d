"""The "build an agent class" tutorial shape: an ``Agent`` whose ``__init__`` keeps the model, prompt
and tools (with defaults) on ``self``, tools typed as ``ToolParam`` and dispatched by name through
``getattr`` on a tools module-like class, and a ``run`` method holding the loop."""

from anthropic import Anthropic
from anthropic.types import ToolParam

MODEL = "claude-3-5-haiku-latest"

TOOLS: list[ToolParam] = [
    ToolParam(
        name="calculator",
        description="Evaluate a basic arithmetic expression like '2 + 2'.",
        input_schema={
            "type": "object",
            "properties": {"expression": {"type": "string", "description": "The expression"}},
            "required": ["expression"],
        },
    ),
    ToolParam(
        name="word_count",
        description="Count the words in a text.",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    ),
]


def calculator(expression: str) -> str:
    return str(sum(int(x) for x in expression.split("+")))


def word_count(text: str) -> int:
    return len(text.split())


class Agent:
    def __init__(
        self, system: str = "You are a careful assistant.", tools=None, model: str = MODEL, max_tokens=1024
    ):
        self.client = Anthropic()
        self.system = system
        self.tools = tools or TOOLS
        self.model = model
        self.max_tokens = max_tokens
        self.history = []

    def run(self, user_input: str) -> str:
        self.history.append({"role": "user", "content": user_input})
        while True:
            response = self.client.messages.create(
                model=self.model,
                max_tokens=self.max_tokens,
                system=self.system,
                tools=self.tools,
                messages=self.history,
            )
            self.history.append({"role": "assistant", "content": response.content})
            calls = [b for b in response.content if b.type == "tool_use"]
            if not calls:
                return response.content[0].text
            results = []
            for call in calls:
                output = globals()[call.name](**call.input)
                results.append({"type": "tool_result", "tool_use_id": call.id, "content": str(output)})
            self.history.append({"role": "user", "content": results})
