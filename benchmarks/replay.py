"""Replay speed per provider: what a cassette replay costs through portagent.

- **openai, adk, anthropic, langgraph** — median time per replayed run through portagent (``replay_folder``: the real SDK, the
  gateway, the trace, the transport-level cassette player — ``pa+vcrpy``: the same run with the player
  switched off, vcrpy with portagent's matchers) vs the bare SDK replaying the *same* cassette under
  plain vcrpy (``record_mode="none"``, vcrpy's own method/path/query matchers), with the same two tools.
  Ratio goal: ≤ 1.15.
- **claude** — the transport cassette replayed without the CLI vs the real Claude Code CLI replaying the
  same run's HTTP cassette through portagent's recording proxy (design (a)). Goal: ≥ 20× faster.

Cassettes are recorded first, against the emulator, into a temporary folder (the emulator is stopped
before anything is timed). Prints numbers; asserts nothing.

    python benchmarks/replay.py [--quick] [--providers openai,adk,claude,anthropic,langgraph] [-n N]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SUPPORT = REPO / "examples" / "support_desk"
sys.path.insert(0, str(SUPPORT))
BENCH_AGENT = REPO / "benchmarks" / "data" / "bench_agent.yaml"
QUESTION = "Case EXP-42: what is missing and what do the rules say about documents?"
KEYS = {
    "openai": "sk-bench",
    "adk": "bench-dummy-key",
    "claude": "sk-ant-bench",
    "anthropic": "sk-ant-bench",
    "langgraph": "sk-bench",
}


def _baselines() -> Any:
    """The bare-SDK runs of ``adapter_overhead.py`` (same tools, same client setup), reused as they are."""
    spec = importlib.util.spec_from_file_location(
        "adapter_overhead", REPO / "benchmarks" / "adapter_overhead.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def record_all(root: Path, providers: list[str]) -> dict[str, tuple[Path, str]]:
    """One recorded run folder per provider, and the emulator URL it was recorded against."""
    from portagent.adapters.port import Endpoint, RunOptions
    from portagent.contracts.bundle import load_agent
    from portagent.contracts.run import RunRequest
    from portagent.emulator import load_script, serve
    from portagent.runtime.record import record_run
    from portagent.runtime.runner import RunConfig, arun_full

    bundle = load_agent(BENCH_AGENT)
    out: dict[str, tuple[Path, str]] = {}
    with serve(load_script(SUPPORT / "emulator.yaml")) as emu:
        for provider in providers:
            folder = root / provider / "r0"
            request = RunRequest(input=QUESTION, provider=provider)  # type: ignore[arg-type]
            if provider == "claude":  # the HTTP cassette too (through the recording proxy), for the CLI side
                ep = Endpoint(
                    mode="record", base_url=emu.base_url, api_key=KEYS[provider], cassette_dir=folder
                )
                result = asyncio.run(
                    arun_full(
                        bundle,
                        request,
                        RunConfig(
                            endpoint=ep,
                            out_dir=folder,
                            options=RunOptions(extra={"claude_http_cassette": True}),
                        ),
                    )
                ).result
            else:
                ep = Endpoint(base_url=emu.base_url, api_key=KEYS[provider])
                result = asyncio.run(record_run(bundle, request, folder, ep)).result
            if result.status != "completed":
                raise RuntimeError(f"{provider}: recording ended {result.status}: {result.error}")
            out[provider] = (folder, emu.base_url)
    return out


def timed(fns: list[Any], n: int) -> list[tuple[float, float]]:
    """(first run, median of the next ``n``) in seconds for each function, run in turns (a, b, a, b …) so
    that warming caches and machine noise fall on both sides alike."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(n + 1):
        for fn, acc in zip(fns, times, strict=True):
            t0 = time.perf_counter()
            fn()
            acc.append(time.perf_counter() - t0)
    return [(t[0], statistics.median(t[1:])) for t in times]


