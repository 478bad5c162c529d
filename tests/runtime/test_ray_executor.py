"""``eval --executor ray`` and ``record --executor ray`` (issue 17): the same plan, each run a Ray task,
gives the local pool's results (and the local recorder's recordings).

A local Ray cluster is started here (``ray start --head --num-cpus 2``) and each Ray command joins it with
``--address``. Ray runs only in subprocesses, never inside the pytest worker: Ray's C++ core can block the
process where no signal reaches Python (a known ``ray.shutdown`` hang), which would hold the whole suite;
a subprocess is bounded by its timeout. The eval runs replay the committed demo cassettes (openai), so both
executors make the very same runs offline; the recordings are made against the emulator.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from _support import EXAMPLES, REPO, require_path, run_cli

if importlib.util.find_spec("ray") is None:  # found, not imported: Ray's core stays out of this process
    pytest.skip("the ray extra is not installed", allow_module_level=True)

SUITE = EXAMPLES / "support_desk" / "suite.yaml"
CASES = ("refund-rule", "case-status", "idempotent-retry")
RAY = Path(sys.executable).with_name("ray")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# The test's cluster and its clients share a token of their own (Ray's token authentication, on by default):
# nothing is read from or written to ~/.ray, and nothing else on the machine can join.
RAY_ENV = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
RAY_ENV.pop("RAY_ADDRESS", None)


def _command(argv: list[str], logs: Path, timeout: float) -> tuple[int, str, str]:
    """``argv`` in a subprocess, its output through files: Ray's daemons inherit a pipe and keep it open."""
    logs.mkdir(parents=True, exist_ok=True)
    out, err = logs / "stdout.txt", logs / "stderr.txt"
    with out.open("w") as o, err.open("w") as e:
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, stdout=o, stderr=e, timeout=timeout, cwd=REPO, env=RAY_ENV
        )
    return done.returncode, out.read_text(), err.read_text()


@pytest.fixture(scope="module")
def ray_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    require_path(REPO / "cassettes" / "support-desk", "the committed demo cassettes")
    logs = tmp_path_factory.mktemp("ray-head")
    address = f"127.0.0.1:{_free_port()}"
    start = [str(RAY), "start", "--head", f"--port={address.split(':')[1]}", "--num-cpus=2"]
    start += ["--node-ip-address=127.0.0.1"]
    start += ["--include-dashboard=false", "--disable-usage-stats"]
    try:
        code, out, err = _command(start, logs, timeout=180)
        assert code == 0, out + err
        yield address
    finally:
        with contextlib.suppress(subprocess.TimeoutExpired):
            _command([str(RAY), "stop", "--force"], logs / "stop", timeout=120)


def _cli(address: str, logs: Path, *argv: str) -> tuple[int, str, str]:
    """The CLI in a subprocess joined to the test's Ray cluster."""
    argv_ = [sys.executable, "-m", "portagent", *argv, "--address", address]
    return _command(argv_, logs, timeout=240)


def _eval_args(out: Path, *extra: str) -> list[str]:
    cases = [a for c in CASES for a in ("--case", c)]
    return [
        "eval",
        str(SUITE),
        "--replay",
        "--cassettes",
        str(REPO / "cassettes"),
        "--providers",
        "openai",
        *cases,
        "--out",
        str(out),
        "--no-progress",
        *extra,
    ]


def _eval(out: Path, *extra: str) -> tuple[int, str, str]:
    return run_cli(*_eval_args(out, *extra))


@pytest.mark.slow  # a local Ray cluster starts (≈ 6 s) and its workers import the SDK once
def test_ray_results_equal_the_local_pool(ray_address: str, tmp_path: Path) -> None:
    code_local, out_local, err_local = _eval(tmp_path / "local", "--workers", "1")
    code_ray, out_ray, err_ray = _cli(
        ray_address, tmp_path / "logs", *_eval_args(tmp_path / "ray", "--executor", "ray")
    )
    assert code_local == code_ray, out_local + err_local + out_ray + err_ray
    local = json.loads((tmp_path / "local" / "report.json").read_text())
    remote = json.loads((tmp_path / "ray" / "report.json").read_text())
    assert len(remote["runs"]) == 12  # 3 cases × 2 versions × 2 repeats
    assert remote == local  # every score, aggregate and finding; latencies are the recorded ones
    assert "(replay, Ray)" in err_ray
    for name in ("trace.jsonl", "run.json"):  # each Ray task wrote its run into the shared results folder
        assert (
            tmp_path / "ray" / "runs" / "support_desk@1.0.0" / "refund-rule" / "openai" / "r1" / name
        ).is_file()
    meta = json.loads((tmp_path / "ray" / "eval.json").read_text())
    assert meta["errors"] == json.loads((tmp_path / "local" / "eval.json").read_text())["errors"]


