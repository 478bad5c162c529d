"""The chat model a LangGraph agent calls, read into the draft: which model (``models.langgraph`` and its
vendor's provider id), the settings the program gave it, and what ``bind_tools`` was told beside the tools.
Shared by the prebuilt-agent reader (``from_langgraph``) and the built-graph reader
(``from_langgraph_graph``).

| LangChain | portagent |
|---|---|
| ``ChatOpenAI`` / ``AzureChatOpenAI`` / ``ChatAnthropic`` / ``ChatGoogleGenerativeAI`` | ``models.langgraph: vendor:id`` and that vendor's provider id |
| its ``temperature`` / ``max_tokens`` when the program set them (``_authored``) | shared settings, forced |
| other settings | listed in the report (connection settings as a note) |
"""

from __future__ import annotations

import re
import warnings
from typing import Any

from portagent.migration.draft import DraftAgent
from portagent.migration.report import ImportReport

_VENDORS = {
    "ChatOpenAI": ("openai", "openai", "model_name"),
    "AzureChatOpenAI": ("openai", "openai", "model_name"),
    "ChatAnthropic": ("anthropic", "anthropic", "model"),
    "ChatGoogleGenerativeAI": ("google_genai", "adk", "model"),
}
"""Chat model class → (models.langgraph vendor, the portagent provider of that wire, model id field)."""


def read_model(model: Any, draft: DraftAgent, report: ImportReport) -> None:
    chat = getattr(model, "bound", model)  # bind_tools wraps the chat model in a binding
    known = _VENDORS.get(type(chat).__name__) or next(
        (_VENDORS[c.__name__] for c in type(chat).__mro__ if c.__name__ in _VENDORS), None
    )
    if known is None:
        report.add(
            "not_portable",
            f"chat model {type(chat).__qualname__} on agent {draft.name}",
            "not imported: models.langgraph names openai:, anthropic: or google_genai: models; set it yourself",
        )
        return
    vendor, provider, field = known
    model_id = getattr(chat, field, None)
    if not isinstance(model_id, str) or not model_id:
        report.add(
            "not_portable", f"chat model on agent {draft.name}", "no model id found; set models.langgraph"
        )
        return
    model_id = model_id.removeprefix("models/")
    draft.models["langgraph"] = f"{vendor}:{model_id}"
    draft.models[provider] = model_id
    if vendor == "openai" and getattr(chat, "use_responses_api", None) is not True:
        # ChatOpenAI uses Chat Completions unless told otherwise (or a Responses-only feature is set)
        draft.models["openai_api"] = "chat_completions"
        report.add(
            "changed",
            f"ChatOpenAI of agent {draft.name}",
            "kept as models.openai_api: chat_completions (ChatOpenAI's API; an OpenAI-only setting)",
        )
    shared = (
        ("temperature", "temperature"),
        ("max_tokens", "max_tokens"),
        ("max_output_tokens", "max_tokens"),
    )
    given = _authored(chat, field)
    _other_settings(chat, given - {field, "use_responses_api", *(src for src, _ in shared)}, draft, report)
    for src, target in shared:
        if src not in given:
            continue  # the integration's default (or one it derived from the model), not the author's choice
        value = getattr(chat, src, None)
        if isinstance(value, int | float) and not isinstance(value, bool) and target not in draft.models:
            draft.models[target] = value
            draft.models["force_shared_settings"] = True
            report.add(
                "changed",
                f"{type(chat).__name__}.{src}={value!r}",
                f"imported as models.{target} with force_shared_settings: true (the agent used it)",
            )


_CONNECTION = re.compile(
    r"api_key|api_base|base_url|api_url|endpoint|organization|proxy|timeout|retries|http|headers|"
    r"default_query|client|credentials|project|location|transport|rate_limiter|callbacks|verbose|tags|"
    r"metadata|cache|^name$|stream"
)
"""Chat-model fields about reaching the vendor (or LangChain's own bookkeeping), not about what the agent
asks the model: portagent sets the endpoint and streaming per run."""


