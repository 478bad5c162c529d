"""Runs per second of the local pool vs ``--executor ray`` on the same replayed runs, the per-run overhead
Ray adds, and the projected wall time of 100 000 runs on N nodes (docs/scale.md's sizing table).

The runs replay the committed demo cassettes (openai, the five read-only cases, both agent versions,
both recorded repeats); the plan is repeated to reach the run count (each copy replays the same
cassette into its own scope, one after another per scope). Both executors get the same tasks and
2 CPUs. Asserts nothing.

    python benchmarks/ray_vs_pool.py            # 500 runs
    python benchmarks/ray_vs_pool.py --quick    # 40 runs (CI smoke)
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SUITE = REPO / "examples" / "support_desk" / "suite.yaml"
CASSETTES = REPO / "cassettes"
CASES = ["refund-rule", "case-status", "record-then-rules", "unknown-case", "follow-up"]
CPUS = 2


def plan(n: int) -> list:  # type: ignore[type-arg]
    from portagent.contracts.loaded_suite import load_suite
    from portagent.runtime.eval_run import plan_eval

    base = plan_eval(
        load_suite(SUITE), mode="replay", providers=["openai"], cassettes=CASSETTES, case_ids=CASES
    ).tasks
    # copies run in rounds: one copy of a scope is never in flight with another (ledger namespaces)
    return [dataclasses.replace(base[i % len(base)], index=i) for i in range(n)]


def timed(label: str, tasks: list, **kw: object) -> float:  # type: ignore[type-arg]
    from portagent.runtime.eval_pool import run_tasks

    t0 = time.perf_counter()
    report = run_tasks(tasks, workers=CPUS, **kw)  # type: ignore[arg-type]
    wall = time.perf_counter() - t0
    failed = sum(o.error is not None for o in report.outcomes)
    print(f"{label}: {len(tasks)} runs in {wall:.1f} s = {len(tasks) / wall:.1f} runs/s ({failed} failed)")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="40 runs instead of 500 (CI smoke)")
    ap.add_argument("--runs", type=int, help="number of replayed runs")
    args = ap.parse_args()
    n = args.runs or (40 if args.quick else 500)
    if not (CASSETTES / "support-desk").is_dir():
        print(f"no demo cassettes under {CASSETTES}: nothing to replay")
        return
    with tempfile.TemporaryDirectory(prefix="portagent-ray-bench-") as tmp:
        os.environ["PORTAGENT_HOME"] = str(Path(tmp) / "home")
        tasks = plan(n)
        print(
            f"{n} replayed runs (openai, {len(CASES)} read-only cases), {CPUS} CPUs, {os.cpu_count()} on the machine"
        )
        small = 4 * CPUS
        local_small = timed("local pool, 2 workers (start-up + a few runs)", tasks[:small])
        local = timed("local pool, 2 workers", tasks)
        if importlib.util.find_spec("ray") is None:
            print("ray is not installed (pip install 'portagent[ray]'): Ray side skipped")
            return
        import ray

        t0 = time.perf_counter()
        ray.init(num_cpus=CPUS, include_dashboard=False, log_to_driver=False)
        start = time.perf_counter() - t0
        print(f"Ray start (local, {CPUS} CPUs): {start:.1f} s")
        try:
            warm = timed("Ray, warm-up (SDK imports in each Ray worker)", tasks[:small], executor="ray")
            on_ray = timed("Ray, 2 CPUs, warm", tasks, executor="ray")
        finally:
            ray.shutdown()
    # steady state: the small run started the local pool's fork server (the run path and the SDK preloaded),
    # which stays up for the full run, as Ray's workers stay warm: both full runs are warm. (A line through
    # the small and the full run assumed each paid the start-up; it went negative once the server was kept.)
    local_run = local / n
    local_start = local_small - small * local_run
    ray_run = on_ray / n
    print(
        f"as an eval pays it: local {local_start + local:.1f} s (start-up + runs) vs Ray {start + warm + on_ray:.1f} s (start + warm-up + runs)"
    )
    print(
        f"steady state: local {1 / local_run:.1f} runs/s, Ray {1 / ray_run:.1f} runs/s "
        f"(ratio Ray/local {local_run / ray_run:.2f}); Ray adds {1000 * (ray_run - local_run):+.1f} ms "
        f"per run (wall, {CPUS} CPUs); local start-up ≈ {local_start:.1f} s"
    )
    cpu_s = max(ray_run, local_run) * CPUS
    print(
        f"per-run cost: {cpu_s:.3f} CPU-seconds (replay); projected wall time of 100 000 runs, 2-CPU nodes:"
    )
    for nodes in (1, 10, 50, 100):
        hours = 100_000 * cpu_s / (nodes * CPUS) / 3600
        print(f"  {nodes:>3} node(s): {hours:6.2f} h (+ Ray start {start:.0f} s and one warm-up per node)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
