"""``eval --executor ray`` (issue 17): the same plan, each run a Ray task, gives the local pool's results.

A local Ray is started here (``ray.init(num_cpus=2)``), as the issue asks; the eval joins it. The runs
replay the committed demo cassettes (openai), so both executors make the very same runs offline.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _support import EXAMPLES, REPO, require_path, run_cli

ray = pytest.importorskip("ray", reason="the ray extra is not installed")

SUITE = EXAMPLES / "support_desk" / "suite.yaml"
CASES = ("refund-rule", "case-status", "idempotent-retry")


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    require_path(REPO / "cassettes" / "support-desk", "the committed demo cassettes")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def _eval(out: Path, *extra: str) -> tuple[int, str, str]:
    cases = [a for c in CASES for a in ("--case", c)]
    return run_cli(
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
    )


def test_ray_results_equal_the_local_pool(local_ray: Any, tmp_path: Path) -> None:
    code_local, out_local, err_local = _eval(tmp_path / "local", "--workers", "1")
    code_ray, out_ray, err_ray = _eval(tmp_path / "ray", "--executor", "ray")
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
