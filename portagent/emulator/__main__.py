"""``python -m portagent.emulator``: the process behind ``serve(..., mode="subprocess")``.

Prints one JSON line (``{"port": …, "base_url": …}``) on stdout once it listens, then serves until
terminated. Users want ``portagent emulate`` instead, which prints the same facts for humans.
"""

from __future__ import annotations

import argparse
import json
import sys

from portagent.contracts.errors import PortagentError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m portagent.emulator")
    parser.add_argument("--script", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", default=None)
    args = parser.parse_args(argv)
    from portagent.contracts.emulator_script import load_script
    from portagent.emulator.api import RunningEmulator, run_forever

    def ready(handle: RunningEmulator) -> None:
        sys.stdout.write(json.dumps({"port": handle.port, "base_url": handle.base_url}) + "\n")
        sys.stdout.flush()

    try:
        run_forever(
            load_script(args.script), host=args.host, port=args.port, log_path=args.log, on_ready=ready
        )
    except PortagentError as e:
        sys.stderr.write(f"portagent: {e.render()}\n")
        return e.exit_code
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
