"""An eval refused for its results folder starts no worker fork server: warming the workers imports the
run path and an SDK (seconds), and the server process holds the eval's output pipe open, so a caller
reading the refusal through a pipe waited for it."""

import subprocess
import sys
import textwrap

from _support import EXAMPLES, REPO

PROBE = textwrap.dedent(
    """
    import sys
    from multiprocessing import forkserver
    from portagent.cli import main

    try:
        code = main(sys.argv[1:])
    except SystemExit as e:
        code = e.code
    print("exit", code, "fork server", forkserver._forkserver._forkserver_pid is not None)
    """
)


def test_an_eval_refused_for_its_out_folder_warms_no_worker(tmp_path):
    out = tmp_path / "results"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    argv = [
        str(EXAMPLES / "support_desk" / "suite.yaml"),
        "--replay",
        "--providers",
        "openai",
        "--cassettes",
        str(REPO / "cassettes"),
        "--out",
        str(out),
    ]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "eval", *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.stdout.strip().splitlines()[-1] == "exit 2 fork server False", (done.stdout, done.stderr)
    assert "--overwrite" in done.stderr and "Traceback" not in done.stderr
    assert (out / "notes.txt").read_text() == "mine" and sorted(p.name for p in out.iterdir()) == [
        "notes.txt"
    ]
