"""portagent: one agent definition, three vendor agent runtimes, one normalized trace."""

__version__ = "0.1.0"
