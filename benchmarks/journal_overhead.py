"""Run journal overhead: the same run with a run folder, with and without its journal (ADR 0007).

Each run sends its model calls through the journal's loopback proxy and writes every exchange with an
``fsync`` — the price of resuming a paused run exactly. Paired A/B/A/B in one process against one
emulator, so drift hits both sides; prints the ratio of medians (goal ≤ 1.10) with min/max, asserts nothing.

    python benchmarks/journal_overhead.py [--quick] [--providers openai,adk] [-n N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SUPPORT = REPO / "examples" / "support_desk"
sys.path.insert(0, str(SUPPORT))
BENCH_AGENT = REPO / "benchmarks" / "data" / "bench_agent.yaml"
QUESTION = "Case EXP-42: what is missing and what do the rules say about documents?"


async def one(bundle: object, provider: str, base_url: str, out: Path, journal: bool) -> float:
    from portagent.adapters.base import REGISTRY
    from portagent.adapters.port import Endpoint
    from portagent.contracts.run import RunRequest
    from portagent.runtime.runner import RunConfig, arun_full

    config = RunConfig(
        endpoint=Endpoint(base_url=base_url, api_key=REGISTRY[provider].dummy_key),
        out_dir=out,
        journal=journal,
    )
    t0 = time.perf_counter()
    output = await arun_full(bundle, RunRequest(input=QUESTION, provider=provider), config)  # type: ignore[arg-type]
    assert output.result.status == "completed", output.result
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="3 pairs per provider (CI smoke)")
    ap.add_argument("--providers", default="openai,adk")
    ap.add_argument("-n", type=int, default=20)
    args = ap.parse_args()
    n = 3 if args.quick else args.n

    from portagent.contracts.bundle import load_agent
    from portagent.emulator import load_script, serve

    bundle = load_agent(BENCH_AGENT)
    script = load_script(SUPPORT / "emulator.yaml")
    with tempfile.TemporaryDirectory() as tmp, serve(script) as emu:
        for provider in args.providers.split(","):
            with_j: list[float] = []
            without: list[float] = []
            asyncio.run(
                one(bundle, provider, emu.base_url, Path(tmp) / "warm", True)
            )  # imports, first-run costs
            for i in range(n):
                without.append(asyncio.run(one(bundle, provider, emu.base_url, Path(tmp) / f"a{i}", False)))
                with_j.append(asyncio.run(one(bundle, provider, emu.base_url, Path(tmp) / f"b{i}", True)))
            a, b = statistics.median(without), statistics.median(with_j)
            print(
                f"{provider:8s} journal {b * 1000:7.1f} ms (min {min(with_j) * 1000:.1f}, max {max(with_j) * 1000:.1f})"
                f"  no journal {a * 1000:7.1f} ms (min {min(without) * 1000:.1f}, max {max(without) * 1000:.1f})"
                f"  ratio {b / a:.2f}  (n={n}, goal <= 1.10)"
            )


if __name__ == "__main__":
    main()
