"""User mistakes found by trying the CLI as a careless or hostile user: each gets one message and exit 2
(or 1 for a spec that fails its check), never a traceback, and leaves nothing half-written.

- bytes that are not UTF-8 on the command line (they reach Python as lone surrogates, which no file,
  database, hash or trace can hold);
- ``kind:`` that is a list or a mapping;
- output paths under a file, that are folders, FIFOs or symlinks (the atomic writer refuses what is not a
  regular file, writes through a symlink, and names the part of the path that is not a folder);
- ``a2a serve`` with a runs folder that is a file (refused before serving, not on every task);
- ``gate``/``report`` on a results folder whose run files are gone (its summary alone would pass);
- the vendor SDKs' own error logs (ADK logs each failed node with its traceback) kept off the terminal.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _support import EXAMPLES, REPO, run_cli

TWO = ("--baseline-version", "1.0.0", "--candidate-version", "2.0.0")  # the results hold both versions
BAD = "p_\udcff"  # what ``portagent init $'p_\xff'`` hands Python


def tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize(
    "argv",
    [
        ["init", BAD],
        ["run", "agent.yaml", "--provider", "openai", "--emulator", "emulator.yaml", "--input", BAD],
        [
            "run",
            "agent.yaml",
            "--provider",
            "openai",
            "--emulator",
            "emulator.yaml",
            "--input",
            "hi",
            "--out",
            BAD,
        ],
        ["approvals", "show", BAD],
        ["resume", BAD],
        ["memory", "show", BAD],
    ],
    ids=["init", "run-input", "run-out", "approvals", "resume", "memory"],
)
def test_arguments_that_are_not_utf8_are_one_message(tmp_path, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PORTAGENT_HOME", str(tmp_path / "home"))
    code, out, err = run_cli(*argv)
    assert code == 2 and "Traceback" not in err, err
    assert err == "portagent: argument 'p_\\\\udcff' is not valid UTF-8 text\n"
    assert tree(tmp_path) == []  # nothing written: not even the state folder


@pytest.mark.parametrize(("kind", "shape"), [("[agent]", "a list"), ("{agent: 1}", "a mapping")])
def test_kind_that_is_not_a_word_is_a_spec_problem(tmp_path, kind, shape):
    spec = tmp_path / "a.yaml"
    spec.write_text(f"kind: {kind}\nschema_version: 1\n")
    for argv in (["validate", str(spec)], ["port-check", str(spec), "--to", "openai"]):
        code, out, err = run_cli(*argv)
        assert code == 1 and "Traceback" not in err + out, err
        assert f"'kind:' must be one word, got {shape}" in out + err


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """One replayed run's results folder."""
    root = tmp_path_factory.mktemp("results")
    old = os.environ.get("PORTAGENT_HOME")
    os.environ["PORTAGENT_HOME"] = str(root / "home")
    try:
        code, out, err = run_cli(
            "eval", str(EXAMPLES / "support_desk" / "suite.yaml"), "--replay", "--cassettes", str(REPO / "cassettes"),
            "--providers", "openai", "--case", "refund-rule", "--out", str(root / "R"), "--no-progress",
            "--repeats", "1", "--workers", "1",
        )  # fmt: skip
    finally:
        if old is None:
            os.environ.pop("PORTAGENT_HOME", None)
        else:
            os.environ["PORTAGENT_HOME"] = old
    assert code == 0, out + err
    return root / "R"


def test_output_paths_that_cannot_be_files_are_one_message(tmp_path, results):
    afile = tmp_path / "afile"
    afile.write_text("mine\n")
    agent = str(EXAMPLES / "support_desk" / "agent.yaml")
    trace = next((results / "runs").rglob("trace.jsonl"))
    cases = [
        (["compare", str(results), str(results), *TWO, "--out", f"{afile}/x.json"], f"{afile} is not a folder"),
        (["compare", str(results), str(results), *TWO, "--out", str(tmp_path)], "exists and is not a regular file"),
        (["export", agent, "--to", "openai", "--out", f"{afile}/x.py"], f"{afile} is not a folder"),
        (["trace", "export", str(trace), "--otel-json", f"{afile}/x.json"], f"{afile} is not a folder"),
        (["trace", "import", str(next(REPO.glob("cassettes/**/openai/r0/cassette.yaml"))), "--out", f"{afile}/t"],
         f"{afile} is not a folder"),
    ]  # fmt: skip
    for argv, message in cases:
        code, out, err = run_cli(*argv)
        assert code == 2 and message in err and "Traceback" not in err, (argv, err)
        assert err.count("\n") == 1, err  # one line
    assert afile.read_text() == "mine\n" and sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_report_into_a_folder_where_a_file_goes_is_one_message(tmp_path, results):
    import shutil

    copy = tmp_path / "R"
    shutil.copytree(results, copy)
    (copy / "report.html").unlink()
    (copy / "report.html").mkdir()
    code, out, err = run_cli("report", str(copy))
    assert code == 2 and "report.html: exists and is not a regular file" in err and "Traceback" not in err


