"""Google ADK / Gemini mapping helpers: usage, finish reasons, final text and the output-schema
declaration (what ADK's output schema can express is a rule: ``rules.output_schema_problems``).

Pure functions with no SDK import. ``portagent.adapters.adk.agent`` uses them.

Usage (google-genai ``GenerateContentResponseUsageMetadata``; Gemini API reference "UsageMetadata"):

    promptTokenCount         total input, cached content included      → input_tokens (OTel: input
    toolUsePromptTokenCount  input of built-in tool use (search, …)      includes cache; plus tool-use)
    cachedContentTokenCount  the cached part of the prompt             → cache_read_tokens
    candidatesTokenCount     visible output, thoughts EXCLUDED         ┐
    thoughtsTokenCount       thinking tokens                           ┴→ output_tokens (OTel: output
                                                                          includes reasoning) and
                                                                          reasoning_tokens = thoughts
Gemini reports no cache-write bucket (explicit caches are created by a separate API call), so
``cache_write_tokens`` is always 0. Google bills thinking tokens as output, so the cost computed from
``output_tokens`` is right.
"""

from __future__ import annotations

from typing import Any

from portagent.adapters._shared import reply_finish

# ADK's output-schema limits are a portability rule: they live in ``rules.py``, which ``validate`` imports
# without this module's run-time machinery (``_shared``); named here too for the adapter and its tests.
from portagent.adapters.adk.rules import output_schema_problems as output_schema_problems

# --- usage and finish reasons ---------------------------------------------------------------------


def _count(usage: Any, name: str) -> int:
    value = getattr(usage, name, None) if usage is not None else None
    return int(value or 0)


def usage_fields(usage: Any) -> dict[str, int]:
    """``record_model_call`` token fields (OTel semantics) from a genai usage-metadata object."""
    thoughts = _count(usage, "thoughts_token_count")
    return {
        "input_tokens": _count(usage, "prompt_token_count") + _count(usage, "tool_use_prompt_token_count"),
        "output_tokens": _count(usage, "candidates_token_count") + thoughts,
        "cache_read_tokens": _count(usage, "cached_content_token_count"),
        "cache_write_tokens": 0,
        "reasoning_tokens": thoughts,
    }


def finish_reason(vendor: str | None, *, has_calls: bool, error_code: str | None = None) -> str:
    """Gemini's ``finishReason`` normalized to stop / tool_calls / length / content_filter / error / other
    (``_shared.reply_finish``, the langgraph provider's Gemini chat model reads it the same way).

    A function-call turn ends with ``STOP`` on Gemini (there is no separate tool-use reason), so function
    calls make it ``tool_calls``: the one finish whose calls run. Any other reason with calls — the token
    limit, the content filter, Gemini's own ``MALFORMED_FUNCTION_CALL`` (``error``), ``OTHER``, a reason newer
    than this table — runs none of them (``calls_not_run``). An error code ADK sets on a ``STOP`` answer
    (``error_code``: no content) is ``error``; one without a finish reason, the block reason of a prompt
    Gemini refused (no candidate), is ``content_filter``."""
    if error_code and vendor is None:
        # no finish reason, an error code and (``after_model``) nothing in it: Gemini refused the prompt itself
        # (only ``promptFeedback.blockReason``, which ADK makes the error code) — a filtered reply holding
        # nothing, as the trace importer reads it
        return "content_filter"
    if error_code and vendor == "STOP":
        return "error"
    if vendor is None and has_calls:
        # a chunk, not a whole reply: with progressive SSE off (ADK_DISABLE_PROGRESSIVE_SSE_STREAMING) ADK hands
        # on each chunk of a stream as a response, and a call's chunk may come before the one that says STOP.
        # Nothing said the reply was cut; ADK runs each chunk's calls, as it did before this table existed.
        return "tool_calls"
    return reply_finish("gemini", vendor, has_calls=has_calls)


def calls_not_run(finish: str, calls: list[str | None]) -> list[str]:
    """The names of a response's function calls that are not run: all of them unless its finish reason is
    ``tool_calls`` (Gemini said ``STOP``), as on every provider; else none."""
    return [str(name or "") for name in calls] if finish != "tool_calls" else []


def final_text(parts: list[Any] | None) -> str | None:
    """The visible text of a final response (thought parts dropped), or None when it has none."""
    texts = [p.text for p in parts or [] if getattr(p, "text", None) and not getattr(p, "thought", False)]
    return "".join(texts) if texts else None


def declare_output_schema(llm_request: Any, schema: dict[str, Any]) -> None:
    """Show the model the spec's output schema in ADK's ``set_model_response`` tool.

    On the Gemini Developer API, an agent with tools and an ``output_schema`` answers through ADK's
    ``set_model_response`` tool. For a dict schema ADK 2.13 declares that tool as
    ``{"response": {"type": "object", "additionalProperties": true}}``: the schema itself never
    reaches the model. The tool reads ``args["response"]``, so declaring the schema under
    ``response`` keeps ADK's mechanism and tells the model the contract."""
    for tool in (llm_request.config.tools or []) if llm_request.config else []:
        for decl in getattr(tool, "function_declarations", None) or []:
            if decl.name == "set_model_response":
                decl.parameters = None
                decl.parameters_json_schema = {
                    "type": "object",
                    "properties": {"response": schema},
                    "required": ["response"],
                }