def test_address_without_ray_executor_is_one_message(tmp_path: Path) -> None:
    code, out, err = _eval(tmp_path / "x", "--address", "127.0.0.1:6379")
    assert code == 2 and "--address names a Ray cluster: use it with --executor ray" in err
    assert not (tmp_path / "x").exists()


def _record_suite(tmp_path: Path) -> Path:
    """Two read-only demo cases for openai against the emulator, in a copy of the example."""
    root = tmp_path / "agent"
    shutil.copytree(
        EXAMPLES / "support_desk", root, ignore=shutil.ignore_patterns("suite.yaml", "__pycache__")
    )
    data = yaml.safe_load(SUITE.read_text())
    data.update(
        providers=["openai"], repeats=1, cases=[c for c in data["cases"] if c["case_id"] in CASES[:2]]
    )
    data.pop("graders", None)
    data["agent"] = data.pop("baseline")
    data.pop("candidate")
    path = root / "suite.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _recorded(root: Path) -> dict[str, Any]:
    """Each recorded folder: its files, what the SDK sent (the cassette's request bodies) and the result."""
    out: dict[str, Any] = {}
    for run in sorted(root.rglob("run.json")):
        folder = run.parent
        cassette = yaml.safe_load((folder / "cassette.yaml").read_text())
        result = json.loads(run.read_text())["result"]
        out[str(folder.relative_to(root))] = (
            sorted(p.name for p in folder.iterdir()),
            [i["request"]["body"] for i in cassette["interactions"]],
            (result["status"], result["final_output"]),
        )
    return out


@pytest.mark.slow  # a local Ray cluster starts (≈ 6 s) and its workers import the SDK once
def test_record_with_ray_records_what_the_local_recorder_does(ray_address: str, tmp_path: Path) -> None:
    suite = _record_suite(tmp_path)
    base = ("record", str(suite), "--emulator")
    code, out, err = run_cli(*base, "--out", str(tmp_path / "local"), "--no-verify")
    assert code == 0 and "2 recorded, 0 skipped, 0 failed" in out, out + err
    code, out, err = _cli(
        ray_address, tmp_path / "logs", *base, "--out", str(tmp_path / "ray"), "--executor", "ray"
    )
    assert code == 0 and "2 recorded, 0 skipped, 0 failed" in out, out + err
    assert (
        out.count("replays cleanly") == 2
    )  # each new recording replayed (a Ray task too) before it was placed
    local, remote = _recorded(tmp_path / "local"), _recorded(tmp_path / "ray")
    assert len(remote) == 2 and remote == local


@pytest.mark.slow  # a local Ray cluster starts (≈ 6 s) and its workers import the SDK once
def test_record_with_ray_stops_at_the_spend_cap(ray_address: str, tmp_path: Path) -> None:
    """The driver submits a recording only when the scheduler admits it: the first one's cost is unknown
    until it is back, so the second waits, then is refused — the cap is spent."""
    suite = _record_suite(tmp_path)
    code, out, err = _cli(
        ray_address,
        tmp_path / "logs",
        "record",
        str(suite),
        "--emulator",
        "--out",
        str(tmp_path / "ray"),
        "--executor",
        "ray",
        "--max-spend-usd",
        "0.0000001",
    )
    assert code == 1 and "1 recorded, 0 skipped, 1 failed" in out, out + err
    assert "not recorded: the recording's spend reached $" in out
    assert len(_recorded(tmp_path / "ray")) == 1


def test_record_address_without_ray_executor_is_one_message(tmp_path: Path) -> None:
    code, out, err = run_cli(
        "record", str(SUITE), "--emulator", "--out", str(tmp_path / "x"), "--address", "127.0.0.1:6379"
    )
    assert code == 2 and "--address names a Ray cluster: use it with --executor ray" in err
    assert "Traceback" not in err and not (tmp_path / "x").exists()