@pytest.mark.parametrize("damage", ["runs folder", "trace", "run.json", "run folder"])
def test_gate_and_report_refuse_results_whose_run_files_are_missing(tmp_path, results, damage):
    """The gate reads each run's run.json (tools changed without a version bump) and the reports its
    trace: on report.json alone they passed. Exit 2, one line naming what is missing, nothing written."""
    copy = tmp_path / "R"
    shutil.copytree(results, copy)
    run_dir = next((copy / "runs").rglob("run.json")).parent
    if damage == "runs folder":
        shutil.rmtree(copy / "runs")
    elif damage == "run folder":
        shutil.rmtree(run_dir)
    else:
        (run_dir / ("trace.jsonl" if damage == "trace" else "run.json")).unlink()
    gone = "no runs/ folder" if damage == "runs folder" else f"{run_dir.relative_to(copy)} has no "
    before = {p: p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    suite = str(EXAMPLES / "support_desk" / "suite.yaml")
    for argv in (
        ["gate", str(copy)],
        ["report", str(copy)],
        ["report", str(copy / "report.json"), "--md"],
        ["gate", str(results), "--baseline", str(copy), "--out", str(tmp_path / "g.json")],
        ["eval", suite, "--replay", "--cassettes", str(REPO / "cassettes"), "--providers", "openai",
         "--case", "refund-rule", "--baseline", str(copy), "--out", str(tmp_path / "new"), "--no-progress"],
    ):  # fmt: skip
        code, out, err = run_cli(*argv)
        assert code == 2 and out == "" and "Traceback" not in err, (argv, err)
        assert err.startswith(f"portagent: {copy}: incomplete results: {gone}") and err.count("\n") == 1, err
    assert {p: p.read_bytes() for p in copy.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["R"]
    code, out, err = run_cli("compare", str(results), str(copy), *TWO)  # reads the summaries alone
    assert code == 0 and "2.0.0 can replace 1.0.0" in out, out + err


def test_special_files_are_refused_and_symlinks_written_through(tmp_path, results):
    trace = next((results / "runs").rglob("trace.jsonl"))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    code, out, err = run_cli("trace", "export", str(trace), "--otel-json", str(fifo))
    assert code == 2 and "exists and is not a regular file" in err
    assert fifo.exists() and not fifo.is_file()  # still the FIFO, not replaced by a file
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    code, out, err = run_cli("trace", "export", str(trace), "--otel-json", str(link))
    assert code == 0, err
    assert link.is_symlink() and '"resourceSpans"' in target.read_text()  # the link kept, its target written


def test_a2a_serve_refuses_a_runs_folder_that_is_a_file_before_serving(tmp_path):
    pytest.importorskip("a2a")
    afile = tmp_path / "afile"
    afile.write_text("")
    code, out, err = run_cli(
        "a2a", "serve", str(EXAMPLES / "support_desk" / "agent.yaml"), "--provider", "openai",
        "--emulator", str(EXAMPLES / "support_desk" / "emulator.yaml"), "--port", "0", "--runs", str(afile),
    )  # fmt: skip
    assert code == 2 and f"--runs: {afile} is a file, not a folder" in err, err


def test_vendor_sdk_logs_stay_off_the_terminal(tmp_path):
    """ADK logs every failed node with its traceback (hundreds of lines): the CLI prints portagent's one
    account of the failure; PORTAGENT_LOG=warning shows the SDK's too."""
    pytest.importorskip("google.adk")
    code, _, _ = run_cli("init", str(tmp_path / "p"))
    assert code == 0
    argv = [sys.executable, "-m", "portagent", "run", "agent.yaml", "--provider", "adk"]
    argv += ["--emulator", "emulator.yaml", "--input", "a question the script does not know"]
    env = dict(os.environ, PORTAGENT_HOME=str(tmp_path / "home"))
    env.pop("PORTAGENT_LOG", None)
    quiet = subprocess.run(argv, cwd=tmp_path / "p", env=env, capture_output=True, text=True, timeout=120)
    assert quiet.returncode == 3 and "no conversation matches" in quiet.stdout
    assert "Traceback" not in quiet.stderr and "google_adk" not in quiet.stderr, quiet.stderr
    loud = subprocess.run(
        argv,
        cwd=tmp_path / "p",
        env={**env, "PORTAGENT_LOG": "warning"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert loud.returncode == 3 and "google_adk" in loud.stderr


def test_more_mistakes_are_one_message(tmp_path, results, monkeypatch):
    monkeypatch.setenv("PORTAGENT_HOME", str(tmp_path / "home"))
    suite = str(EXAMPLES / "support_desk" / "suite.yaml")
    # a provider the results do not hold: it compared nothing and "passed"
    code, _, err = run_cli("compare", str(results), str(results), "--provider", "nosuch")
    assert code == 2 and "--provider nosuch:" in err and "has no runs of it (its providers: openai)" in err
    # record into a path under a file
    (tmp_path / "afile").write_text("")
    code, _, err = run_cli(
        "record", suite, "--emulator", "--providers", "openai", "--out", str(tmp_path / "afile" / "c")
    )
    assert code == 2 and f"{tmp_path / 'afile'} is a file, not a folder" in err
    # an interrupted eval's folder (runs/, no eval.json): the advice is --resume, not a dead end
    stopped = tmp_path / "stopped"
    (stopped / "runs").mkdir(parents=True)
    for extra in ([], ["--overwrite"]):
        code, _, err = run_cli(
            "eval", suite, "--replay", "--providers", "openai", "--out", str(stopped), *extra
        )
        assert code == 2 and "holds the runs of an eval that did not finish" in err and "--resume" in err, err
    # a module whose top level is a program
    (tmp_path / "script_mod.py").write_text("import sys\nsys.exit(5)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, _, err = run_cli("import", "script_mod:agent", "--from", "openai", "--out", str(tmp_path / "imp"))
    assert code == 2 and "called sys.exit(5)" in err and not (tmp_path / "imp").exists()
    # a state database that is not one
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "runs.db").write_text("not a database at all, not even close\n")
    code, _, err = run_cli("resume", "run_0123456789abcdef")
    assert code == 2 and "cannot open the run store" in err and "Traceback" not in err


def test_missing_files_and_bad_settings_are_usage_errors(tmp_path, monkeypatch):
    """A file named on the command line that is not there, or a limit variable set to garbage, is the
    user's configuration (exit 2) — not a spec that failed its check (exit 1)."""
    monkeypatch.setenv("PORTAGENT_HOME", str(tmp_path / "home"))
    agent = str(EXAMPLES / "support_desk" / "agent.yaml")
    (tmp_path / "afile").write_text("")
    cases = [
        (["run", agent, "--provider", "openai", "--emulator", str(tmp_path / "no.yaml"), "--input", "hi"],
         "emulator script not found"),
        (["route", str(tmp_path / "no.yaml"), str(tmp_path / "no2.yaml")], "router spec not found"),
        # every command taking an emulator script, not only those that check it first
        (["chat", agent, "--provider", "openai", "--emulator", str(tmp_path / "no.yaml")],
         "emulator script not found"),
        (["a2a", "serve", agent, "--provider", "openai", "--emulator", str(tmp_path)],
         "emulator script not found (it is a folder)"),
        (["emulate", "--script", str(tmp_path / "no.yaml")], "not found"),
        (["init", str(tmp_path / "afile" / "sub")], f"{tmp_path / 'afile'} is a file, not a folder"),
    ]  # fmt: skip
    for argv, message in cases:
        code, _, err = run_cli(*argv)
        assert code == 2 and message in err and "Traceback" not in err, (argv, err)
    monkeypatch.setenv("PORTAGENT_MAX_SPEC_BYTES", "garbage")
    code, _, err = run_cli("validate", agent)
    assert code == 2 and "$PORTAGENT_MAX_SPEC_BYTES must be a positive integer, got 'garbage'" in err


def test_demo_into_a_folder_that_is_not_its_own_says_what_to_do(tmp_path):
    """The demo has no --overwrite: the refusal must not suggest one, and comes before any output."""
    (tmp_path / "precious.txt").write_text("mine")
    code, out, err = run_cli("demo", "--out", str(tmp_path))
    assert code == 2 and out == "" and "choose another --out" in err and "--overwrite" not in err
    assert [p.name for p in tmp_path.iterdir()] == ["precious.txt"]
