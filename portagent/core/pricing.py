"""Model cost from a maintained price source (``genai-prices``, which bundles its data: no network).

Cost is ``computed`` when the model is in the price table, ``unknown`` otherwise — never a silent 0.
"""

from __future__ import annotations

from functools import lru_cache

PRICE_PROVIDER: dict[str, str | None] = {
    "openai": "openai",
    "claude": "anthropic",
    "adk": "google",
    "anthropic": "anthropic",
    "langgraph": None,  # the chat model's vendor varies: genai-prices finds it by the model id
}


@lru_cache(maxsize=256)
def _price(
    provider: str, model: str, input_tokens: int, output_tokens: int, cache_read: int, cache_write: int
) -> float | None:
    try:
        from genai_prices import Usage, calc_price
    except ImportError:  # pragma: no cover - genai-prices is a core dependency
        return None
    try:
        # genai-prices counts input_tokens including the cache buckets (the OTel semantics we keep).
        usage = Usage(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cache_read_tokens=cache_read or None,
            cache_write_tokens=cache_write or None,
        )
        calc = calc_price(usage, model, provider_id=PRICE_PROVIDER.get(provider, provider))
    except Exception:  # the package raises LookupError-like errors for unknown models
        return None
    return float(calc.total_price)


def model_cost(
    provider: str,
    model: str,
    *,
    input_tokens: int,
    output_tokens: int,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
) -> float | None:
    """USD cost of one model call, or None when the model has no known price."""
    return _price(provider, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)
