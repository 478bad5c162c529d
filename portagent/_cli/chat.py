"""``portagent chat AGENT --provider P [--session ID] (--emulator SCRIPT | --live [--base-url URL])``.

An interactive terminal chat over a session (docs/sessions.md): each line is one run in the thread, approvals
are asked inline (the ``interactive`` approver), a status line follows the run as it happens (model calls,
tool calls and their results), and ``/switch PROVIDER`` continues the same thread on another provider.

Commands: ``/history``, ``/clear``, ``/switch PROVIDER``, ``/help``, ``/quit`` (or end of input).
Exit codes: 0 when the chat ends · 2 usage error (bad agent, unknown provider at start, missing key).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from portagent.contracts.providers import PROVIDERS

HELP = (
    "/history  the thread so far · /clear  forget the thread · /switch PROVIDER  continue on another "
    "provider · /quit  leave"
)


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "chat",
        help="chat with an agent in the terminal, over a session (approvals inline, /switch provider)",
        description="An interactive chat: each line is one run in the session, approvals are asked inline, "
        "a status line follows each run. " + HELP,
    )
    p.add_argument("agent", help="agent spec file")
    p.add_argument("--provider", required=True, choices=PROVIDERS)
    p.add_argument("--session", metavar="ID", help="the thread to continue (default: a new one)")
    end = p.add_mutually_exclusive_group(required=True)
    end.add_argument(
        "--emulator", metavar="SCRIPT", help="chat against portagent's emulator following SCRIPT"
    )
    end.add_argument("--live", action="store_true", help="call the real vendor API (needs its API key)")
    p.add_argument("--base-url", help="with --live: a custom endpoint")
    p.add_argument("--approver", default="interactive", help="default: interactive (asked inline)")
    p.add_argument(
        "--context-manifest", action="store_true", help="write context manifests (docs/context.md)"
    )


def run(args: argparse.Namespace) -> int:
    import contextlib
    import secrets
    from pathlib import Path

    from portagent.adapters.base import get_adapter
    from portagent.contracts.bundle import load_agent
    from portagent.contracts.errors import UsageError
    from portagent.runtime.session_store import check_session_id, open_session_store
    from portagent.tools.approvers import make_approver

    if args.base_url and not args.live:
        raise UsageError("--base-url goes with --live")
    if not Path(args.agent).exists():
        raise UsageError(f"{args.agent}: agent spec not found")
    make_approver(args.approver)
    bundle = load_agent(args.agent)
    get_adapter(args.provider)
    session_id = check_session_id(args.session or f"chat-{secrets.token_hex(4)}")
    store = open_session_store()
    store.close()  # a damaged store is one message now, before the first line
    chat = _Chat(bundle, args, session_id)
    chat.check_key(args.provider)
    with contextlib.ExitStack() as stack:
        if args.emulator:
            from portagent.emulator import load_script, serve

            chat.emulator = stack.enter_context(serve(load_script(args.emulator)))
        return chat.loop()


class _Chat:
    def __init__(self, bundle: Any, args: argparse.Namespace, session_id: str) -> None:
        self.bundle = bundle
        self.args = args
        self.provider: str = args.provider
        self.session_id = session_id
        self.emulator: Any = None

    def say(self, text: str) -> None:
        from portagent.core.terminal import printable

        # answers and errors carry what the model and tools wrote: escape sequences shown, not obeyed
        sys.stdout.write(printable(text, lines=True) + "\n")
        sys.stdout.flush()

    def check_key(self, provider: str) -> None:
        from portagent.runtime.keys import live_key

        if self.args.live:
            live_key(provider, self.bundle, needs=f"--live on {provider} needs")

    def turns(self) -> list[Any]:
        from portagent.runtime.session_store import open_session_store

        store = open_session_store()
        try:
            return store.turns(self.session_id)
        finally:
            store.close()

    def loop(self) -> int:
        self.say(
            f"chat with {self.bundle.root} on {self.provider} · session {self.session_id} "
            f"({len(self.turns())} earlier turns) · /help"
        )
        while True:
            try:
                line = input("you> ")
            except EOFError:
                self.say("bye")
                return 0
            text = line.strip()
            if not text:
                continue
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:  # bytes that are not UTF-8 arrive as lone surrogates
                self.say("that line is not valid UTF-8 text; nothing was sent")
                continue
            if text.startswith("/"):
                if not self.command(text):
                    self.say("bye")
                    return 0
                continue
            self.turn(text)

    def command(self, text: str) -> bool:
        from portagent.contracts.errors import PortagentError

        name, _, rest = text.partition(" ")
        match name:
            case "/quit" | "/exit":
                return False
            case "/help":
                self.say(HELP)
            case "/history":
                turns = self.turns()
                if not turns:
                    self.say("(no turns yet)")
                for t in turns:
                    who = "you" if t.role == "user" else f"{t.agent or 'agent'} ({t.provider})"
                    self.say(f"#{t.seq} {who}: {t.content}")
            case "/clear":
                from portagent.runtime.session_store import open_session_store

                store = open_session_store()
                try:
                    n = store.clear(self.session_id)
                finally:
                    store.close()
                self.say(f"cleared {n} turns of session {self.session_id}")
            case "/switch":
                target = rest.strip()
                if target not in PROVIDERS:
                    self.say(f"unknown provider {target!r}: one of {', '.join(PROVIDERS)}")
                    return True
                try:
                    from portagent.adapters.base import get_adapter

                    get_adapter(target)
                    self.check_key(target)
                    from portagent.runtime.runner import check_runnable

                    check_runnable(self.bundle, target)
                except PortagentError as e:
                    self.say(f"cannot switch to {target}: {e.render()}")
                    return True
                self.provider = target
                self.say(f"now on {target}; the thread continues ({len(self.turns())} turns)")
            case _:
                self.say(f"unknown command {name!r}: {HELP}")
        return True

    def turn(self, text: str) -> None:
        import asyncio

        from portagent.contracts.errors import PortagentError

        try:
            output = asyncio.run(self._run(text))
        except PortagentError as e:  # the chat goes on: one message, as the CLI would print it
            self.say(f"error: {e.render()}")
            return
        r = output.result
        if r.final_output is not None and r.status == "completed":
            self.say(f"{self.bundle.root}> {r.final_output}")
        cost = "cost unknown" if r.cost_usd is None else f"${r.cost_usd:.6f}"
        self.say(
            f"[{r.status} · {self.provider} · in={r.usage.input_tokens} out={r.usage.output_tokens} · {cost} · "
            f"{r.tool_calls} tool calls · {r.run_id}]"
        )
        if r.error:
            self.say(f"error: {r.error}")
        for a in r.pending_approvals:
            self.say(f"approval {a} pending: portagent approvals approve|reject|edit {a}")

    async def _run(self, text: str) -> Any:
        from portagent.adapters.base import REGISTRY
        from portagent.adapters.port import Endpoint, RunOptions
        from portagent.contracts.run import RunRequest
        from portagent.runtime.keys import live_key
        from portagent.runtime.runner import RunConfig
        from portagent.runtime.sessions import arun_in_session

        info = REGISTRY[self.provider]
        if self.emulator is not None:
            endpoint = Endpoint(source="emulator", base_url=self.emulator.base_url, api_key=info.dummy_key)
        else:
            endpoint = Endpoint(
                source="live",
                base_url=self.args.base_url,
                api_key=live_key(self.provider, self.bundle, needs=f"--live on {self.provider} needs"),
            )
        options = RunOptions(extra={"context_manifest": True} if self.args.context_manifest else {})
        request = RunRequest(input=text, provider=self.provider, session_id=self.session_id)
        # how this line was run, as `portagent run` records it: a card deferred here is decided later with
        # `portagent approvals`, and `portagent resume RUN_ID` (which reads this) finishes the run
        from portagent._cli.run import invocation_of

        how = argparse.Namespace(
            **{**vars(self.args), "provider": self.provider, "stream": False, "openai_api": None}
        )
        config = RunConfig(
            endpoint=endpoint,
            approver=self.args.approver,
            options=options,
            persist=True,
            invocation=invocation_of(how, request),
        )
        self.say(f"… {self.provider} {self._model()} thinking")
        return await arun_in_session(self.bundle, request, config, on_event=self._status)

    def _model(self) -> str:
        return self.bundle.agents[self.bundle.root].spec.models.for_provider(self.provider) or "?"

    def _status(self, e: Any) -> None:
        """The live status line: what the run does, as it happens."""
        match e.type:
            case "model.call":
                self.say(f"  · model {e.model} in={e.input_tokens} out={e.output_tokens}")
            case "tool.call":
                self.say(f"  · tool {e.call_id} {e.tool}")
            case "tool.result":
                self.say(f"  · {e.call_id} {'ok' if e.ok else e.error}")
            case "handoff":
                self.say(f"  · {e.from_agent} -> {e.to_agent}")
            case _:
                pass