def timed_stats(fns: list[Any], n: int) -> list[tuple[float, float, float, float]]:
    """Like ``timed`` (interleaved A/B/C, first run apart), as (first, min, median, max)."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(n + 1):
        for fn, acc in zip(fns, times, strict=True):
            t0 = time.perf_counter()
            fn()
            acc.append(time.perf_counter() - t0)
    return [(t[0], min(t[1:]), statistics.median(t[1:]), max(t[1:])) for t in times]


def through_portagent_vcrpy(bundle: Any, folder: Path) -> None:
    """The same replay with the transport-level player switched off (vcrpy serves it, as before)."""
    from portagent.runtime import runner

    saved = runner._player_providers
    runner._player_providers = lambda: frozenset()
    try:
        through_portagent(bundle, folder)
    finally:
        runner._player_providers = saved


def through_portagent(bundle: Any, folder: Path) -> None:
    from portagent.runtime.replay import replay_folder

    out = asyncio.run(replay_folder(bundle, folder))
    if out.result.status != "completed":
        raise RuntimeError(f"replay of {folder} ended {out.result.status}: {out.result.error}")


def bare_under_vcrpy(bare: Any, folder: Path, base_url: str) -> None:
    import vcr

    plain = vcr.VCR(record_mode="none", match_on=("method", "path", "query"))
    with plain.use_cassette(str(folder / "cassette.yaml")):
        asyncio.run(bare(base_url))


def claude_cli_through_proxy(bundle: Any, folder: Path) -> None:
    from portagent.adapters.claude.proxy import ClaudeProxy
    from portagent.adapters.port import Endpoint
    from portagent.contracts.run import RunRequest
    from portagent.runtime.runner import RunConfig, arun_full

    with ClaudeProxy(cassette=folder / "http.yaml", mode="replay") as url:
        out = asyncio.run(
            arun_full(
                bundle,
                RunRequest(input=QUESTION, provider="claude"),
                RunConfig(endpoint=Endpoint(base_url=url, api_key=KEYS["claude"])),
            )
        )
    if out.result.status != "completed":
        raise RuntimeError(f"the CLI through the proxy ended {out.result.status}: {out.result.error}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="3 replays per side, 2 CLI runs (CI smoke)")
    ap.add_argument("--providers", default="openai,adk,claude,anthropic,langgraph")
    ap.add_argument("-n", type=int, default=30, help="replays per side (default 30; the CLI side: n/3)")
    args = ap.parse_args()
    n = 3 if args.quick else args.n
    n_cli = 2 if args.quick else max(3, args.n // 3)
    os.environ.setdefault("PORTAGENT_HOME", tempfile.mkdtemp(prefix="portagent-bench-"))
    os.environ.setdefault("GOOGLE_API_KEY", "bench-dummy-key")
    from portagent.contracts.bundle import load_agent

    providers = [p.strip() for p in args.providers.split(",") if p.strip()]
    bundle = load_agent(BENCH_AGENT)
    with tempfile.TemporaryDirectory(prefix="portagent-replay-bench-") as tmp:
        try:
            recorded = record_all(Path(tmp), providers)
        except Exception as e:  # an SDK not installed or not working: say so
            print(f"recording failed: {type(e).__name__}: {e}")
            return
        overhead = _baselines()
        bare = {
            "openai": overhead.bare_openai,
            "adk": overhead.bare_adk,
            "anthropic": overhead.bare_anthropic,
            "langgraph": overhead.bare_langgraph,
        }
        for provider in providers:
            folder, base_url = recorded[provider]
            try:

                def mine(f: Path = folder) -> None:
                    through_portagent(bundle, f)

                if provider == "claude":  # the CLI side is ~50x slower: timed on its own, fewer runs
                    ((p_first, p_med),) = timed([mine], n)
                    ((b_first, b_med),) = timed([lambda f=folder: claude_cli_through_proxy(bundle, f)], n_cli)
                else:
                    stats = timed_stats(
                        [
                            lambda p=provider, f=folder, u=base_url: bare_under_vcrpy(bare[p], f, u),
                            mine,
                            lambda f=folder: through_portagent_vcrpy(bundle, f),
                        ],
                        n,
                    )
                    (b_first, _, b_med, _), (p_first, _, p_med, _) = stats[0], stats[1]
            except Exception as e:
                print(f"{provider}: skipped ({type(e).__name__}: {e})")
                continue
            if provider == "claude":
                print(
                    f"claude  transport replay  first {p_first * 1000:7.1f} ms  median {p_med * 1000:8.2f} ms  (n={n})"
                )
                print(
                    f"claude  CLI + proxy       first {b_first * 1000:7.1f} ms  median {b_med * 1000:8.2f} ms  "
                    f"(n={n_cli})"
                )
                print(f"claude  speed-up transport/CLI+proxy {b_med / p_med:6.1f}x  (goal >= 20x)")
            else:
                print(
                    f"{provider:7s} bare SDK + vcrpy   first {b_first * 1000:7.1f} ms  median {b_med * 1000:8.2f} ms  (n={n})"
                )
                print(
                    f"{provider:7s} portagent replay  first {p_first * 1000:7.1f} ms  median {p_med * 1000:8.2f} ms  (n={n})"
                )
                print(f"{provider:7s} ratio portagent/bare {p_med / b_med:5.2f}  (goal <= 1.15)")
                for label, (_, lo, med, hi) in zip(("bare+vcrpy", "player", "pa+vcrpy"), stats, strict=True):
                    print(
                        f"{provider:7s} {label:10s} min {lo * 1000:7.2f}  median {med * 1000:7.2f}  "
                        f"max {hi * 1000:7.2f} ms"
                    )
                print(f"{provider:7s} player vs portagent-under-vcrpy {stats[1][2] / stats[2][2]:5.2f}")


if __name__ == "__main__":
    main()
