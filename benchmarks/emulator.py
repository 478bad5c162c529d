"""Benchmark the provider emulator on loopback: added latency per request and requests per second.

    /work/venv/bin/python benchmarks/emulator.py [--quick]

The emulator runs in its own process (``serve(mode="subprocess")``) so the client does not share its
GIL. "Added latency" is the emulator's median round trip minus the median round trip of a null
server built on the same stdlib stack (``ThreadingHTTPServer``, HTTP/1.1 keep-alive, TCP_NODELAY)
that answers a fixed body of the same size: what parsing, matching, planning and rendering cost. A
turn with ``latency_ms: 50`` shows the overhead on top of the script's own latency (on a VM most
of it is the wake-up of two sleeping threads, the server's after its sleep and the client's in recv). Numbers only;
nothing is asserted (DESIGN §2: benchmarks measure, tests decide).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from portagent.emulator import serve
from portagent.wire.sse import parse_sse

SCRIPT: dict[str, Any] = {
    "kind": "emulator-script",
    "schema_version": 1,
    "name": "bench",
    "conversations": [
        {
            "name": "tool",
            "match": {"first_user": "What's the weather in Paris?"},
            "turns": [
                {
                    "text": "Let me check.",
                    "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
                },
                {
                    "text": "It is {{last_tool_result.forecast}} in Paris today, with a light breeze from the west."
                },
            ],
        },
        {"name": "slow", "match": {"first_user": "slow"}, "turns": [{"text": "done", "latency_ms": 50}]},
    ],
}

TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "Get the weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]
SECOND_TURN = {
    "model": "gpt-4.1-mini",
    "instructions": "Answer weather questions.",
    "tools": TOOLS,
    "input": [
        {"role": "user", "content": "What's the weather in Paris?"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Let me check."}],
        },
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": '{"forecast": "sunny"}'},
    ],
}

NULL_SERVER = r"""
import socket, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
JSON = b"x" * int(sys.argv[1]); SSE = b"data: x\n\n"
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def setup(self):
        super().setup(); self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    def log_message(self, *a): pass
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.endswith("sse"):
            n = int(sys.argv[2])
            self.send_response(200); self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked"); self.end_headers()
            for _ in range(n):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(SSE), SSE))
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_response(200); self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(JSON))); self.end_headers(); self.wfile.write(JSON)
class S(ThreadingHTTPServer):
    daemon_threads = True; request_queue_size = 128
s = S(("127.0.0.1", 0), H); print(s.server_address[1], flush=True); s.serve_forever()
"""


def one(conn: http.client.HTTPConnection, path: str, body: bytes) -> float:
    t0 = time.perf_counter()
    conn.request("POST", path, body, {"Content-Type": "application/json", "Authorization": "Bearer sk-bench"})
    resp = conn.getresponse()
    resp.read()
    if resp.status != 200:
        raise RuntimeError(f"{path}: HTTP {resp.status}")
    return (time.perf_counter() - t0) * 1000


def median_ms(port: int, path: str, body: bytes, n: int) -> float:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for _ in range(min(20, n)):
        one(conn, path, body)  # warm up
    samples = [one(conn, path, body) for _ in range(n)]
    conn.close()
    return statistics.median(samples)


def throughput(port: int, path: str, body: bytes, clients: int, seconds: float) -> float:
    done = [0] * clients
    stop = time.perf_counter() + seconds

    def worker(i: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        while time.perf_counter() < stop:
            one(conn, path, body)
            done[i] += 1
        conn.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(done) / (time.perf_counter() - t0)


def body_size(port: int, path: str, body: bytes) -> tuple[int, int]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", path, body, {"Content-Type": "application/json"})
    data = conn.getresponse().read()
    conn.close()
    return len(data), len(parse_sse(data.decode()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples (a few seconds in total)")
    args = parser.parse_args()
    n = 200 if args.quick else 2000
    seconds = 2.0 if args.quick else 10.0
    clients = 8

    json_body = json.dumps(SECOND_TURN).encode()
    sse_body = json.dumps({**SECOND_TURN, "stream": True}).encode()
    slow_body = json.dumps({"model": "m", "input": "slow"}).encode()

    with serve(SCRIPT, mode="subprocess") as emu:
        port = emu.port
        json_len, _ = body_size(port, "/v1/responses", json_body)
        sse_len, sse_events = body_size(port, "/v1/responses", sse_body)
        null = subprocess.Popen(
            [sys.executable, "-c", NULL_SERVER, str(json_len), str(sse_events)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert null.stdout is not None
            null_port = int(null.stdout.readline())
            rows = []
            for label, path, body, null_path in (
                ("JSON turn (Responses)", "/v1/responses", json_body, "/json"),
                (f"SSE turn (Responses, {sse_events} events)", "/v1/responses", sse_body, "/sse"),
            ):
                emu_ms = median_ms(port, path, body, n)
                base_ms = median_ms(null_port, null_path, body, n)
                rows.append((label, emu_ms, base_ms))
            slow_ms = median_ms(port, "/v1/responses", slow_body, max(20, n // 10))
            rps_json = throughput(port, "/v1/responses", json_body, clients, seconds)
            rps_sse = throughput(port, "/v1/responses", sse_body, clients, seconds)
            handled = [r["handled_ms"] for r in emu.requests() if r.get("handled_ms") is not None]
        finally:
            null.terminate()
            null.wait(timeout=5)

    print(
        f"portagent emulator benchmark ({'quick' if args.quick else 'full'}; {os.cpu_count()} cores; "
        f"{n} sequential requests per row, {clients} clients for {seconds:.0f}s of throughput)"
    )
    print(f"  response sizes: JSON {json_len} bytes, SSE {sse_len} bytes")
    print(f"  {'turn':38s} {'emulator':>10s} {'null server':>12s} {'added':>8s}   (median round trip)")
    for label, emu_ms, base_ms in rows:
        print(f"  {label:38s} {emu_ms:8.3f}ms {base_ms:10.3f}ms {emu_ms - base_ms:6.3f}ms")
    print(
        f"  {'turn with latency_ms: 50':38s} {slow_ms:8.3f}ms {'':>12s} {slow_ms - 50:6.3f}ms  (beyond the 50 ms)"
    )
    print(
        f"  server-side handling before the first byte: median {statistics.median(handled):.3f}ms "
        f"(p95 {sorted(handled)[int(len(handled) * 0.95)]:.3f}ms) over {len(handled)} requests"
    )
    print(
        f"  throughput, {clients} keep-alive clients: JSON {rps_json:,.0f} req/s · SSE {rps_sse:,.0f} req/s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
