"""Where recorded runs live (DESIGN §6):

cassettes/<suite>/<agent>@<version>/<case>/<provider>/r<repeat>/
    cassette.yaml      vendor HTTP cassette (openai, adk)      | transport.jsonl (claude)
    trace.jsonl        normalized trace
    run.json           RunResult + manifest
"""

from __future__ import annotations

from pathlib import Path

DEFAULT_ROOT = Path("cassettes")


def run_folder(
    root: str | Path, suite_id: str, agent: str, version: str, case_id: str, provider: str, repeat: int
) -> Path:
    return Path(root) / suite_id / f"{agent}@{version}" / case_id / provider / f"r{repeat}"


def vendor_cassette(folder: Path, provider: str) -> Path:
    return folder / ("transport.jsonl" if provider == "claude" else "cassette.yaml")


def is_recorded(folder: Path, provider: str) -> bool:
    return all(
        p.is_file() for p in (folder / "run.json", folder / "trace.jsonl", vendor_cassette(folder, provider))
    )


def record_command(
    target: str,
    provider: str,
    *,
    case_id: str | None = None,
    out: str | Path | None = None,
    emulator: str | None = None,
) -> str:
    """The exact command that (re-)creates a missing cassette, for CI error messages."""
    cmd = f"portagent record {target} --providers {provider}"
    cmd += f" --emulator {emulator}" if emulator else " --live"
    if case_id:
        cmd += f" --case {case_id}"
    if out:
        cmd += f" --out {out}"
    return cmd + " --missing"


def is_results_folder(folder: Path) -> bool:
    """A folder an eval (``eval.json``) or a report (``report.json``) wrote: the only kind ``--overwrite``
    empties and ``--reuse`` reads. Here, not in ``evals.report``, so that the demo can ask before it
    imports the eval core (about half a second)."""
    return (folder / "eval.json").is_file() or (folder / "report.json").is_file()
