"""Remote A2A agents as tool sources of a run: cards read once, skills wrapped as ToolSpecs, called
through the gateway.

    arun_full ──► open_agents(bundle, endpoint, options)       (before run.started)
                    │ live/record: GET <url>/.well-known/agent-card.json (or the card file), parsed by
                    │              the A2A SDK; every skill named in ``skills:`` must be on the card
                    │ replay: the cards recorded in a2a.json (no network)
                    │ wrap: a ToolSpec per skill, name = prefix + skill id, effect ``external_effect``
                    └► bundle with those ToolSpecs added to each AgentNode.tools
              adapters declare node.tools as usual ──► gateway (schema, policy, approval, budget,
              idempotency) ──► handler portagent.tools.a2a.bridge:TOOLS.<ident> ──► RunAgents.call
                    ──► the A2A SDK client: SendMessage to the card's JSON-RPC interface (or the answer
                        recorded in a2a.json)

A skill the policy denies is never called: the gateway stops it before the handler. Each call sends
the text ``message`` (and optional ``data``), continues a task when ``task_id`` is given, and returns
``{state, task_id, text, data, cost_usd}``: ``completed`` answers with the artifacts' text and data;
``input-required``/``working`` are returned as such — never reported as final — with the task id to
continue (``partial_result`` is not used: the remote task is not broken, it waits).

The call carries the run's W3C ``traceparent`` (header and message metadata) so a portagent server
joins the caller's trace. Bearer tokens come from ``token_env`` only (never from the spec or a card).

Recording: ``a2a.json`` in the run's cassette folder holds each card and every call with its answer;
a replay answers from it in order, so it needs no remote agent (docs/a2a.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from portagent.contracts._base import args_hash, canonical_json
from portagent.contracts.agent import A2AAgentRef
from portagent.contracts.bundle import AgentBundle, AgentNode
from portagent.contracts.errors import ProviderError, RecordingError, UsageError
from portagent.contracts.tool import SEMVER_RE, WRITE_EFFECTS, Idempotency, ToolBudgets, ToolSpec
from portagent.tools.a2a import bridge
from portagent.tracing.propagation import current_header

A2A_CASSETTE = "a2a.json"
CARD_PATH = "/.well-known/agent-card.json"
TRACEPARENT = "traceparent"


class A2AConfigError(UsageError):
    """A remote agent cannot be used as configured: unreachable, malformed card, missing skill, no token
    (exit 2)."""


class A2ACallError(ProviderError):
    """A remote agent failed a call at run time (exit 3)."""


@dataclass
class _Skill:
    spec: ToolSpec
    agent: str
    skill_id: str
    url: str
    token_env: str | None
    timeout_s: float


@dataclass
class _Agent:
    ref: A2AAgentRef
    base_dir: Path
    card: dict[str, Any] = field(default_factory=dict)
    """The card as JSON (recorded as such)."""


def _token(ref: A2AAgentRef) -> str | None:
    if ref.token_env is None:
        return None
    value = os.environ.get(ref.token_env, "").strip()
    if not value:
        raise A2AConfigError(
            f"A2A agent {ref.name!r} needs a bearer token in ${ref.token_env}, which is not set "
            "(a token is never written in the spec)"
        )
    return value


async def _fetch_card(agent: _Agent) -> dict[str, Any]:
    import httpx

    ref = agent.ref
    if ref.card is not None:
        path = (agent.base_dir / ref.card).resolve()
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise A2AConfigError(
                f"A2A agent {ref.name!r}: cannot read card file {ref.card}: {e.strerror or e}"
            ) from None
        where = str(ref.card)
    else:
        assert ref.url is not None
        where = ref.url.rstrip("/") + CARD_PATH
        try:
            async with httpx.AsyncClient(timeout=ref.timeout_s) as client:
                r = await client.get(where)
        except httpx.HTTPError as e:
            raise A2AConfigError(
                f"A2A agent {ref.name!r} is unreachable at {where}: {type(e).__name__}: {str(e) or 'no answer'}"
            ) from None
        if r.status_code != 200:
            raise A2AConfigError(
                f"A2A agent {ref.name!r}: {where} answered HTTP {r.status_code}, not an AgentCard"
            )
        text = r.text
    try:
        data = json.loads(text)
    except ValueError:
        raise A2AConfigError(f"A2A agent {ref.name!r}: the card at {where} is not JSON") from None
    if not isinstance(data, dict):
        raise A2AConfigError(f"A2A agent {ref.name!r}: the card at {where} is not a JSON object")
    _parse_card(ref, data, where)
    return data


def _parse_card(ref: A2AAgentRef, data: dict[str, Any], where: str) -> Any:
    """The card as the A2A SDK reads it; a card it cannot read, or without name/skills/interface, is one
    message."""
    from a2a.client.card_resolver import parse_agent_card

    try:
        card = parse_agent_card(json.loads(json.dumps(data)))  # the SDK edits the dict it is given
    except Exception as e:  # the SDK raises protobuf's ParseError (and TypeError/ValueError) for bad cards
        raise A2AConfigError(f"A2A agent {ref.name!r}: malformed AgentCard at {where}: {e}") from None
    if not card.name or not card.supported_interfaces:
        raise A2AConfigError(
            f"A2A agent {ref.name!r}: malformed AgentCard at {where}: it needs a name and an interface URL"
        )
    return card


def _wrap(agent: _Agent, card: Any) -> list[_Skill]:
    ref = agent.ref
    skills = {s.id: s for s in card.skills}
    for wanted in ref.skills + list(ref.effects):
        if wanted not in skills:
            raise A2AConfigError(
                f"A2A agent {ref.name!r} ({card.name}) has no skill {wanted!r}; its card lists: "
                f"{', '.join(sorted(skills)) or '(no skills)'}"
            )
    chosen = [skills[s] for s in ref.skills] if ref.skills else list(card.skills)
    if not chosen:
        raise A2AConfigError(f"A2A agent {ref.name!r} ({card.name}): its card lists no skill")
    url = card.supported_interfaces[0].url
    out: list[_Skill] = []
    for skill in chosen:
        name = ref.tool_name(skill.id)
        effect = ref.effects.get(skill.id, ref.effect)
        spec = ToolSpec(
            name=name,
            version=card.version if re.match(SEMVER_RE, card.version or "") else "0.0.0",
            owner=f"a2a:{ref.name}",
            description=(
                skill.description or skill.name or f"skill {skill.id} of the A2A agent {card.name}"
            ).strip(),
            effect=effect,
            input_schema={
                "type": "object",
                "properties": {
                    "message": {"type": "string", "minLength": 1, "description": "What to ask the agent."},
                    "data": {"type": "object", "description": "Structured input sent as a data part."},
                    "task_id": {"type": "string", "description": "Continue this earlier task of the agent."},
                },
                "required": ["message"],
                "additionalProperties": False,
            },
            reversible=True if effect == "reversible_write" else None,
            budgets=ToolBudgets(timeout_ms=int(ref.timeout_s * 1000)),
            idempotency=Idempotency(required=effect in WRITE_EFFECTS),
            handler=bridge.handler_for(name),
        )
        out.append(_Skill(spec, ref.name, skill.id, url, ref.token_env, ref.timeout_s))
    return out


def _plain(value: Any) -> Any:
    """A protobuf Struct/ListValue as plain JSON values (numbers stay floats, as protobuf keeps them)."""
    if hasattr(value, "keys"):  # a Struct (a ListValue has ``items`` too, but no ``keys``)
        return {str(k): _plain(value[k]) for k in value.keys()}  # noqa: SIM118
    if isinstance(value, str | bytes | int | float | bool) or value is None:
        return value
    return [_plain(v) for v in value]


def _result(task: Any) -> dict[str, Any]:
    """The observation of a finished send: state, task id, artifacts' text and data, the remote's cost."""
    from a2a.helpers.proto_helpers import get_data_parts, get_text_parts
    from a2a.types import TaskState

    texts: list[str] = []
    data: list[Any] = []
    for artifact in task.artifacts:
        texts += get_text_parts(artifact.parts)
        data += get_data_parts(artifact.parts)
    status_text = get_text_parts(task.status.message.parts) if task.status.HasField("message") else []
    state = TaskState.Name(task.status.state).removeprefix("TASK_STATE_").lower().replace("_", "-")
    meta = _plain(task.metadata) if task.HasField("metadata") else {}
    remote = meta.get("portagent") if isinstance(meta.get("portagent"), dict) else {}
    out: dict[str, Any] = {"state": state, "task_id": task.id}
    if state == "completed":
        out["text"] = "\n".join(texts) if texts else "\n".join(status_text)
        if data:
            out["data"] = data[0] if len(data) == 1 else data
    else:  # input-required / working / failed …: the task is not final, say what it waits for
        out["message"] = "\n".join(status_text)
    if isinstance(remote, dict) and isinstance(remote.get("cost_usd"), int | float):
        out["cost_usd"] = remote["cost_usd"]
    return out


class RunAgents:
    """The run's remote agents: live (cards fetched, calls sent), record (the same, written to
    ``a2a.json``) or replay (both answered from ``a2a.json``)."""

    def __init__(self, mode: str, cassette_dir: Path | None, recorded: dict[str, Any] | None) -> None:
        self.mode = mode
        self.cassette_dir = cassette_dir
        self.recorded = recorded or {}
        self.skills: dict[str, _Skill] = {}
        self.cards: dict[str, dict[str, Any]] = {}
        self.calls: list[dict[str, Any]] = []
        self._replayed = 0

    async def call(self, ident: str, args: dict[str, Any], context: Any) -> Any:
        from portagent.tools.observations import ToolFailure

        skill = self.skills.get(ident)
        if skill is None:
            raise ToolFailure("unknown_tool", f"no A2A skill behind {ident!r} in this run")
        key = {"agent": skill.agent, "skill": skill.skill_id, "args_hash": args_hash(args)}
        if self.mode == "replay":
            return self._answer(key)
        message_id = "msg-" + args_hash(
            {**key, "n": len(self.calls), "key": getattr(context, "idempotency_key", None)}
        )
        answer = await self._send(skill, args, message_id, getattr(context, "call_id", ""))
        self.calls.append({**key, "args": args, "answer": answer})
        return answer

    def _answer(self, key: dict[str, Any]) -> Any:
        recorded = self.recorded.get("calls", [])
        for i, call in enumerate(recorded):
            if i >= self._replayed and all(call.get(k) == v for k, v in key.items()):
                self._replayed = i + 1
                return call["answer"]
        raise RecordingError(
            f"the A2A recording has no call of {key['agent']}.{key['skill']} with these arguments "
            f"(args_hash {key['args_hash']}): the run drifted from its recording; re-record it"
        )

    async def _send(
        self, skill: _Skill, args: dict[str, Any], message_id: str, call_id: str
    ) -> dict[str, Any]:
        import httpx
        from a2a.client import A2AClientError, ClientConfig, create_client
        from a2a.client.card_resolver import parse_agent_card
        from a2a.helpers.proto_helpers import new_data_part, new_text_part
        from a2a.types import Message, Role, SendMessageRequest

        from portagent.tools.observations import ToolFailure

        headers: dict[str, str] = {}
        token = None
        if skill.token_env is not None:
            token = os.environ.get(skill.token_env, "").strip()
            if token:
                headers["Authorization"] = f"Bearer {token}"
        traceparent = current_header()  # the calling run's trace: the remote run joins it
        if traceparent:
            headers[TRACEPARENT] = traceparent
        card = parse_agent_card(json.loads(json.dumps(self.cards[skill.agent])))
        parts = [new_text_part(str(args["message"]))]
        if isinstance(args.get("data"), dict):
            parts.append(new_data_part(args["data"], "application/json"))
        message = Message(role=Role.ROLE_USER, message_id=message_id, parts=parts)
        if args.get("task_id"):
            message.task_id = str(args["task_id"])
        metadata = {"caller_call_id": call_id, "skill": skill.skill_id}
        if traceparent:
            metadata[TRACEPARENT] = traceparent
        message.metadata.update(metadata)
        async with httpx.AsyncClient(headers=headers, timeout=skill.timeout_s) as http:
            client = await create_client(card, ClientConfig(streaming=False, httpx_client=http))
            last: Any = None
            try:
                async for event in client.send_message(SendMessageRequest(message=message)):
                    if event.HasField("task"):
                        last = event.task
                    elif event.HasField("message"):  # a direct answer without a task
                        from a2a.helpers.proto_helpers import get_text_parts

                        return {
                            "state": "completed",
                            "task_id": "",
                            "text": "\n".join(get_text_parts(event.message.parts)),
                        }
            except A2AClientError as e:
                text = str(e)
                if "401" in text or "403" in text:
                    raise ToolFailure(
                        "permission_denied",
                        f"the A2A agent {skill.agent!r} refused the call (missing or wrong bearer token"
                        + (f" in ${skill.token_env}" if skill.token_env else "; set token_env")
                        + ")",
                    ) from None
                raise ToolFailure("handler_error", f"A2A agent {skill.agent!r}: {text}") from None
            except httpx.HTTPError as e:
                raise ToolFailure(
                    "handler_error", f"A2A agent {skill.agent!r} is unreachable: {type(e).__name__}: {e}"
                ) from None
            finally:
                await client.close()
        if last is None:
            raise ToolFailure("handler_error", f"A2A agent {skill.agent!r} answered no task")
        return _result(last)

    def save_recording(self) -> None:
        if self.mode != "record" or self.cassette_dir is None:
            return
        from portagent.core.files import write_text_atomic
        from portagent.recording.scrub import refuse_if_secret

        text = json.dumps(
            {"schema_version": 1, "cards": self.cards, "calls": self.calls}, indent=2, ensure_ascii=False
        )
        refuse_if_secret(text, str(self.cassette_dir / A2A_CASSETTE))
        write_text_atomic(self.cassette_dir / A2A_CASSETTE, text + "\n")


def _mode(endpoint: Any) -> str:
    mode = getattr(endpoint, "mode", "direct")
    return mode if mode in ("record", "replay") else "live"


def has_agents(bundle: AgentBundle) -> bool:
    return any(node.spec.a2a_agents for node in bundle.agents.values())


@contextlib.asynccontextmanager
async def open_agents(
    bundle: AgentBundle, endpoint: Any = None
) -> AsyncIterator[tuple[AgentBundle, RunAgents]]:
    """The run's remote agents, resolved for the length of the ``async with``: yields the bundle with
    their skills as ToolSpecs, and the backend the bridge calls."""
    mode = _mode(endpoint)
    cassette_dir = getattr(endpoint, "cassette_dir", None)
    recorded: dict[str, Any] | None = None
    if mode == "replay":
        path = Path(cassette_dir) / A2A_CASSETTE if cassette_dir else None
        if path is None or not path.is_file():
            raise RecordingError(
                f"a replay of an agent with A2A agents needs {A2A_CASSETTE} in its cassette folder"
            )
        recorded = json.loads(path.read_text(encoding="utf-8"))
    agents = RunAgents(mode, Path(cassette_dir) if cassette_dir else None, recorded)
    resolved: dict[str, _Agent] = {}
    nodes: dict[str, AgentNode] = {}
    for name, node in bundle.agents.items():
        tools = dict(node.tools)
        base = node.path.parent if node.path is not None else Path.cwd()
        for ref in node.spec.a2a_agents:
            agent = resolved.get(ref.name)
            if agent is None:
                agent = resolved[ref.name] = _Agent(ref, base)
                if mode == "replay":
                    card = (recorded or {}).get("cards", {}).get(ref.name)
                    if not isinstance(card, dict):
                        raise RecordingError(
                            f"the A2A recording holds no card of agent {ref.name!r}: re-record it"
                        )
                    agent.card = card
                else:
                    _token(ref)  # a missing token is one message before anything is sent
                    agent.card = await _fetch_card(agent)
                agents.cards[ref.name] = agent.card
            card = _parse_card(ref, agent.card, ref.url or str(ref.card))
            for skill in _wrap(agent, card):
                if skill.spec.name in tools:
                    raise A2AConfigError(
                        f"agent {name!r}: skill {skill.skill_id!r} of A2A agent {ref.name!r} would be named "
                        f"{skill.spec.name!r}, which another tool already uses; set a2a_agents[{ref.name}].prefix"
                    )
                tools[skill.spec.name] = skill.spec
                agents.skills[bridge.ident_for(skill.spec.name)] = skill
        nodes[name] = replace(node, tools=tools)
    token = bridge.ACTIVE.set(agents)
    try:
        yield AgentBundle(bundle.root, nodes), agents
        agents.save_recording()
    finally:
        bridge.ACTIVE.reset(token)


def recording_digest(agents: RunAgents) -> str:
    """A short fingerprint of the cards a run used (for the run's provider details)."""
    from portagent.contracts._base import sha256_hex

    return sha256_hex(canonical_json(agents.cards))[:16]
