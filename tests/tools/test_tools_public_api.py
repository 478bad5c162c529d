"""The public surface of ``portagent.tools`` is small and pinned."""

from __future__ import annotations

import portagent.tools as tools


def test_public_names():
    assert sorted(tools.__all__) == [
        "ApprovalStore",
        "ApproverDecision",
        "AutoApprove",
        "AutoDeny",
        "CallbackApprover",
        "ContextError",
        "Defer",
        "EditRefusedError",
        "EffectLedger",
        "GatewayContext",
        "InteractiveApprover",
        "LedgerEntry",
        "Observation",
        "PolicyEngine",
        "PolicyInputError",
        "PreparedCall",
        "ScriptedApprover",
        "ToolFailure",
        "ToolGateway",
        "make_approver",
    ]
    for name in tools.__all__:
        assert getattr(tools, name) is not None


def test_home_resolution(tmp_path, monkeypatch):
    import pytest

    from portagent.contracts.errors import UsageError
    from portagent.core.home import portagent_home, state_file

    monkeypatch.delenv("PORTAGENT_HOME")
    assert str(portagent_home()) == ".portagent"
    monkeypatch.setenv("PORTAGENT_HOME", str(tmp_path / "h"))
    assert state_file("ledger.db") == tmp_path / "h" / "ledger.db" and (tmp_path / "h").is_dir()
    assert portagent_home(tmp_path / "other") == tmp_path / "other"
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="not a folder"):
        portagent_home(tmp_path / "file")
