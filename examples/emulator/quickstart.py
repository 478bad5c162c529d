"""Serve an emulator script and talk to it with the three official clients (dummy keys, no network).

    python examples/emulator/quickstart.py

Needs the ``dev`` extra (openai, anthropic, google-genai).
"""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import openai
from google import genai
from google.genai import types

from portagent.emulator import serve

SCRIPT = Path(__file__).with_name("weather.yaml")
QUESTION = "What's the weather in Paris?"


def main() -> None:
    with serve(SCRIPT, port=0) as emu:
        print(f"emulator on {emu.base_url}")

        # OpenAI Responses: the model calls get_weather, we answer, it uses the result.
        oa = openai.OpenAI(base_url=emu.openai_base_url, api_key="sk-dummy")
        tools = [{"type": "function", "name": "get_weather", "description": "Weather for a city",
                  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]
        first = oa.responses.create(model="gpt-4.1-mini", input=QUESTION, tools=tools)
        call = next(o for o in first.output if o.type == "function_call")
        print("openai asks:", call.name, call.arguments)
        history = [{"role": "user", "content": QUESTION}, *[o.model_dump(exclude_none=True) for o in first.output],
                   {"type": "function_call_output", "call_id": call.call_id, "output": json.dumps({"forecast": "sunny"})}]
        print("openai says:", oa.responses.create(model="gpt-4.1-mini", input=history, tools=tools).output_text)

        # Anthropic Messages, streamed.
        an = anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="sk-ant-dummy")
        with an.messages.stream(model="claude-sonnet-4-6", max_tokens=256,
                                messages=[{"role": "user", "content": QUESTION}],
                                tools=[{"name": "get_weather", "input_schema": {"type": "object"}}]) as stream:
            message = stream.get_final_message()
        print("anthropic:", [(b.type, getattr(b, "text", None) or getattr(b, "input", None)) for b in message.content])

        # Gemini generateContent.
        gm = genai.Client(api_key="dummy", http_options=types.HttpOptions(base_url=emu.gemini_base_url))
        reply = gm.models.generate_content(model="gemini-2.5-flash", contents=QUESTION)
        print("gemini:", [(fc.name, fc.args) for fc in reply.function_calls or []], reply.usage_metadata.total_token_count)

        # What the clients sent, secrets masked.
        for entry in emu.requests():
            print(entry["seq"], entry["path"], entry["conversation"], "turn", entry["cursor"], entry["status"])


if __name__ == "__main__":
    main()
