"""Migration between SDKs (docs/migration.md).

- ``importing``: ``portagent import MODULE:OBJECT --from openai|adk|claude|anthropic|langgraph`` — a native
  definition read into an ``ImportDraft`` by one module per SDK (``from_openai``, ``from_adk``,
  ``from_claude``; ``from_anthropic`` and ``from_langgraph`` read a well-defined subset), written
  as AgentSpec / ToolSpecs / PermissionPolicy YAML plus ``import-report.md`` (``writer``, ``report``);
  handlers point at the original functions, ``shims`` converts where a calling convention differs;
- ``capabilities``: the provider capability matrix with installed SDK and CLI versions;
- ``portcheck``: what a spec needs that a target lacks, and the portability ratio;
- ``export``: a readable native program for one SDK (``export_openai``, ``export_adk``, ``export_claude``,
  ``export_anthropic``, ``export_langgraph``)
  whose tool bodies call portagent's ``ToolGateway``; ``exported`` is the small runtime they use.

Importing this package imports no vendor SDK; each ``from_*`` module imports its own, when asked.
"""

from __future__ import annotations
