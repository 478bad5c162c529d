"""A2A (agent-to-agent) for portagent: serve an AgentSpec as an A2A agent (``portagent a2a serve``).

Floor 7, beside ``mcp``: it drives runs through the runtime's public functions and never touches a
vendor SDK. The A2A SDK (``a2a-sdk``, extra ``a2a``) is imported lazily, inside the functions that
need it. docs/a2a.md.
"""
