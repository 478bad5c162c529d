"""Can provider P run this spec, and if not, why — the one portability verdict.

Every place that answers the question asks this module: ``validate --provider`` (problems), the run
preflight (refuses before anything starts), ``port-check`` (lists every lack), the eval plan (refuses a
provider × agent version before any worker starts) and ``export``. Each answer carries the field path
that causes it, so a user can find the line to change.

What decides (in this order, so the first lack of a run's refusal is stable):

1. the capability profile (``contracts/capabilities.py``, data, read by ``contracts/portability.py``):
   ``required_capabilities``, the kinds of delegation edges, cycles, output schemas, granted built-ins,
   MCP tool sources;
2. a model id for the provider on every agent (a configuration mistake, so a run refuses it as a
   usage error, exit 2, not as an unsupported feature);
3. what one vendor runtime cannot express although its profile has the capability, from that vendor's
   SDK-free ``rules.py``: Gemini's schema subset and ADK's one-parent agent tree (``adk/rules.py``),
   Claude Code's flat subagents, absent temperature and reserved subagent tool (``claude/rules.py``),
   and OpenAI's strict-mode fallback (a note, not a lack: ``openai/rules.py``).

The order is fixed by ``contracts.portability.judge``, which adapters' own preflights call too.

No vendor SDK is imported here or by the rule modules: the verdict is static and fast.
"""

from __future__ import annotations

from collections.abc import Callable

from portagent.adapters.adk import rules as adk_rules
from portagent.adapters.anthropic import rules as anthropic_rules
from portagent.adapters.claude import rules as claude_rules
from portagent.adapters.langgraph import rules as langgraph_rules
from portagent.adapters.openai import rules as openai_rules
from portagent.contracts.bundle import AgentBundle
from portagent.contracts.portability import Lack, VendorRules, Verdict, judge
from portagent.contracts.providers import PROVIDERS

__all__ = ["Lack", "Verdict", "verdict", "verdicts"]

VENDOR_RULES: dict[str, VendorRules] = {
    "adk": adk_rules.lacks,
    "claude": claude_rules.lacks,
    "anthropic": anthropic_rules.lacks,
    "langgraph": langgraph_rules.lacks,
}
"""Each vendor's own limits (openai has none beyond its profile; it only adds notes)."""

VENDOR_NOTES: dict[str, Callable[[AgentBundle], list[str]]] = {
    "openai": openai_rules.notes,
    "anthropic": anthropic_rules.notes,
    "langgraph": langgraph_rules.notes,
}
"""What a vendor's adapter does differently without lacking anything (notes never block)."""


def verdict(bundle: AgentBundle, provider: str) -> Verdict:
    """The one answer to "can ``provider`` run this spec, and if not, why"."""
    noting = VENDOR_NOTES.get(provider)
    notes = noting(bundle) if noting is not None else []
    return judge(bundle, provider, VENDOR_RULES.get(provider), notes)


def verdicts(bundle: AgentBundle) -> dict[str, Verdict]:
    """The verdict of every provider, in registry order."""
    return {p: verdict(bundle, p) for p in PROVIDERS}
