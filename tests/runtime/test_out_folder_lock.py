"""A results or cassette folder has one writer at a time. Two ``portagent eval`` started together on one
``--out`` both found it empty ("check, then write") and then both wrote into it: the folder mixed their
runs, its eval.json/report.json/ci_gate.json were whichever finished last, and a job that exited 0 (gate:
PASS) could upload a folder whose verdict was BLOCK. Now eval (``--out``, ``--resume``, ``--reuse R --out R
--overwrite``), record (``--out``) and report (RESULTS) own the folder for their whole write: a second one
is refused at once (exit 2, naming the folder and the owner's pid), nothing in the folder is written or
deleted. The owner is a ``flock`` (``core.files.own_folder``), released by the kernel however the owner
dies: the lock file a killed process leaves behind blocks nobody.

The other owner here is a real second process holding the lock through the same helper: a second eval
raced against the first would make the test depend on timing.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _support import run_cli

_HOLD = (
    "import sys; from pathlib import Path; from portagent.core.files import own_folder; "
    "owner = own_folder(Path(sys.argv[1]), '--out'); print('held', flush=True); sys.stdin.read()"
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with openai cassettes and a finished results folder (built once, copied per test)."""
    project = tmp_path_factory.mktemp("lock") / "proj"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PORTAGENT_HOME", str(project.parent / ".portagent"))
        assert run_cli("init", str(project), "--name", "qa")[0] == 0
        suite = project / "suite.yaml"
        suite.write_text(suite.read_text().replace("providers: [openai, claude, adk]", "providers: [openai]"))
        code, out, err = run_cli(
            "record", str(suite), "--providers", "openai", "--emulator", "--out", str(project / "cassettes")
        )
        assert code == 0, out + err
        code, out, err = _eval(project, "--out", str(project / "results"))
        assert code == 0, out + err
    return project


@pytest.fixture
def project(built: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "proj"
    shutil.copytree(built, copy, symlinks=True)
    return copy


def _eval(project: Path, *extra: str) -> tuple[int, str, str]:
    return run_cli(
        "eval", str(project / "suite.yaml"), "--replay", "--cassettes", str(project / "cassettes"),
        "--workers", "1", "--no-progress", *extra,
    )  # fmt: skip


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def holder() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def _hold(folder: Path, started: list[subprocess.Popen[str]]) -> subprocess.Popen[str]:
    """Another process that owns ``folder`` until it is killed."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(folder)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    started.append(proc)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def _refused(code: int, out: str, err: str, folder: Path, pid: int) -> None:
    said = out + err
    assert code == 2, said
    assert str(folder) in said and f"process {pid} is writing this folder now" in said, said
    assert "Traceback" not in said


@pytest.mark.parametrize(
    "how",
    [
        pytest.param(["--overwrite"], id="overwrite"),
        pytest.param(["--resume"], id="resume"),
        pytest.param(["--reuse", "RESULTS", "--overwrite"], id="reuse-of-out"),
    ],
)
def test_eval_is_refused_while_another_process_writes_its_out(project, holder, how):
    results = project / "results"
    before = _snapshot(results)
    proc = _hold(results, holder)
    args = [str(results) if a == "RESULTS" else a for a in how]
    code, out, err = _eval(project, "--out", str(results), *args)
    _refused(code, out, err, results, proc.pid)
    assert _snapshot(results) == before  # nothing written, nothing deleted
    assert not list(project.glob(".results.previous-*"))  # --reuse of --out set nothing aside


def test_eval_into_a_new_folder_is_refused_and_creates_nothing(project, holder):
    results = project / "new" / "results"
    proc = _hold(results, holder)
    code, out, err = _eval(project, "--out", str(results))
    _refused(code, out, err, results, proc.pid)
    assert not results.exists()


def test_record_is_refused_while_another_process_writes_its_cassettes(project, holder):
    cassettes = project / "cassettes"
    before = _snapshot(cassettes)
    proc = _hold(cassettes, holder)
    code, out, err = run_cli(
        "record", str(project / "suite.yaml"), "--providers", "openai", "--emulator", "--out", str(cassettes)
    )
    _refused(code, out, err, cassettes, proc.pid)
    assert _snapshot(cassettes) == before


def test_report_is_refused_while_another_process_writes_the_folder(project, holder):
    results = project / "results"
    before = _snapshot(results)
    proc = _hold(results, holder)
    code, out, err = run_cli("report", str(results))
    _refused(code, out, err, results, proc.pid)
    assert _snapshot(results) == before


def test_the_lock_of_a_killed_process_blocks_nobody(project, holder):
    results = project / "results"
    proc = _hold(results, holder)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    leftover = project / ".results.portagent-lock"
    assert leftover.is_file()  # a killed owner cannot remove its lock file
    assert leftover.read_text().strip() == str(proc.pid)
    code, out, err = _eval(project, "--out", str(results), "--overwrite")
    assert code == 0, out + err
    assert not leftover.exists()  # the next owner removes it when done
    code, out, err = run_cli("report", str(results))
    assert code == 0, out + err


def test_the_lock_is_never_in_the_folder_nor_left_beside_it(project):
    code, out, err = _eval(project, "--out", str(project / "results"), "--overwrite")
    assert code == 0, out + err
    code, out, err = run_cli(
        "record", str(project / "suite.yaml"), "--providers", "openai", "--emulator",
        "--out", str(project / "cassettes"), "--missing",
    )  # fmt: skip
    assert code == 0, out + err
    assert not [p for p in project.rglob("*") if "portagent-lock" in p.name]
    assert os.listdir(project / "results")  # the results are there


def test_gate_is_refused_while_another_process_writes_the_folder(project, holder):
    """gate writes RESULTS/ci_gate.json and renders the folder's reports again: owned like report's."""
    results = project / "results"
    before = _snapshot(results)
    proc = _hold(results, holder)
    code, out, err = run_cli("gate", str(results))
    _refused(code, out, err, results, proc.pid)
    assert _snapshot(results) == before
    # its decision written elsewhere reads RESULTS only: not refused
    code, out, err = run_cli("gate", str(results), "--out", str(project / "elsewhere.json"))
    assert code in (0, 1) and (project / "elsewhere.json").is_file(), out + err
