"""CLI start-up: ``portagent --help`` and ``portagent validate examples/support_desk`` against
``python -c pass`` (median of N fresh processes, the three commands taking turns so load drifts hit all).

Goals: ``portagent --help`` under 0.3 s, which means no vendor SDK may be imported on that path;
``validate`` under 0.3 s (issue #20), which means it imports only what validates — the list of what it
loads beyond the contracts, the portability rules and the libraries they need is printed (and pinned by
tests/cli/test_validate_imports.py). Prints numbers and ratios; asserts nothing (speed is measured, not a
test verdict).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

VALIDATE_TARGET = Path(__file__).resolve().parents[1] / "examples" / "support_desk"


def walls(cmds: list[list[str]], n: int) -> list[list[float]]:
    """Seconds of each command, ``n`` times, in turns (A/B/C/A/B/C…)."""
    times: list[list[float]] = [[] for _ in cmds]
    for _ in range(n):
        for i, cmd in enumerate(cmds):
            t0 = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            times[i].append(time.perf_counter() - t0)
    return times


def spread(xs: list[float]) -> str:
    return f"median {statistics.median(xs) * 1000:7.1f} ms (min {min(xs) * 1000:.1f}, max {max(xs) * 1000:.1f}, n={len(xs)})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="3 runs instead of 10 (CI smoke)")
    n = 3 if ap.parse_args().quick else 10
    base_t, help_t, validate_t = walls(
        [
            [sys.executable, "-c", "pass"],
            [sys.executable, "-m", "portagent", "--help"],
            [sys.executable, "-m", "portagent", "validate", str(VALIDATE_TARGET)],
        ],
        n,
    )
    base, helpt, validatet = (statistics.median(t) for t in (base_t, help_t, validate_t))
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
    heavy = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, io, contextlib, portagent.cli as c\n"
            "with contextlib.redirect_stdout(io.StringIO()): c.main(['validate', sys.argv[1]])\n"
            "heavy = ('portagent.adapters._shared', 'portagent.adapters.port', 'portagent.tools', 'portagent.tracing', "
            "'portagent.evals', 'portagent.emulator', 'portagent.core.secrets', 'asyncio', 'agents', "
            "'claude_agent_sdk', 'google.adk', 'google.genai', 'openai', 'anthropic', 'langgraph')\n"
            "print(','.join(m for m in heavy if m in sys.modules))",
            str(VALIDATE_TARGET),
        ],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    print(f"python -c pass      {spread(base_t)}")
    print(f"portagent --help    {spread(help_t)}  goal < 300 ms")
    print(f"portagent validate  {spread(validate_t)}  goal < 300 ms (examples/support_desk)")
    print(f"ratio help/python   {helpt / base:7.2f}x")
    print(f"ratio validate/help {validatet / helpt:7.2f}x")
    print(f"SDKs imported by the CLI parser: {mods or 'none'}")
    print(f"run machinery imported by validate: {heavy or 'none'}")


if __name__ == "__main__":
    main()
