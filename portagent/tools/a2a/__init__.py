"""Remote A2A agents as governed tool sources (``a2a_agents:`` in an AgentSpec; docs/a2a.md)."""