def _other_settings(chat: Any, given: set[str], draft: DraftAgent, report: ImportReport) -> None:
    """Every other setting the program gave its chat model is listed, never dropped silently."""
    from portagent.core.secrets import mask_text

    quiet = sorted(f for f in given if _CONNECTION.search(f))
    if quiet:
        report.add(
            "note",
            f"{type(chat).__name__} connection and client settings of agent {draft.name}: {', '.join(quiet)}",
            "not carried over: portagent points each run at its endpoint (and streams with --stream)",
        )
    for f in sorted(given):
        if f in quiet:
            continue
        value = mask_text(repr(getattr(chat, f, None)))
        report.add(
            "not_portable",
            f"{type(chat).__name__}.{f}={value}"[:160],
            "not imported: a model setting the spec has no field for (set it by hand where a provider "
            "supports it, or leave it)",
        )


_DERIVED = frozenset({"profile"})
"""Fields LangChain fills in itself from what it knows of the model (not the program's settings)."""


def _authored(chat: Any, id_field: str) -> set[str]:
    """The chat model's fields the program gave a value of its own. ``model_fields_set`` is not that:
    the integrations fill fields in their validators (langchain-anthropic sets ``max_tokens`` from the
    model's profile, e.g. 128000 for claude-sonnet-4-6; langchain-openai its clients), which then count
    as set. So each set field is compared with a reference model of the same class, built with the same
    model id and connection settings and nothing else: a field the reference also has set, to the same
    value, is the integration's, not the author's. (Without a reference, and for what was copied into it, a field is
    compared with the class default.)"""
    fields = {f for f in getattr(chat, "model_fields_set", ()) if f not in _DERIVED}
    copied = {
        f
        for f in fields
        if f == id_field
        or (_CONNECTION.search(f) and "client" not in f and f not in ("metadata", "callbacks"))
    }
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # what the class warns about, the program's own run warned
            reference = type(chat)(**{f: getattr(chat, f) for f in copied})
    except Exception:  # e.g. a setting the class requires that is not a connection setting
        reference = None
    missing = object()
    out = set()
    for f in fields:
        if reference is None or f in copied:  # what was copied is judged against the class default
            if _set_by_author(chat, f):
                out.add(f)
            continue
        value = getattr(chat, f, None)
        if value is None or (isinstance(value, dict | list | tuple | set | str) and not value):
            continue
        if f not in reference.model_fields_set:  # the class fills nothing in there: the program set it
            out.add(f)
            continue
        try:
            differs = bool(value != getattr(reference, f, missing))
        except Exception:  # a value that cannot be compared: treat it as given
            differs = True
        if differs:
            out.add(f)
    return out


def _set_by_author(chat: Any, field: str) -> bool:
    """Without a reference model: was ``field`` given a value of the program's own (not left empty or at
    its default, not derived from the model's profile)?"""
    value = getattr(chat, field, None)
    if value is None or (isinstance(value, dict | list | tuple | set | str) and not value):
        return False
    profile = getattr(chat, "profile", None)
    if (
        field in ("max_tokens", "max_output_tokens")
        and isinstance(profile, dict)
        and value == profile.get("max_output_tokens")
    ):
        return False  # derived from the model's profile (langchain-anthropic does this)
    info = type(chat).model_fields.get(field)
    if info is None:
        return True
    try:
        default = info.get_default(call_default_factory=True)
    except Exception:  # a factory that needs other fields: treat the value as given
        return True
    return bool(value != default)


def bound_options(model: Any, imported: set[str], draft: DraftAgent, report: ImportReport) -> None:
    """What ``bind_tools`` was told beside the tools (``tool_choice``, ``parallel_tool_calls``…), and tool
    definitions bound to the model that no ``@tool`` function stands behind (dicts, provider built-ins)."""
    kwargs = getattr(model, "kwargs", None)
    if not isinstance(kwargs, dict):
        return
    for key, value in sorted(kwargs.items()):
        if key == "tools":
            for t in value if isinstance(value, list) else []:
                fn = t.get("function") if isinstance(t, dict) else None
                tname = (fn or {}).get("name") if isinstance(fn, dict) else None
                tname = tname or (t.get("name") if isinstance(t, dict) else None) or "?"
                if tname in imported:
                    continue
                kind = t.get("type", "?") if isinstance(t, dict) else type(t).__name__
                report.add(
                    "not_portable",
                    f"tool definition {tname!r} (type {kind}) bound to the model of agent {draft.name}",
                    "not imported: no function runs it here (a provider built-in, or a schema whose code "
                    "lives elsewhere); write a ToolSpec and a handler for it",
                )
            continue
        report.add(
            "not_portable",
            f"bind_tools {key}={value!r}"[:160],
            "not imported: portagent leaves the choice of tools to the model on every provider",
        )
