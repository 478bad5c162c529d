"""``portagent approvals``: list, show, approve, reject, edit — exit codes, messages, no tracebacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from gateway_testkit import ManualClock, ctx, run, tool

from portagent.cli import main
from portagent.contracts.policy import PermissionPolicy
from portagent.tools import ApprovalStore, ToolGateway

WRITE = tool(
    "write_file",
    effect="reversible_write",
    idempotency={"required": True},
    properties={"path": {"type": "string", "pattern": "^/"}, "content": {"type": "string"}},
    required=["path", "content"],
)


def deferred_card(args=None, scope="s1") -> str:
    # one seed per scope: approval ids are unique per run scope, and the CLI tells two runs' cards apart
    gw = ToolGateway([WRITE], ctx(scope=scope, seed=scope, clock=ManualClock(_now())), approver="defer")
    obs = run(gw.call("write_file", args or {"path": "/workspace/a.md", "content": "hola"}))
    return obs.details["approval_id"]


def _now():
    from datetime import UTC, datetime

    return datetime.now(UTC)


def cli(capsys, *argv):
    code = main(["approvals", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_list_and_show(capsys):
    a = deferred_card()
    b = deferred_card({"path": "/workspace/b.md", "content": "x"}, scope="s2")
    code, out, _ = cli(capsys, "list")
    assert code == 0 and a in out and b in out and "pending" in out and "write_file" in out
    code, out, _ = cli(capsys, "list", "--scope", "s2", "--json")
    assert code == 0 and [c["approval_id"] for c in json.loads(out)] == [b]
    code, out, _ = cli(capsys, "list", "--status", "approved")
    assert code == 0 and out.strip() == "no approval cards"
    code, out, _ = cli(capsys, "show", a)
    assert code == 0 and "write_file@1.0.0" in out and '"/workspace/a.md"' in out and "[pending]" in out
    code, out, _ = cli(capsys, "show", a, "--json")
    assert json.loads(out)["approval_id"] == a


def test_approve_then_deciding_again_is_refused(capsys):
    a = deferred_card()
    code, out, _ = cli(capsys, "approve", a, "--reviewer", "ana", "--note", "looks right")
    assert code == 0 and f"{a}: approved by ana" in out
    card = ApprovalStore().get(a)
    assert (card.status, card.reviewer, card.note) == ("approved", "ana", "looks right")
    code, _, err = cli(capsys, "reject", a)
    assert code == 2 and "already approved by ana" in err and "only a pending card" in err
    code, out, _ = cli(capsys, "show", a)
    assert "decided" in out and "ana: looks right" in out


def test_reject(capsys):
    a = deferred_card()
    code, out, _ = cli(capsys, "reject", a, "--reviewer", "bob")
    assert code == 0 and "rejected by bob" in out
    assert ApprovalStore().get(a).status == "rejected"


def test_edit_replaces_or_merges_and_is_validated(capsys):
    a = deferred_card()
    code, _, err = cli(capsys, "edit", a, "--args", '{"path": "relative.md"}')
    assert code == 1 and "refused" in err and "path" in err and "content" in err
    assert ApprovalStore().get(a).status == "pending"
    code, out, _ = cli(
        capsys, "edit", a, "--args", '{"path": "/workspace/c.md"}', "--merge", "--reviewer", "ana"
    )
    assert code == 0 and "edited by ana" in out
    assert ApprovalStore().get(a).effective_args == {"path": "/workspace/c.md", "content": "hola"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("approve", "apr_nope"), "unknown approval id 'apr_nope'"),
        (("show", "apr_nope"), "unknown approval id 'apr_nope'"),
        (("edit", "ID", "--args", "{not json"), "--args is not valid JSON"),
        (("edit", "ID", "--args", "[1, 2]"), "--args must be a JSON object"),
    ],
)
def test_usage_errors_exit_2(capsys, argv, message):
    deferred_card()  # the store exists
    code, _, err = cli(capsys, *argv)
    assert code == 2 and message in err


def test_unknown_id_without_a_store_names_the_folder(capsys, tmp_path):
    code, _, err = cli(capsys, "--home", str(tmp_path / "empty"), "approve", "apr_1")
    assert code == 2 and "no approvals store" in err and "PORTAGENT_HOME" in err
    code, out, _ = cli(capsys, "--home", str(tmp_path / "empty"), "list")
    assert code == 0 and "no approval cards" in out


def test_an_expired_card_cannot_be_approved(capsys):
    from datetime import timedelta

    gw = ToolGateway(
        [WRITE], ctx(scope="s1", clock=ManualClock(_now() - timedelta(hours=1))), approver="defer"
    )
    a = run(gw.call("write_file", {"path": "/x", "content": ""})).details["approval_id"]
    code, _, err = cli(capsys, "approve", a)
    assert code == 2 and "expired" in err
    assert ApprovalStore().get(a).status == "expired"


def test_the_cli_decision_resumes_the_run(capsys, spy):
    a = deferred_card()
    assert cli(capsys, "approve", a)[0] == 0
    gw = ToolGateway(
        [WRITE], ctx(scope="s1", clock=ManualClock(_now())), approver="defer", policy=PermissionPolicy()
    )
    obs = run(gw.call("write_file", {"path": "/workspace/a.md", "content": "hola"}))
    assert obs.ok and len(spy.calls("write_file")) == 1


def test_real_process_no_traceback(tmp_path):
    env = {**os.environ, "PORTAGENT_HOME": str(tmp_path / "h")}
    deferred_card()  # writes into the monkeypatched home, not tmp/h: the store there does not exist
    p = subprocess.run(
        [sys.executable, "-m", "portagent", "approvals", "reject", "apr_missing"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 2 and "Traceback" not in p.stderr and "unknown approval id" in p.stderr
    p = subprocess.run(
        [sys.executable, "-m", "portagent", "approvals", "frobnicate"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 2 and "Traceback" not in p.stderr
