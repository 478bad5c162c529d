"""``portagent a2a serve``: an AgentSpec served as an A2A agent, every task a governed portagent run.

One task is one run, keyed by ``a2a:<task id>`` (the run's idempotency key):

- ``message/send`` / ``SendMessage`` (and the streaming variants) start the run; its events go out as
  task updates: ``submitted`` → ``working`` → an artifact (the final output: a data part for a
  structured output, else text) → ``completed``; a budget stop or a provider failure is ``failed``;
- a run that waits for an approval card is ``input-required`` (the card ids are in the status
  metadata and message). The reviewer decides the card (``portagent approvals approve ID``); the next
  message on the same task resumes the same run through the runner's public ``arun_full`` with the
  same idempotency key — the runner does the resuming, nothing here re-implements it;
- ``tasks/get`` / ``tasks/cancel`` are the SDK's, over its in-memory task store; a cancel cancels the
  running run; a task cancelled while it waits for approval withdraws its cards (``superseded``) and
  its run ends ``cancelled`` / ``cancelled_by_caller`` (run store and ``run.json``).

HTTP safety (core/serving.py, the rules of ``mcp serve``'s HTTP transport): loopback by default; a
non-loopback bind is refused without a bearer token; every request, the card included, must name an
allowed Host (421 otherwise: DNS rebinding) and, when it has an Origin, an allowed one (403 otherwise: a
page of another site); with a token every call but the card needs ``Authorization: Bearer``, and the
card declares the scheme.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from portagent.contracts.bundle import AgentBundle
from portagent.contracts.errors import UsageError
from portagent.core import serving
from portagent.tracing.propagation import joining

CARD_PATH = "/.well-known/agent-card.json"
"""Where the AgentCard is served (A2A's well-known path)."""
TOKEN_ENV = "PORTAGENT_A2A_TOKEN"
"""Environment variable holding the bearer token(s), comma-separated."""
KEY_PREFIX = "a2a:"
"""Idempotency-key prefix of a task's run."""


def check_bind(host: str, tokens: Sequence[str]) -> None:
    """Refuse a non-loopback bind without a token, and tokens that are easy to guess."""
    serving.check_bind(
        host,
        tokens,
        token_name="A2A token",
        unauthenticated=(
            f"refusing to serve on {host} without a token: anyone who can reach it could run the agent. "
            f"Set {TOKEN_ENV} (or --token) to a secret; callers then send `Authorization: Bearer <token>`. "
            "Or bind to 127.0.0.1."
        ),
    )


@dataclass
class ServeConfig:
    """What one A2A server runs, and how."""

    bundle: AgentBundle
    provider: str
    endpoint: Any
    """``adapters.port.Endpoint`` of the model (emulator or live)."""
    runs_dir: Path
    """Each task's run folder is ``runs_dir/<task id>/`` (trace.jsonl, run.json)."""
    scopes: list[str] = field(default_factory=list)
    env: str = "dev"
    tokens: list[str] = field(default_factory=list)
    request_log: Path | None = None
    """Append one JSON line per JSON-RPC call received (method, task, traceparent) — the server's own
    record of what callers asked, used by tests to prove a denied call never arrived."""
    allow_hosts: list[str] = field(default_factory=list)
    """Host headers accepted besides the loopback names and the bound address (``--allow-host``)."""
    allow_origins: list[str] = field(default_factory=list)
    """Origin headers accepted besides the loopback ones (``--allow-origin``)."""


@dataclass
class TaskRun:
    """What the server remembers of one task between its messages."""

    request: Any
    run_id: str | None = None
    status: str | None = None
    pending: list[str] = field(default_factory=list)


def _state_metadata(result: Any) -> dict[str, Any]:
    return {
        "portagent": {
            "run_id": result.run_id,
            "status": result.status,
            "attempt": result.attempt,
            "pending_approvals": list(result.pending_approvals),
            "cost_usd": result.cost_usd,
        }
    }


def _output_parts(output: Any) -> list[Any]:
    from a2a.helpers.proto_helpers import new_data_part, new_text_part

    if isinstance(output, dict | list):
        return [new_data_part(output, "application/json")]
    return [new_text_part("" if output is None else str(output))]


def _text(text: str) -> list[Any]:
    from a2a.types import Part

    return [Part(text=text)]


class RunExecutor:
    """The ``AgentExecutor`` of the served agent (built by ``make_executor``; the SDK's base class is
    imported lazily, so this module loads without the ``a2a`` extra)."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.tasks: dict[str, TaskRun] = {}

    def _request(self, task_id: str, text: str, metadata: dict[str, Any]) -> Any:
        from portagent.contracts.run import RunRequest

        known = self.tasks.get(task_id)
        if known is not None:
            return known.request  # resuming: the same request, so the runner resumes the same run
        request = RunRequest(
            input=text,
            provider=self.config.provider,
            idempotency_key=KEY_PREFIX + task_id,
            request_id=task_id,
            actor=str(metadata.get("caller") or "a2a"),
            scopes=list(self.config.scopes),
            env=self.config.env,
        )
        self.tasks[task_id] = TaskRun(request)
        return request

    async def execute(self, context: Any, event_queue: Any) -> None:
        from a2a.server.tasks import TaskUpdater

        from portagent.contracts.errors import ApprovalError
        from portagent.runtime.runner import RunConfig, arun_full

        task_id = str(context.task_id)
        current = context.current_task
        # a follow-up message may omit its contextId: the task's own context is the one to report in
        context_id = str(current.context_id if current is not None else context.context_id)
        updater = TaskUpdater(event_queue, task_id, context_id)
        if current is None:  # the SDK wants the Task itself before any status update
            from a2a.helpers.proto_helpers import new_task
            from a2a.types import TaskState

            history = [context.message] if context.message is not None else []
            await event_queue.enqueue_event(
                new_task(task_id, context_id, TaskState.TASK_STATE_SUBMITTED, history=history)
            )
        text = context.get_user_input()
        if not text.strip() and task_id not in self.tasks:
            await updater.reject(updater.new_agent_message(_text("the message has no text part")))
            return
        request = self._request(task_id, text, dict(context.metadata or {}))
        await updater.start_work()
        config = RunConfig(
            endpoint=self.config.endpoint,
            approver="defer",
            out_dir=self.config.runs_dir / task_id,
            cancel_stop_reason=CANCEL_REASON,  # tasks/cancel ends the run, recorded (not left resumable)
        )
        try:
            with joining(_caller_trace(context)):
                output = await arun_full(self.config.bundle, request, config)
        except ApprovalError as e:  # the card is still pending: the task keeps waiting for input
            await updater.requires_input(updater.new_agent_message(_text(str(e))))
            return
        result = output.result
        entry = self.tasks[task_id]
        entry.run_id, entry.status, entry.pending = (
            result.run_id,
            result.status,
            list(result.pending_approvals),
        )
        meta = _state_metadata(result)
        if result.status == "waiting_approval":
            ids = ", ".join(result.pending_approvals)
            note = (
                f"waiting for approval {ids}: decide it with 'portagent approvals approve|reject {ids}', "
                "then send any message on this task to resume the run"
            )
            await updater.update_status(
                _state("input_required"), updater.new_agent_message(_text(note)), metadata=meta
            )
            return
        if result.status in ("completed", "duplicate"):
            await updater.add_artifact(_output_parts(result.final_output), name="final_output")
            await updater.update_status(
                _state("completed"),
                updater.new_agent_message(_output_parts(result.final_output)),
                metadata=meta,
            )
            return
        why = result.error or result.stop_reason
        await updater.update_status(
            _state("failed"), updater.new_agent_message(_text(f"run {result.status}: {why}")), metadata=meta
        )

    async def cancel(self, context: Any, event_queue: Any) -> None:
        from a2a.server.tasks import TaskUpdater

        current = context.current_task
        context_id = str(current.context_id if current is not None else context.context_id)
        updater = TaskUpdater(event_queue, str(context.task_id), context_id)
        withdrawn = await asyncio.to_thread(_cancel_paused_run, str(context.task_id))
        note = "canceled by the caller" + (
            f"; approval {', '.join(withdrawn)} withdrawn" if withdrawn else ""
        )
        await updater.cancel(updater.new_agent_message(_text(note)))


CANCEL_REASON = "cancelled_by_caller"
"""``stop_reason`` of a task's run that the caller cancelled (``tasks/cancel``)."""


def _cancel_paused_run(task_id: str) -> list[str]:
    """End the run of a task cancelled while it waits for approval: its pending cards move to
    ``superseded`` (no reviewer can approve a call nobody will make), and the run store and ``run.json``
    say ``cancelled`` — a later message on the key answers that result instead of resuming. Returns the
    withdrawn card ids; a task whose run is not paused is left alone."""
    from portagent.contracts.errors import ApprovalError
    from portagent.core.files import write_text_atomic
    from portagent.runtime.runstore import RunStore
    from portagent.tools.approvals import ApprovalStore

    key = KEY_PREFIX + task_id
    runs = RunStore()
    try:
        prior = runs.get(key)
        if prior is None or prior.status != "waiting_approval":
            return []
        result = {**(prior.result or {}), "status": "cancelled", "stop_reason": CANCEL_REASON}
        result["pending_approvals"] = []
        runs.finish(key, "cancelled", result, [])
    finally:
        runs.close()
    withdrawn: list[str] = []
    approvals = ApprovalStore()
    try:
        for approval_id in prior.pending:
            try:
                approvals.supersede(approval_id, f"A2A task {task_id} was canceled by the caller")
                withdrawn.append(approval_id)
            except ApprovalError:
                continue  # already decided, or gone: nothing to withdraw
    finally:
        approvals.close()
    record = Path(prior.trace_path).parent / "run.json" if prior.trace_path else None
    if record is not None and record.is_file():
        try:
            data = json.loads(record.read_text(encoding="utf-8"))
            data["result"].update(status="cancelled", stop_reason=CANCEL_REASON, pending_approvals=[])
            write_text_atomic(record, json.dumps(data, ensure_ascii=False, indent=2) + "\n")
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass  # the run store already says cancelled; an unreadable record stays as it was
    return withdrawn


def _caller_trace(context: Any) -> Any:
    """The caller's W3C trace context: the ``traceparent`` header, else the message metadata's."""
    from portagent.tracing.propagation import parse

    state = context.call_context.state if context.call_context is not None else {}
    found = parse((state.get("headers") or {}).get("traceparent"))
    message = context.message
    if found is None and message is not None and message.HasField("metadata"):
        found = parse(message.metadata.get("traceparent"))
    return found


def _state(name: str) -> Any:
    from a2a.types import TaskState

    return {
        "input_required": TaskState.TASK_STATE_INPUT_REQUIRED,
        "completed": TaskState.TASK_STATE_COMPLETED,
        "failed": TaskState.TASK_STATE_FAILED,
    }[name]


def make_executor(config: ServeConfig) -> Any:
    from a2a.server.agent_execution import AgentExecutor

    class _Executor(RunExecutor, AgentExecutor):
        pass

    return _Executor(config)


def allowlist(host: str, config: ServeConfig) -> serving.Allowlist:
    """The Host/Origin allowlist of a server bound to ``host`` (a malformed entry is a UsageError)."""
    return serving.allowlist(host, config.allow_hosts, config.allow_origins)


class _Guard:
    """ASGI middleware: the Host/Origin allowlist on every request (the card too), the bearer token (when
    configured) on every call but the card, and the request log (method, task id, traceparent of each
    JSON-RPC call)."""

    def __init__(
        self,
        app: Any,
        allowed: serving.Allowlist,
        tokens: Sequence[str],
        log: Callable[[dict[str, Any]], None] | None,
    ) -> None:
        self.app = app
        self.allowed = allowed
        self.tokens = [t.encode() for t in tokens]
        self.log = log

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        refused = self.allowed.refusal(headers)
        if refused is not None:  # first: a rebound or cross-site request learns nothing, not even the card
            await _plain(send, *refused, [])
            return
        if self.tokens and scope.get("path") != CARD_PATH and not serving.bearer_ok(headers, self.tokens):
            await _plain(send, 401, b"missing or wrong bearer token", [(b"www-authenticate", b"Bearer")])
            return
        if scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        refusal = _invalid_text(body)
        if refusal is not None:  # before the SDK: its protobuf messages cannot hold the text either
            await _json(send, refusal)
            return
        if self.log is not None:
            self.log(_log_entry(body, headers))
        sent = False

        async def replay() -> Any:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def _invalid_text(body: bytes) -> dict[str, Any] | None:
    """The JSON-RPC error for a call holding text that is not valid Unicode (JSON allows ``"\\udcff"``; no
    trace, file or protobuf message can hold the lone surrogate it decodes to); None for any other body."""
    from portagent.contracts._base import first_invalid_text

    try:
        data = json.loads(body)
    except ValueError:
        return None  # the SDK answers malformed JSON itself
    where = first_invalid_text(data)
    if where is None:
        return None
    rpc_id = data.get("id") if isinstance(data, dict) else None
    message = f"Invalid params: {where} is not valid Unicode text (a lone surrogate)"
    return {"jsonrpc": "2.0", "id": rpc_id, "error": {"code": -32602, "message": message}}


async def _json(send: Any, payload: dict[str, Any]) -> None:
    body = json.dumps(payload).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _log_entry(body: bytes, headers: dict[bytes, bytes]) -> dict[str, Any]:
    """The request log's line for one call, read from the raw body before the SDK checks it: every
    field is type-checked here, because a body the SDK refuses (``"text": null``, ``"parts": 5``) must
    get the SDK's Invalid Request, not a 500 from the log (a value of the wrong type is left out)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    params = _as_dict(data.get("params"))
    message = _as_dict(params.get("message"))
    task_id = next(
        (v for v in (params.get("id"), message.get("taskId"), message.get("task_id")) if _some_str(v)), None
    )
    parts = message.get("parts")
    texts = [
        p["text"] for p in (parts if isinstance(parts, list) else []) if _some_str(_as_dict(p).get("text"))
    ]
    return {
        "method": data["method"] if _some_str(data.get("method")) else None,
        "task_id": task_id,
        "traceparent": headers.get(b"traceparent", b"").decode("latin-1") or None,
        "text": " ".join(texts)[:500],
    }


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _some_str(value: Any) -> bool:
    return isinstance(value, str) and value != ""


async def _plain(send: Any, status: int, body: bytes, extra: list[tuple[bytes, bytes]]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                *extra,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def build_app(config: ServeConfig, url: str, allowed: serving.Allowlist) -> Any:
    """The ASGI app: the card at ``/.well-known/agent-card.json``, JSON-RPC (1.0 and 0.3 method names)
    at ``/``, behind the Host/Origin ``allowed`` and the token."""
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore
    from starlette.applications import Starlette

    from portagent.a2a.card import build_card

    card = build_card(config.bundle, url, secured=bool(config.tokens))
    handler = DefaultRequestHandler(
        agent_executor=make_executor(config), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = create_agent_card_routes(card, card_url=CARD_PATH) + create_jsonrpc_routes(
        handler, "/", enable_v0_3_compat=True
    )
    app = Starlette(routes=routes)
    log = _file_log(config.request_log) if config.request_log is not None else None
    return _Guard(app, allowed, config.tokens, log)


def _file_log(path: Path) -> Callable[[dict[str, Any]], None]:
    lock = threading.Lock()
    path.parent.mkdir(parents=True, exist_ok=True)

    def write(entry: dict[str, Any]) -> None:
        from portagent.core.secrets import mask_data

        with lock, path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(mask_data(entry), ensure_ascii=False) + "\n")

    return write


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as e:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {e.strerror or e}") from e
    sock.listen(128)
    return sock


def url_of(host: str, sock: socket.socket) -> str:
    shown = f"[{host.strip('[]')}]" if sock.family == socket.AF_INET6 else host
    return f"http://{shown}:{sock.getsockname()[1]}/"


async def serve(config: ServeConfig, host: str, port: int, say: Callable[[str], None]) -> None:
    """Serve until cancelled (Ctrl-C)."""
    import uvicorn

    check_bind(host, config.tokens)
    allowed = allowlist(host, config)
    sock = bind(host, port)
    url = url_of(host, sock)
    app = build_app(config, url, allowed)
    say(
        f"serving {config.bundle.spec.name} on {config.provider} at {url} (card {url.rstrip('/')}{CARD_PATH})"
    )
    say(
        ("bearer token required on every call but the card; " if config.tokens else "")
        + f"Host allowlist: {', '.join(allowed.hosts)} (add names with --allow-host)"
    )
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    try:
        await server.serve(sockets=[sock])
    finally:
        sock.close()


@contextmanager
def serve_in_thread(config: ServeConfig, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve on a background thread (its own event loop) for as long as the block runs; yields the URL.
    The public API and the tests use it; ``portagent a2a serve`` runs ``serve`` in the foreground."""
    import uvicorn

    check_bind(host, config.tokens)
    allowed = allowlist(host, config)
    sock = bind(host, port)
    url = url_of(host, sock)
    app = build_app(config, url, allowed)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    try:
        while not server.started and thread.is_alive():
            threading.Event().wait(0.01)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
