"""The langgraph adapter's model choice and what it notes about a spec (no SDK import).

A LangGraph agent runs over a LangChain chat model whose vendor the spec chooses: ``models.langgraph`` is
``<vendor>:<model id>`` in LangChain's own ``init_chat_model`` spelling, with the vendors whose maintained
integrations the ``langgraph`` extra installs:

- ``openai:<id>`` — ``langchain-openai`` (``ChatOpenAI``; the Responses or Chat Completions API as
  ``models.openai_api`` says);
- ``anthropic:<id>`` — ``langchain-anthropic`` (``ChatAnthropic``, the Messages API);
- ``google_genai:<id>`` — ``langchain-google-genai`` (``ChatGoogleGenerativeAI``, the Gemini API).

Unset, the adapter runs the agent's OpenAI model (``openai:`` + ``models.openai``), so every spec that
runs on ``openai`` runs on ``langgraph`` too, through the same endpoint (the verdict says so in a note).
An agent that names neither runs the root agent's choice.
"""

from __future__ import annotations

from portagent.contracts.bundle import AgentBundle, AgentNode
from portagent.contracts.portability import Lack

VENDORS: dict[str, str] = {
    "openai": "openai",
    "anthropic": "claude",
    "google_genai": "adk",
}
"""Chat-model vendor → the portagent provider whose wire protocol (and emulator turns) it speaks."""


def model_choice(node: AgentNode, root: AgentNode) -> tuple[str, str] | None:
    """(vendor, model id) for one agent: its own model for langgraph (its ``models.langgraph``, else
    ``openai:`` + its ``models.openai``), else the root agent's, as ``RunSession.model_for`` chooses for
    every provider: a sub-agent that names its own model runs it. None when there is nothing to run."""
    for models in (node.spec.models, root.spec.models):
        value = models.for_provider("langgraph")
        if value:
            vendor, sep, model = value.partition(":")
            return (vendor, model) if sep else ("", value)
    return None


def vendors(bundle: AgentBundle) -> list[str]:
    """The chat-model vendors of the bundle's agents (``VENDORS``' keys), the root agent's first, each once."""
    out: list[str] = []
    for name in (bundle.root, *bundle.agents):
        choice = model_choice(bundle.agents[name], bundle.node)
        if choice is not None and choice[0] in VENDORS and choice[0] not in out:
            out.append(choice[0])
    return out


def wires(bundle: AgentBundle) -> list[str]:
    """The providers whose wire protocols the bundle's chat models speak (``VENDORS``), the root agent's
    first, each once: what decides a live run's key variables, base-URL variable and journal upstream."""
    return [VENDORS[v] for v in vendors(bundle)]


def _file(node: AgentNode) -> str:
    return str(node.path) if node.path is not None else node.name


def lacks(bundle: AgentBundle) -> list[Lack]:
    """A ``models.langgraph`` value must name a vendor the extra installs, and a model id; an agent on a
    Gemini chat model declares its tools verbatim as Gemini function declarations, within their limits."""
    from portagent.wire.gemini_schema import tool_lacks

    out: list[Lack] = []
    for node in bundle.agents.values():
        choice = model_choice(node, bundle.node)
        if choice is not None and choice[0] == "google_genai":
            out += tool_lacks(node.name, node.tools, _file(node))
    for node in bundle.agents.values():
        value = node.spec.models.langgraph
        if value is None:
            continue
        vendor, sep, model = value.partition(":")
        if not sep or vendor not in VENDORS or not model:
            out.append(
                Lack(
                    "a chat model vendor",
                    f"models.langgraph {value!r} on {node.name}: expected <vendor>:<model id> with vendor one of "
                    f"{', '.join(VENDORS)} (e.g. openai:gpt-4.1-mini)",
                    _file(node),
                    "models.langgraph",
                    kind="usage",
                )
            )
    return out


def notes(bundle: AgentBundle) -> list[str]:
    from portagent.contracts.capabilities import ANTHROPIC_DEFAULT_MAX_TOKENS

    out: list[str] = []
    if bundle.spec.models.max_tokens is None and "claude" in wires(bundle):
        out.append(
            "langgraph: models.max_tokens is not set; the Messages API of the anthropic: chat models requires "
            f"one, {ANTHROPIC_DEFAULT_MAX_TOKENS} is sent"
        )
    for name, node in bundle.agents.items():
        own = node.spec.models
        if not own.langgraph and (own.openai or not bundle.spec.models.langgraph):
            out.append(f"langgraph: agent {name!r} has no models.langgraph; it runs openai:<models.openai>")
    return out
