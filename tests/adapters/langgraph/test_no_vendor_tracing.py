"""A langgraph run sends nothing to LangSmith, even where ``LANGSMITH_TRACING=true`` is set for other work:
portagent never sends traces to a vendor's tracing service (openai-agents' exporter is replaced, Claude Code
runs without non-essential traffic). The upload would carry prompts, tool arguments and results unmasked.

A fresh interpreter (langsmith caches what it read of the environment), the real SDKs against the emulator,
and a loopback "LangSmith" that counts what reaches it; the client is flushed before counting, so an upload
the run queued is seen."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from _support import EXAMPLES, REPO

SCRIPT = textwrap.dedent(
    """
    import asyncio, json, os, sys, threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from pathlib import Path

    seen = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen.append(f"{self.command} {self.path}")
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        do_GET = do_POST = do_PATCH = _answer

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    os.environ.update(
        LANGSMITH_TRACING="true",
        LANGCHAIN_TRACING_V2="true",
        LANGSMITH_API_KEY="lsv2_pt_portagent_dummy",
        LANGSMITH_ENDPOINT=f"http://127.0.0.1:{server.server_address[1]}",
    )
    from langsmith.run_trees import get_cached_client

    from portagent.adapters.port import Endpoint
    from portagent.contracts.run import RunRequest
    from portagent.emulator import load_script, serve
    from portagent.runtime.runner import RunConfig, arun_full

    agent = Path(sys.argv[1])
    with serve(load_script(agent.parent / "emulator.yaml")) as emu:
        request = RunRequest(input=sys.argv[2], provider="langgraph")
        config = RunConfig(endpoint=Endpoint(base_url=emu.base_url, api_key="sk-dummy"), approver="auto-deny")
        out = asyncio.run(arun_full(agent, request, config))
        emulator_calls = len(emu.requests())
    get_cached_client().flush()  # what the run queued for upload, sent now
    print(json.dumps({"status": out.result.status, "model_requests": emulator_calls, "seen": seen}))
    """
)


def test_a_langgraph_run_uploads_nothing_to_langsmith_whatever_the_environment(tmp_path: Path) -> None:
    env = {**os.environ, "PORTAGENT_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO)}
    question = "Case EXP-42: what is missing and what do the rules say about documents?"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(EXAMPLES / "support_desk" / "agent.yaml"), question],
        capture_output=True, text=True, env=env, timeout=180, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["status"] == "completed" and result["model_requests"] >= 2  # the run did talk to a model
    uploads = [s for s in result["seen"] if not s.startswith("GET /info")]  # the flush's own client start
    assert uploads == [], uploads
