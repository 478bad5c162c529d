"""``portagent compare`` of results holding several agent versions (an eval of two versions, as the demo
runs) pooled them into one mean per side: ``compare R R`` compared that pool with itself and said "can
replace", whatever the versions did. A side with several versions now needs ``--baseline-version`` /
``--candidate-version``; with them one folder compares its own two versions."""

from __future__ import annotations

from pathlib import Path

from _support import run_cli
from test_evals_compare import result, run


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    folder.mkdir()
    both = result(
        [run("c0"), run("c1"), run("c0", version="2.0.0"), run("c1", version="2.0.0", found=3, passes=False)]
    )
    (folder / "report.json").write_text(both.model_dump_json(), encoding="utf-8")
    return folder


def test_a_side_with_several_versions_must_say_which(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    code, out, err = run_cli("compare", str(folder), str(folder))
    assert code == 2, out + err
    assert (
        f"{folder} holds agent versions 1.0.0, 2.0.0: pick the one to compare with --baseline-version V"
        in err
    )
    assert "Traceback" not in err and "can replace" not in out


def test_one_folder_compares_its_two_versions(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    argv = ("compare", str(folder), str(folder), "--baseline-version", "1.0.0", "--candidate-version")
    code, out, err = run_cli(*argv, "2.0.0")
    assert code == 1, out + err
    assert "2.0.0 cannot replace 1.0.0" in out and "case c1 passed 1 → 0" in out, out
    code, out, err = run_cli(*argv, "1.0.0")  # a version against itself: nothing changed
    assert code == 0 and "1.0.0 on openai can replace 1.0.0 on openai" in out, out + err


def test_a_version_a_side_does_not_hold_is_named(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    code, _, err = run_cli(
        "compare", str(folder), str(folder), "--baseline-version", "1.0", "--candidate-version", "2.0.0"
    )
    assert code == 2 and "--baseline-version 1.0: " in err and "its agent versions: 1.0.0, 2.0.0" in err, err
