"""``portagent record`` and ``portagent eval`` on a small copy of the support-desk example, and every
bad input of issue 8: each a clear message and a non-zero exit code, never a traceback.

The module records its own cassettes once (openai, against the emulator) into a temporary folder, so
these tests do not depend on the committed ones.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from _support import EXAMPLES, run_cli
from _warm_fork_server import openai_fork_server

SUITE = {
    "kind": "suite",
    "schema_version": 1,
    "suite_id": "mini",
    "dataset_version": "1",
    "owner": "tests",
    "agent": "agent.yaml",
    "providers": ["openai", "adk"],
    "repeats": 1,
    "emulator_script": "emulator.yaml",
    "cases": [
        {
            "case_id": "refund",
            "input": "What is the refund deadline?",
            "why_it_exists": "read-only answer",
            "expect": {
                "final_must_contain": ["30 days"],
                "required_tools": ["search_policy"],
                "approval": False,
            },
        },
        {
            "case_id": "status",
            "input": "What is missing from my case EXP-42?",
            "why_it_exists": "record lookup",
            "expect": {"final_must_contain": ["DNI"], "required_tools": ["get_student_record"]},
        },
    ],
}


@pytest.fixture(scope="module", autouse=True)
def _fork_server() -> Iterator[None]:
    """The evals' openai workers fork with the SDK already imported (tests/_warm_fork_server.py)."""
    with openai_fork_server():
        yield


