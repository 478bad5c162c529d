"""What the third-party import tests share (test_import_third_party_*.py): import a fixture program with
``portagent import --from SDK``, check ``validate`` accepts the spec, read what was written, and check a
refusal is one message, exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import yaml
from _support import run_cli

DATA = Path(__file__).parent / "data" / "third_party"


def import_program(tmp_path: Path, sdk: str, target: str, *extra: str) -> Path:
    out = tmp_path / "out"
    code, _, stderr = run_cli("import", str(DATA / target), "--from", sdk, "--out", str(out), *extra)
    assert code == 0 and "Traceback" not in stderr, stderr
    vcode, vout, verr = run_cli("validate", str(out / "agent.yaml"))
    assert vcode == 0, vout + verr
    return out


def spec(out: Path) -> dict:
    return yaml.safe_load((out / "agent.yaml").read_text(encoding="utf-8"))


def tools(out: Path) -> dict[str, dict]:
    return {t["name"]: t for t in yaml.safe_load((out / "tools.yaml").read_text(encoding="utf-8"))["tools"]}


def report(out: Path) -> str:
    return (out / "import-report.md").read_text(encoding="utf-8")


def refused_import(tmp_path: Path, sdk: str, target: str, *expected: str) -> None:
    out = tmp_path / "out"
    code, _, stderr = run_cli("import", target, "--from", sdk, "--out", str(out))
    assert code == 2 and "Traceback" not in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1, stderr
    for text in expected:
        assert text in stderr, stderr
    assert not out.exists()
