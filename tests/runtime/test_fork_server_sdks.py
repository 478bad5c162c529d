"""The workers' fork server gains the SDK a later eval needs. It used to keep whatever the first eval of
the process preloaded: in a process making many evals (a test session, the pytest plugin, a notebook), every
worker of every later eval of another provider imported its SDK itself (1-2.5 s of CPU each on a quiet
machine). Checked in a real forked worker: which modules it holds without importing anything."""

from __future__ import annotations

import multiprocessing as mp
import sys

from portagent.adapters.base import REGISTRY
from portagent.runtime import fork_server


def _held(names: list[str]) -> list[str]:
    return sorted(n for n in names if n in sys.modules)


def _in_a_worker(names: list[str]) -> list[str]:
    with mp.get_context("forkserver").Pool(1) as pool:
        return pool.apply(_held, (names,))


def test_a_later_eval_of_another_provider_finds_its_sdk_preloaded() -> None:
    openai, adk = REGISTRY["openai"].module, REGISTRY["adk"].module
    fork_server.stop_warm_workers()  # whatever an earlier test of this process started
    try:
        assert fork_server.warm_workers(["openai"]) is True
        assert _in_a_worker([openai, adk]) == [openai]
        assert fork_server.warm_workers(["openai"]) is False  # it has what this eval needs: kept
        assert fork_server.warm_workers(["adk"]) is True  # started again, with adk added to openai
        assert _in_a_worker([openai, adk]) == sorted([openai, adk])
        assert fork_server.warm_workers(["openai", "adk"]) is False
        assert fork_server.warm_workers(["openai"]) is False
    finally:
        fork_server.stop_warm_workers()


def test_a_fork_server_started_by_someone_else_is_kept() -> None:
    from multiprocessing import forkserver

    fork_server.stop_warm_workers()
    try:
        forkserver.ensure_running()  # not through warm_workers: another library's, say
        pid = forkserver._forkserver._forkserver_pid
        assert fork_server.warm_workers(["adk"]) is False
        assert forkserver._forkserver._forkserver_pid == pid
    finally:
        fork_server.stop_warm_workers()
