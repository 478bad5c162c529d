"""The Anthropic Messages API adapter (the anthropic SDK's tool runner)."""
