"""An agent class: the model, tools and prompt are attributes set in __init__, read only at run time;
tools built by a comprehension."""

import anthropic
from anthropic import beta_tool


@beta_tool
def lookup(term: str) -> str:
    """Look a term up.

    Args:
        term: The term.
    """
    return term


ALL = [lookup]


class Agent:
    def __init__(self, model="claude-sonnet-4-5"):
        self.client = anthropic.Anthropic()
        self.model = model

    def run(self, text):
        return self.client.beta.messages.tool_runner(
            model="claude-sonnet-4-5",
            max_tokens=1000,
            system=self.system_prompt(),
            tools=[t for t in ALL if t.name != "x"],
            max_iterations=8,
            messages=[{"role": "user", "content": text}],
        ).until_done()

    def system_prompt(self):
        return "Look terms up."
