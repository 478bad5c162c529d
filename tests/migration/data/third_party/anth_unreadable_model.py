"""The model is chosen by a parameter at run time: no model can be read."""

import anthropic

client = anthropic.Anthropic()
MODELS = {"fast": "claude-haiku-4-5", "smart": "claude-opus-4-1"}


def ask(question, tier):
    return client.messages.create(
        model=MODELS[tier], max_tokens=256, messages=[{"role": "user", "content": question}]
    )