def write_suite(folder: Path, name: str = "suite.yaml", **changes: Any) -> Path:
    data = {**SUITE, **changes}
    path = folder / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def mini(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A copy of the example with a two-case suite, recorded for openai into ``cassettes/``."""
    root = tmp_path_factory.mktemp("mini")
    agent = root / "agent"
    shutil.copytree(
        EXAMPLES / "support_desk", agent, ignore=shutil.ignore_patterns("suite.yaml", "__pycache__")
    )
    suite = write_suite(agent)
    cassettes = root / "cassettes"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PORTAGENT_HOME", str(root / "home"))
        code, out, err = run_cli(
            "record", str(suite), "--providers", "openai", "--emulator", "--out", str(cassettes)
        )
    assert code == 0, out + err
    assert "2 recorded, 0 skipped, 0 failed" in out
    return {"root": root, "agent": agent, "suite": suite, "cassettes": cassettes}


def test_record_writes_the_layout(mini: dict[str, Path]) -> None:
    folder = mini["cassettes"] / "mini" / "support_desk@1.0.0" / "refund" / "openai" / "r0"
    assert sorted(p.name for p in folder.iterdir()) == ["cassette.yaml", "run.json", "trace.jsonl"]
    manifest = json.loads((folder / "run.json").read_text())["manifest"]
    assert (
        manifest["source"] == "emulator"
        and manifest["case_id"] == "refund"
        and manifest["emulator_script_hash"]
    )


def test_eval_replay_writes_every_report(mini: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "results"
    code, stdout, err = run_cli(
        "eval",
        str(mini["suite"]),
        "--replay",
        "--providers",
        "openai",
        "--cassettes",
        str(mini["cassettes"]),
        "--out",
        str(out),
        "--workers",
        "1",
    )
    assert code == 0, stdout + err
    assert "gate: PASS" in stdout and "2/2" in stdout
    for name in ("report.json", "eval.json", "ci_gate.json", "report.md", "junit.xml", "report.html"):
        assert (out / name).is_file(), name
    meta = json.loads((out / "eval.json").read_text())
    assert (meta["mode"], meta["providers"], meta["runs"], meta["errors"]) == ("replay", ["openai"], 2, [])
    assert (out / "runs" / "support_desk@1.0.0" / "refund" / "openai" / "r0" / "trace.jsonl").is_file()


def test_eval_emulator_mode_labels_runs_emulator(mini: dict[str, Path], tmp_path: Path) -> None:
    code, stdout, err = run_cli(
        "eval",
        str(mini["suite"]),
        "--emulator",
        "--providers",
        "openai,adk",
        "--out",
        str(tmp_path / "r"),
        "--workers",
        "2",
        "--repeats",
        "2",
        "--case",
        "refund",  # one case is enough: what is checked is per provider and per repeat
    )
    assert code == 0, stdout + err
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert len(report["runs"]) == 4  # 1 case × 2 providers × 2 repeats
    assert {r["provenance"]["source"] for r in report["runs"]} == {"emulator"}
    assert {r["provenance"]["provider"] for r in report["runs"]} == {"openai", "adk"}
    assert all(g["flake_rate"] == 0 for g in report["by_provider"])  # repeated twice, measured


def test_record_missing_skips_and_drifted_rerecords(mini: dict[str, Path], tmp_path: Path) -> None:
    cassettes = tmp_path / "cassettes"
    shutil.copytree(mini["cassettes"], cassettes)
    code, out, _ = run_cli(
        "record",
        str(mini["suite"]),
        "--providers",
        "openai",
        "--emulator",
        "--out",
        str(cassettes),
        "--missing",
    )
    assert code == 0 and "0 recorded, 2 skipped, 0 failed" in out
    # a changed tool description changes what the SDK sends: both cassettes now drift
    work = tmp_path / "agent"
    shutil.copytree(mini["agent"], work)
    tools = work / "tools.yaml"
    tools.write_text(
        tools.read_text().replace("Search the student-services policy handbook", "Search the NEW handbook")
    )
    code, out, _ = run_cli(
        "eval",
        str(work / "suite.yaml"),
        "--replay",
        "--providers",
        "openai",
        "--cassettes",
        str(cassettes),
        "--out",
        str(tmp_path / "drift"),
        "--workers",
        "1",
        "--case",
        "refund",
    )
    assert code == 1 and "cassette drift" in out
    code, out, err = run_cli(
        "record",
        str(work / "suite.yaml"),
        "--providers",
        "openai",
        "--emulator",
        "--out",
        str(cassettes),
        "--drifted",
        "--case",
        "refund",  # the drift shown above; status drifts the same way
    )
    assert code == 0, out + err
    assert "recorded support_desk@1.0.0 refund openai r0" in " ".join(out.split())
    assert "replays cleanly" in out


def test_record_one_agent_run(mini: dict[str, Path], tmp_path: Path) -> None:
    code, out, err = run_cli(
        "record",
        str(mini["agent"] / "agent.yaml"),
        "--providers",
        "openai",
        "--emulator",
        str(mini["agent"] / "emulator.yaml"),
        "--case",
        "deadline",
        "--input",
        "What is the refund deadline?",
        "--out",
        str(tmp_path),
    )
    assert code == 0, out + err
    assert (
        tmp_path / "adhoc" / "support_desk@1.0.0" / "deadline" / "openai" / "r0" / "cassette.yaml"
    ).is_file()


# -- bad input -----------------------------------------------------------------------------------------


def _fails(code_expected: int, *argv: str) -> str:
    code, out, err = run_cli(*argv)
    assert code == code_expected, (code, out, err)
    assert "Traceback" not in out + err
    return err


def test_missing_case_file(mini: dict[str, Path]) -> None:
    suite = write_suite(mini["agent"], "missing_case_file.yaml", case_files=["cases/nowhere.yaml"])
    err = _fails(1, "eval", str(suite), "--replay", "--cassettes", str(mini["cassettes"]))
    assert "[case_files.0]: case file not found: cases/nowhere.yaml" in err


def test_missing_agent_spec(mini: dict[str, Path]) -> None:
    suite = write_suite(mini["agent"], "missing_spec.yaml", agent="agent_v9.yaml")
    err = _fails(1, "eval", str(suite), "--emulator")
    assert "[agent]: agent spec not found: agent_v9.yaml" in err


def test_missing_cassette_names_the_record_command(mini: dict[str, Path], tmp_path: Path) -> None:
    err = _fails(
        1,
        "eval",
        str(mini["suite"]),
        "--replay",
        "--providers",
        "adk",
        "--cassettes",
        str(mini["cassettes"]),
        "--out",
        str(tmp_path / "r"),
    )
    assert "2 cassettes missing for --replay" in err
    assert f"portagent record {mini['suite']} --providers adk --emulator" in err and "--missing" in err
    assert not (tmp_path / "r").exists()  # refused before anything was written


def _broken_copy(mini: dict[str, Path], tmp_path: Path, name: str, text: str) -> tuple[Path, Path]:
    """A copy of the recorded cassettes whose refund run has ``name`` overwritten with ``text``."""
    cassettes = tmp_path / "cassettes"
    shutil.copytree(mini["cassettes"], cassettes)
    broken = cassettes / "mini" / "support_desk@1.0.0" / "refund" / "openai" / "r0" / name
    broken.write_text(text)
    return cassettes, broken


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("interactions: [\n", "not a readable cassette (YAML: did not find expected node content, line 2"),
        ("version: 1\nrequests: []\n", "not a vcrpy cassette"),
        ("", "empty cassette"),
        ("interactions: []\nversion: 99\n", "cassette format version 99"),
    ],
)
def test_an_unreadable_cassette_is_refused_before_anything_runs(
    mini: dict[str, Path], tmp_path: Path, text: str, why: str
) -> None:
    """A hand-edited or truncated cassette never heals: it is a recording error (exit 1) named before any
    run, not a run error per run (exit 3, which CI retries) with scoring notes about a run never made."""
    cassettes, broken = _broken_copy(mini, tmp_path, "cassette.yaml", text)
    out = tmp_path / "results"
    code, stdout, err = _eval(mini["suite"], cassettes, out)
    assert code == 1, stdout + err
    assert f"{broken}: {why}" in err and "1 cassette cannot be read, nothing was run" in err
    assert f"portagent record {mini['suite']} --providers openai --emulator" in err and "--case refund" in err
    assert "Traceback" not in stdout + err and "run error" not in stdout + err
    assert not out.exists()  # nothing written


@pytest.mark.parametrize("name", ["run.json", "cassette.yaml"])
def test_a_recording_the_replay_cannot_read_ends_the_eval_as_a_recording_error(
    mini: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """What the pre-flight does not parse (``run.json``), or a cassette broken after it (the pre-flight is
    switched off here to stand for that), comes back from the worker as the RecordingError it is: exit 1,
    one line naming the file, no report scored from a run never made (it said "run error", exit 3)."""
    if name == "cassette.yaml":
        monkeypatch.setattr("portagent.runtime.eval_recordings.check_readable", lambda *a: None)
    cassettes, broken = _broken_copy(mini, tmp_path, name, "interactions: [\n")
    out = tmp_path / "results"
    code, stdout, err = _eval(mini["suite"], cassettes, out)
    assert code == 1, stdout + err
    assert "1 recording could not be read during the replay, nothing was scored" in err
    (line,) = [x for x in err.splitlines() if str(broken) in x]
    assert "not a" in line
    assert "the 1 other run(s) are kept" in err and "--resume" in err
    assert "run error" not in stdout + err and "unknown" not in stdout and "Traceback" not in stdout + err
    assert not any((out / f).exists() for f in ("report.json", "eval.json", "ci_gate.json"))
    code, _, err = run_cli("gate", str(out))
    assert code not in (0, 3), err  # nothing a retry mends: never the "nothing measured" code


def test_threshold_outside_unit_interval(mini: dict[str, Path]) -> None:
    suite = write_suite(mini["agent"], "bad_threshold.yaml", thresholds={"final": 1.5})
    err = _fails(1, "eval", str(suite), "--replay", "--cassettes", str(mini["cassettes"]))
    assert "[thresholds.final]" in err and "1" in err
    err = _fails(2, "gate", str(mini["root"]), "--min-pass-rate", "1.5")
    assert "--min-pass-rate must be between 0 and 1" in err


def test_workers_zero(mini: dict[str, Path]) -> None:
    err = _fails(
        2, "eval", str(mini["suite"]), "--replay", "--cassettes", str(mini["cassettes"]), "--workers", "0"
    )
    assert "--workers must be at least 1, got 0" in err


def test_repeats_beyond_the_recording(mini: dict[str, Path], tmp_path: Path) -> None:
    err = _fails(
        2,
        "eval",
        str(mini["suite"]),
        "--replay",
        "--providers",
        "openai",
        "--cassettes",
        str(mini["cassettes"]),
        "--repeats",
        "3",
        "--out",
        str(tmp_path / "r"),
    )
    assert "--repeats asks for 3 repeats but only 1 are recorded" in err and "--repeats 1" in err


def test_results_folder_not_empty(mini: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "busy"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    argv = [
        "eval",
        str(mini["suite"]),
        "--replay",
        "--providers",
        "openai",
        "--cassettes",
        str(mini["cassettes"]),
        "--out",
        str(out),
        "--workers",
        "1",
        "--case",
        "refund",  # what is checked is the folder, not the runs
    ]
    err = _fails(2, *argv)
    assert "folder is not empty; pass --overwrite" in err
    err = _fails(2, *argv, "--overwrite")  # not a results folder: --overwrite does not empty it
    assert "not a portagent results folder" in err and (out / "notes.txt").read_text() == "mine"
    (out / "notes.txt").unlink()
    assert run_cli(*argv)[0] == 0
    assert _fails(2, *argv).count("not empty") == 1
    code, stdout, err = run_cli(*argv, "--overwrite")  # a results folder is replaced
    assert code == 0, stdout + err


def test_live_without_a_key(mini: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    err = _fails(2, "record", str(mini["suite"]), "--providers", "openai", "--live", "--out", str(tmp_path))
    assert "--live needs OPENAI_API_KEY" in err
    err = _fails(2, "eval", str(mini["suite"]), "--live", "--providers", "openai")
    assert "--live needs OPENAI_API_KEY" in err


def test_unknown_provider_and_case(mini: dict[str, Path]) -> None:
    err = _fails(2, "eval", str(mini["suite"]), "--replay", "--providers", "claude")
    assert "provider(s) claude not in suite 'mini'" in err
    err = _fails(
        2, "eval", str(mini["suite"]), "--replay", "--case", "nope", "--cassettes", str(mini["cassettes"])
    )
    assert "case(s) nope not in suite 'mini'" in err


def test_results_that_are_not_results(tmp_path: Path) -> None:
    err = _fails(2, "report", str(tmp_path))
    assert "no report.json here" in err
    (tmp_path / "report.json").write_text('{"kind": "something-else"}')
    err = _fails(2, "gate", str(tmp_path))
    assert "not a portagent eval result (report.json)" in err
    err = _fails(2, "compare", str(tmp_path / "nope"), str(tmp_path))
    assert "no such results folder" in err


# -- eval --reuse (issue 20): unchanged inputs are not run again, any change is ------------------------


def _eval(suite: Path, cassettes: Path, out: Path, *extra: str) -> tuple[int, str, str]:
    return run_cli(
        "eval", str(suite), "--replay", "--providers", "openai", "--cassettes", str(cassettes),
        "--out", str(out), "--workers", "1", "--no-progress", *extra,
    )  # fmt: skip


def _reused(out: Path) -> dict[str, bool]:
    """Case → was its run kept from the earlier results (report.json), checked against the run folder:
    a kept run's ``run.json`` is byte-for-byte the earlier one."""
    return {
        r["provenance"]["case_id"]: r["provenance"]["reused"]
        for r in json.loads((out / "report.json").read_text())["runs"]
    }


def _run_files(out: Path) -> dict[str, bytes]:
    return {p.parent.parent.parent.name: p.read_bytes() for p in sorted((out / "runs").rglob("run.json"))}


def test_reuse_keeps_unchanged_runs_and_makes_changed_ones_again(
    mini: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = tmp_path / "agent"
    shutil.copytree(mini["agent"], agent, ignore=shutil.ignore_patterns("__pycache__"))
    cassettes = tmp_path / "cassettes"
    shutil.copytree(mini["cassettes"], cassettes)
    suite = write_suite(agent)
    out = tmp_path / "results"
    code, stdout, err = _eval(suite, cassettes, out)
    assert code == 0, stdout + err
    first = _run_files(out)
    assert set(first) == {"refund", "status"} and _reused(out) == {"refund": False, "status": False}
    assert all((p.parent / "inputs.json").is_file() for p in (out / "runs").rglob("run.json"))

    # nothing changed: both runs are kept (same run ids), scored again, and labelled in every report
    code, stdout, err = _eval(suite, cassettes, out, "--overwrite", "--reuse", str(out))
    assert code == 0, stdout + err
    assert "reused: 2 run(s) with unchanged inputs" in err and "0 made" in err
    assert _run_files(out) == first and _reused(out) == {"refund": True, "status": True}
    assert "reused" in (out / "report.md").read_text()
    assert "reused" in (out / "junit.xml").read_text()

    # the same with relative folders (the demo's default --out is ./demo-out)
    with monkeypatch.context() as m:
        m.chdir(tmp_path)
        code, stdout, err = _eval(suite, cassettes, Path("results"), "--overwrite", "--reuse", "results")
    assert code == 0 and "reused: 2 run(s)" in err and "0 made" in err, stdout + err

    # a reused run is scored against today's expectations, not yesterday's verdict
    strict = write_suite(
        agent,
        "strict.yaml",
        cases=[{**SUITE["cases"][0], "expect": {"final_must_contain": ["no such words"]}}],
    )
    code, stdout, err = _eval(strict, cassettes, tmp_path / "strict", "--reuse", str(out))
    assert code == 1 and "reused: 1 run(s)" in err, stdout + err

    # the handlers' code changed: every run is made again
    handlers = agent / "support_desk_handlers.py"
    handlers.write_text(handlers.read_text() + "\n# changed\n")
    code, stdout, err = _eval(suite, cassettes, out, "--overwrite", "--reuse", str(out))
    assert code == 0 and "reused: 0 run(s)" in err and "2 made" in err, stdout + err
    assert _reused(out) == {"refund": False, "status": False}

    # one cassette changed (even by a comment): only that run is made again
    cassette = next((cassettes / "mini").rglob("refund/openai/r0/cassette.yaml"))
    cassette.write_text(cassette.read_text() + "# touched\n")
    code, stdout, err = _eval(suite, cassettes, out, "--overwrite", "--reuse", str(out))
    assert code == 0 and "reused: 1 run(s)" in err and "1 made" in err, stdout + err
    assert _reused(out) == {"refund": False, "status": True}


def test_reuse_of_out_itself_keeps_the_earlier_results_on_disk_until_they_are_back(
    mini: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--reuse`` naming ``--out``: the folder is renamed aside, not emptied, before the kept runs are
    written back; an interrupt in between leaves every earlier result there, and says where."""
    from portagent.runtime import reuse

    suite, cassettes = mini["suite"], mini["cassettes"]
    out = tmp_path / "results"
    assert _eval(suite, cassettes, out)[0] == 0
    first = _run_files(out)
    code, stdout, err = _eval(suite, cassettes, out, "--overwrite", "--reuse", str(out))
    assert code == 0 and "reused: 2 run(s)" in err, stdout + err
    assert _run_files(out) == first and not list(tmp_path.glob(".results.previous-*"))  # cleaned up

    def interrupted(carried: object, task: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(reuse, "restore", interrupted)
    code, stdout, err = _eval(suite, cassettes, out, "--overwrite", "--reuse", str(out))
    assert code == 130, stdout + err
    (aside,) = tmp_path.glob(".results.previous-*")
    assert f"the earlier results are kept in {aside}" in err
    assert (aside / "eval.json").is_file() and _run_files(aside) == first


def test_reuse_refusals(mini: dict[str, Path], tmp_path: Path) -> None:
    suite, cassettes = mini["suite"], mini["cassettes"]
    code, _, err = _eval(suite, cassettes, tmp_path / "a", "--reuse", str(tmp_path / "nope"))
    assert code == 2 and "--reuse" in err and "no such results folder" in err and "Traceback" not in err
    (tmp_path / "plain").mkdir()
    code, _, err = _eval(suite, cassettes, tmp_path / "b", "--reuse", str(tmp_path / "plain"))
    assert code == 2 and "not a portagent results folder" in err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    code, _, err = run_cli("eval", str(suite), "--live", "--reuse", str(tmp_path / "plain"))
    assert code == 2 and "never reused" in err


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_baseline_in_the_out_folder_is_refused_before_anything_is_touched(
    mini: dict[str, Path], tmp_path: Path
) -> None:
    """``--baseline R --out R --overwrite`` emptied R (the baseline with it), ran every case, then died
    reading R/report.json (exit 2, R left with runs/ only). The baseline is read after the runs and
    recorded by its report.json's hash, so it can never be the folder the eval replaces: one message,
    exit 2, nothing deleted or run — with ``--reuse R`` too (that one is documented for --out itself).
    The same for ``compare --out`` / ``gate --out`` naming an input's report.json or eval.json."""
    suite, cassettes = mini["suite"], mini["cassettes"]
    out = tmp_path / "results"
    assert _eval(suite, cassettes, out)[0] == 0
    before = _files(out)
    for extra in (
        ("--overwrite", "--baseline", str(out)),
        ("--overwrite", "--reuse", str(out), "--baseline", str(out)),
        ("--overwrite", "--baseline", str(out / "report.json")),
        ("--resume", "--baseline", str(out)),
    ):
        code, stdout, err = _eval(suite, cassettes, out, *extra)
        assert code == 2, (extra, stdout + err)
        assert f"--baseline {extra[-1]}: is the --out folder" in err and "Copy it aside" in err, err
        assert "runs (replay" not in err and "Traceback" not in err, err  # refused before any run
        assert _files(out) == before, extra
    inner = out / "old"
    shutil.copytree(out, inner)  # a baseline kept inside the folder --overwrite empties
    code, stdout, err = _eval(suite, cassettes, out, "--overwrite", "--baseline", str(inner))
    assert code == 2 and "lies inside the --out folder" in err and (inner / "report.json").is_file(), err
    shutil.rmtree(inner)

    # compare --out / gate --out may name any file, but never an input's results
    other = tmp_path / "other"
    shutil.copytree(out, other)
    for argv in (
        ("compare", str(out), str(other), "--out", str(other / "report.json")),
        ("compare", str(out), str(other), "--out", str(out / "eval.json")),
        ("gate", str(other), "--baseline", str(out), "--out", str(out / "report.json")),
    ):
        code, stdout, err = run_cli(*argv)
        assert code == 2 and "holds results" in err and "Traceback" not in err, (argv, stdout + err)
    assert _files(out) == before and _files(other) == before
    code, stdout, err = run_cli("compare", str(out), str(other), "--out", str(tmp_path / "c.json"))
    assert code == 0 and (tmp_path / "c.json").is_file(), stdout + err
