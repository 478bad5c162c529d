"""A ``--base-url`` carrying credentials (``http://u:PASS@host/v1``), resumed and run again.

QA: ``run.json`` rightly keeps such a URL with its credentials masked, but ``portagent resume`` then
called the masked URL (a traceback: ``urlsplit`` reads ``u:[REDACTED:…]@host`` as a broken IPv6 host),
and running the same command again with the same ``--idempotency-key`` was refused as "a different
endpoint" (the masked stored URL against the typed one), the refusal printing the password. Real runs on
the emulator (a free port, the password in the URL's userinfo), approved, then resumed both ways.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _support import portagent_home, run_cli
from note_agent import note_turns, sent, write_note_agent

from portagent.adapters.base import REGISTRY
from portagent.emulator import load_script, serve

PASSWORD = "Zk81mQp0Xw2Lr7Ty"
INPUT = "Send the plain note."
NOTE = "the parcel left on Monday"


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    models = {"openai": "gpt-4.1-mini", "anthropic": "claude-sonnet-4-6"}
    conversation = {"name": "plain", "match": {"first_user": INPUT}, "turns": note_turns(NOTE)}
    return write_note_agent(tmp_path / "agent", "base_url_resume_tools", models, [conversation], monkeypatch)


def _credentialed(base_url: str, password: str = PASSWORD) -> str:
    return base_url.replace("://", f"://u:{password}@", 1) + "/v1"


def _start(agent: Path, provider: str, url: str, out: Path) -> tuple[str, str]:
    """Run until the tool call waits for approval, approve it; returns (run id, the command's output)."""
    code, stdout, stderr = run_cli(
        "run", str(agent / "agent.yaml"), "--provider", provider, "--live", "--base-url", url,
        "--input", INPUT, "--approver", "defer", "--idempotency-key", "k-cred", "--out", str(out),
    )  # fmt: skip
    assert code == 0 and "waiting_approval" in stdout, stdout + stderr
    run_id = stdout.split("  run ", 1)[1].split()[0]
    approval_id = next(ln.split()[1] for ln in stdout.splitlines() if ln.startswith("approval "))
    assert run_cli("approvals", "approve", approval_id)[0] == 0
    return run_id, stdout + stderr


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_resume_asks_for_the_credentials_and_takes_them_from_base_url(
    agent: Path, provider: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = REGISTRY[provider]
    monkeypatch.setenv(info.key_env, info.dummy_key)
    monkeypatch.delenv(info.base_url_env, raising=False)
    with serve(load_script(agent / "emulator.yaml")) as emu, portagent_home(tmp_path / "home"):
        url = _credentialed(emu.base_url)
        run_id, _ = _start(agent, provider, url, tmp_path / "out")

        # no URL to take the credentials from: one message, exit 2, nothing run, no password shown
        code, stdout, stderr = run_cli("resume", run_id)
        assert code == 2, stdout + stderr
        assert "Traceback" not in stderr and PASSWORD not in stdout + stderr
        assert "credentials" in stderr and "--base-url" in stderr and info.base_url_env in stderr
        assert f"{emu.base_url}/v1" in stderr  # the endpoint, named without its credentials
        assert sent(agent) == []

        # another endpoint (another port) is not the run's: refused, its password not shown either
        other = _credentialed("http://127.0.0.1:9", "Other-Secret-0042")
        code, stdout, stderr = run_cli("resume", run_id, "--base-url", other)
        assert code == 2 and "not the endpoint" in stderr, stdout + stderr
        assert "Other-Secret-0042" not in stdout + stderr and PASSWORD not in stdout + stderr
        assert sent(agent) == []

        code, stdout, stderr = run_cli("resume", run_id, "--base-url", url)
        assert code == 0 and "completed" in stdout, stdout + stderr
        assert PASSWORD not in stdout + stderr
    assert sent(agent) == [NOTE]
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file():
            assert PASSWORD not in path.read_text(errors="replace"), path


def test_resume_takes_the_credentials_from_the_base_url_variable_of_that_endpoint(
    agent: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = REGISTRY["openai"]
    monkeypatch.setenv(info.key_env, info.dummy_key)
    monkeypatch.delenv(info.base_url_env, raising=False)
    with serve(load_script(agent / "emulator.yaml")) as emu, portagent_home(tmp_path / "home"):
        url = _credentialed(emu.base_url)
        run_id, _ = _start(agent, "openai", url, tmp_path / "out")
        monkeypatch.setenv(info.base_url_env, _credentialed("http://127.0.0.1:9"))  # another endpoint
        code, stdout, stderr = run_cli("resume", run_id)
        assert code == 2 and "credentials" in stderr and PASSWORD not in stdout + stderr, stdout + stderr
        monkeypatch.setenv(info.base_url_env, url.removesuffix("/v1"))  # the same endpoint as its root
        code, stdout, stderr = run_cli("resume", run_id)
        assert code == 0 and "completed" in stdout, stdout + stderr
    assert sent(agent) == [NOTE]


def test_a_base_url_that_is_no_url_is_one_message() -> None:
    from portagent.contracts.errors import UsageError
    from portagent.runtime.resume import resume_base_url

    stored = "http://u:[REDACTED:url-credentials]@127.0.0.1:8/v1"
    with pytest.raises(UsageError, match="--base-url: not a URL"):
        resume_base_url("r1", stored, f"http://u:{PASSWORD}@127.0.0.1:99999/v1", None, None)
    with pytest.raises(UsageError, match="credentials") as refused:  # a broken variable is no source
        resume_base_url("r1", stored, None, "OPENAI_BASE_URL", "http://[::1/v1")
    assert "http://127.0.0.1:8/v1" in str(refused.value) and "[REDACTED" not in str(refused.value)
    assert resume_base_url("r1", stored, None, "OPENAI_BASE_URL", f"http://u:{PASSWORD}@127.0.0.1:8") == (
        f"http://u:{PASSWORD}@127.0.0.1:8"
    )


def test_the_same_run_command_again_resumes_and_another_endpoint_is_named_without_its_password(
    agent: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = REGISTRY["openai"]
    monkeypatch.setenv(info.key_env, info.dummy_key)
    monkeypatch.delenv(info.base_url_env, raising=False)
    out = tmp_path / "out"
    with serve(load_script(agent / "emulator.yaml")) as emu, portagent_home(tmp_path / "home"):
        url = _credentialed(emu.base_url)
        _start(agent, "openai", url, out)
        argv = ["run", str(agent / "agent.yaml"), "--provider", "openai", "--live", "--input", INPUT,
                "--approver", "defer", "--idempotency-key", "k-cred", "--out", str(out)]  # fmt: skip

        with serve(load_script(agent / "emulator.yaml")) as elsewhere:
            code, stdout, stderr = run_cli(*argv, "--base-url", _credentialed(elsewhere.base_url))
        assert code == 2 and "a different endpoint" in stderr, stdout + stderr
        assert PASSWORD not in stdout + stderr and "[REDACTED" not in stderr
        assert sent(agent) == []

        code, stdout, stderr = run_cli(*argv, "--base-url", url)
        assert code == 0 and "completed" in stdout, stdout + stderr
        assert PASSWORD not in stdout + stderr
    assert sent(agent) == [NOTE]
