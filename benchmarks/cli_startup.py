"""CLI start-up: ``portagent --help`` against ``python -c pass`` (median of N fresh processes).

Goal: ``portagent --help`` under 0.3 s, which means no vendor SDK may be imported on that path.
Prints numbers and ratios; asserts nothing (speed is measured, not a test verdict).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def median_wall(cmd: list[str], n: int) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="3 runs instead of 10 (CI smoke)")
    n = 3 if ap.parse_args().quick else 10
    base = median_wall([sys.executable, "-c", "pass"], n)
    helpt = median_wall([sys.executable, "-m", "portagent", "--help"], n)
    mods = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, portagent.cli as c; c.build_parser(); "
            "bad=[m for m in ('agents','claude_agent_sdk','google.adk','google.genai','openai','anthropic','vcr') if m in sys.modules]; "
            "print(','.join(bad))",
        ],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    print(f"python -c pass      median {base * 1000:7.1f} ms (n={n})")
    print(f"portagent --help    median {helpt * 1000:7.1f} ms (n={n})  goal < 300 ms")
    print(f"ratio help/python   {helpt / base:7.2f}x")
    print(f"SDKs imported by the CLI parser: {mods or 'none'}")


if __name__ == "__main__":
    main()
