"""Issue 14, finding 5: secrets of many kinds, planted in tool outputs, a handler's exception text,
an approval card's arguments, the user input and the model's final answer, never reach disk.

``run`` and ``eval`` mask them (every file they write is searched, SQLite stores included);
``record`` refuses each kind and leaves nothing behind. The secrets are built here from fragments
(so this file itself holds none whole); the handlers that leak them are written per test.
"""

from __future__ import annotations

import base64
import json
import textwrap
from pathlib import Path

import pytest
import yaml
from _support import run_cli

from portagent.adapters.port import Endpoint
from portagent.contracts.errors import RecordingError
from portagent.contracts.run import RunRequest
from portagent.core.secrets import find_secret, mask_data, mask_text
from portagent.emulator import load_script, serve
from portagent.runtime.record import record_run


def _b64url(data: dict[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


JWT = (
    _b64url({"alg": "HS256", "typ": "JWT"})
    + "."
    + _b64url({"sub": "1234567890", "name": "planted"})
    + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
BASIC = base64.b64encode(b"admin:CorrectHorse9Battery").decode()
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYPLANTEDKEY"

# kind → (the text a tool leaks, the part of it that must never reach disk)
PLANTED: dict[str, tuple[str, str]] = {
    "openai": ("sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6",) * 2,
    "openai_project": ("sk-proj-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe",) * 2,
    "anthropic": ("sk-ant-api03-" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6",) * 2,
    "github": ("ghp_" + "aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5",) * 2,
    "github_pat": ("github_pat_" + "11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789ABCDEFGHIJ",) * 2,
    "aws_key_id": ("AKIA" + "IOSFODNN7PLANTED",) * 2,
    "aws_secret": ("aws_secret_access_key=" + AWS_SECRET, AWS_SECRET),
    "stripe": ("sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",) * 2,
    "slack": ("xoxb-" + "1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",) * 2,
    "jwt": (JWT,) * 2,
    "google": ("AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",) * 2,
    "password": ("password=" + "Hunter2Secret!", "Hunter2Secret!"),
    "basic_auth": ("Authorization: Basic " + BASIC, BASIC),
    "url_password": ("postgres://app:" + "S3cretDbPass" + "@db.internal:5432/app", "S3cretDbPass"),
}
NEEDLES = {kind: needle for kind, (_, needle) in PLANTED.items()}

INPUT_SECRET = "password=" + "InputPassw0rd!"
FINAL_SECRET = "xoxp-" + "9876543210-9876543210987-ZyXwVuTsRqPoNmLkJiHgFeDc"
ARG_SECRET = "sk_live_" + "ArgumentKey0123456789abc"
ERROR_SECRET = "ghp_" + "ErrorTextKey0123456789abcdefghijklmnop"
EXTRA_NEEDLES = {"input": "InputPassw0rd!", "final": FINAL_SECRET, "arg": ARG_SECRET, "error": ERROR_SECRET}

Q_LEAK = f"Rotate the config, my {INPUT_SECRET} please."
Q_STORE = "Store the deploy key."


def _agent_folder(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "planted_handlers.py").write_text(
        textwrap.dedent(
            f"""
            PLANTED = {json.dumps({k: v for k, (v, _) in PLANTED.items()})}

            def leak(kind):
                if kind == "all":
                    return dict(PLANTED)
                return {{"kind": kind, "value": PLANTED.get(kind, "nothing to hide")}}

            def boom():
                raise RuntimeError("upstream refused the key {ERROR_SECRET}")

            def save(kind):
                return {{"saved": dict(PLANTED)}}

            def store(secret):
                return {{"stored": True}}
            """
        )
    )
    tool = {"type": "object", "additionalProperties": False}
    agent = {
        "kind": "agent",
        "schema_version": 1,
        "name": "planted",
        "version": "1.0.0",
        "instructions": "Handle configuration.",
        "models": {"openai": "gpt-4.1-mini", "claude": "claude-sonnet-4-6", "adk": "gemini-2.5-flash"},
        "policy": "policy.yaml",
        "tools": [
            {
                "name": "leak",
                "description": "Read configuration values.",
                "effect": "read",
                "input_schema": {**tool, "properties": {"kind": {"type": "string"}}, "required": ["kind"]},
                "handler": "planted_handlers:leak",
            },
            {
                "name": "boom",
                "description": "Call the upstream.",
                "effect": "read",
                "input_schema": {**tool, "properties": {}},
                "handler": "planted_handlers:boom",
            },
            {
                "name": "save",
                "description": "Save configuration values.",
                "effect": "reversible_write",
                "idempotency": {"required": True, "key_template": "save:{kind}"},
                "input_schema": {**tool, "properties": {"kind": {"type": "string"}}, "required": ["kind"]},
                "handler": "planted_handlers:save",
            },
            {
                "name": "store",
                "description": "Store a secret.",
                "effect": "reversible_write",
                "idempotency": {"required": True, "key_template": "store:{secret}"},
                "input_schema": {
                    **tool,
                    "properties": {"secret": {"type": "string"}},
                    "required": ["secret"],
                },
                "handler": "planted_handlers:store",
            },
        ],
    }
    policy = {
        "kind": "policy",
        "schema_version": 1,
        "name": "planted",
        "version": "1",
        "rules": [
            {"id": "store-reviewed", "decision": "approval_required", "reason": "reviewed", "tool": "store"},
            {"id": "save-allowed", "decision": "allow", "reason": "saving is routine", "tool": "save"},
        ],
    }
    script = {
        "kind": "emulator-script",
        "schema_version": 1,
        "name": "planted",
        "conversations": [
            {
                "name": "leak",
                "match": {"first_user": Q_LEAK},
                "turns": [
                    {
                        "tool_calls": [
                            {"name": "leak", "arguments": {"kind": "all"}},
                            {"name": "boom", "arguments": {}},
                            {"name": "save", "arguments": {"kind": "all"}},
                        ]
                    },
                    {"text": f"Done. The token is {FINAL_SECRET}."},
                ],
            },
            {
                "name": "store",
                "match": {"first_user": Q_STORE},
                "turns": [
                    {"tool_calls": [{"name": "store", "arguments": {"secret": ARG_SECRET}}]},
                    {"text": "Stored."},
                ],
            },
        ]
        + [
            {
                "name": f"one-{kind}",
                "match": {"first_user": f"leak {kind}"},
                "turns": [{"tool_calls": [{"name": "leak", "arguments": {"kind": kind}}]}, {"text": "ok"}],
            }
            for kind in [*PLANTED, "clean"]
        ],
    }
    for name, data in (("agent.yaml", agent), ("policy.yaml", policy), ("emulator.yaml", script)):
        (root / name).write_text(yaml.safe_dump(data, sort_keys=False))
    return root


def _leaks(root: Path) -> list[str]:
    """Every (file, secret kind) where a planted secret is found in a file under ``root``."""
    found = []
    needles = {**NEEDLES, **EXTRA_NEEDLES}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if path.parent.name in ("agent", "__pycache__"):
            continue  # the inputs of the test itself (the agent, its handlers, scripts and suite)
        data = path.read_bytes()
        found += [f"{path.relative_to(root)}: {kind}" for kind, n in needles.items() if n.encode() in data]
    return found


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = _agent_folder(tmp_path / "agent")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("PORTAGENT_HOME", str(tmp_path / "home"))
    return folder


def test_the_scanner_finds_every_planted_kind() -> None:
    for kind, (text, needle) in PLANTED.items():
        for shape in (text, json.dumps({"v": f"x {text} y"}), f"k: '{text}'"):
            assert needle not in mask_text(shape), (kind, shape)
        assert find_secret({"a": [text]}) is not None, kind
    masked = mask_text(json.dumps({k: v for k, (v, _) in PLANTED.items()}))
    assert json.loads(masked).keys() == PLANTED.keys()  # masked JSON stays JSON


def test_the_scanner_leaves_ordinary_trace_values_alone() -> None:
    ordinary = {
        "run_id": "run_0c742820f420bce4",
        "spec_hash": "sha256:" + "ab12" * 16,
        "trace_id": "dc9c15f311c73361a19b5ad141ba05dc",
        "model": "gpt-4.1-mini",
        "input_tokens": 1234,
        "max_tokens": 4096,
        "tool": "reset_password",
        "text": "Your password must have 12 characters; the token expires in 30 days.",
        "key": "sk-portagent-dummy",
    }
    assert mask_data(ordinary) == ordinary


@pytest.mark.parametrize("provider", ["openai", "adk"])
def test_run_masks_every_kind_in_every_file_it_writes(planted: Path, tmp_path: Path, provider: str) -> None:
    out = tmp_path / "out"
    code, stdout, err = run_cli(
        "run", str(planted / "agent.yaml"), "--provider", provider, "--input", Q_LEAK,
        "--emulator", str(planted / "emulator.yaml"), "--out", str(out), "--idempotency-key", "leak-1",
    )  # fmt: skip
    assert code == 0, stdout + err
    code, stdout2, err = run_cli(
        "run", str(planted / "agent.yaml"), "--provider", provider, "--input", Q_STORE,
        "--emulator", str(planted / "emulator.yaml"), "--out", str(tmp_path / "out2"),
        "--idempotency-key", "store-1", "--approver", "defer",
    )  # fmt: skip
    assert code == 0 and "waiting_approval" in stdout2, stdout2 + err
    # the secrets really flowed: each kind's mask is in the trace, the handler ran, the card exists
    trace = [json.loads(x) for x in (out / "trace.jsonl").read_text().splitlines()]
    leak = next(e for e in trace if e["type"] == "tool.result" and e["tool"] == "leak")
    assert leak["ok"] and set(leak["output"]) >= set(PLANTED), leak
    assert all("[REDACTED:" in str(leak["output"][k]) for k in PLANTED), leak["output"]
    boom = next(e for e in trace if e["type"] == "tool.result" and e["tool"] == "boom")
    assert boom["error"] == "handler_error" and "[REDACTED:github-token]" in json.dumps(boom)
    save = next(e for e in trace if e["type"] == "tool.result" and e["tool"] == "save")
    assert save["ok"] and save["effect_id"], save  # the effect ran and its outcome is in ledger.db
    home = tmp_path / "home"
    assert all((home / db).is_file() for db in ("approvals.db", "runs.db", "ledger.db"))
    assert _leaks(tmp_path) == []
    assert FINAL_SECRET not in stdout and "[REDACTED:slack-token]" in stdout  # the result printed, too


def test_eval_masks_every_kind_in_results_and_reports(planted: Path, tmp_path: Path) -> None:
    suite = {
        "kind": "suite",
        "schema_version": 1,
        "suite_id": "planted",
        "dataset_version": "1",
        "owner": "tests",
        "agent": "agent.yaml",
        "providers": ["openai"],
        "repeats": 1,
        "emulator_script": "emulator.yaml",
        "cases": [
            {
                "case_id": "leak",
                "input": Q_LEAK,
                "why_it_exists": "secrets in outputs, errors, input and answer",
                "expect": {"final_must_contain": ["Done"], "required_tools": ["leak"]},
            }
        ],
    }
    (planted / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    out = tmp_path / "results"
    code, stdout, err = run_cli(
        "eval", str(planted / "suite.yaml"), "--emulator", "--providers", "openai", "--out", str(out),
        "--workers", "1",
    )  # fmt: skip
    assert code in (0, 1), stdout + err
    assert (out / "report.html").is_file() and (out / "report.json").is_file()
    assert "[REDACTED:" in (out / "report.json").read_text() or "[REDACTED:" in "".join(
        p.read_text() for p in out.rglob("trace.jsonl")
    )
    assert _leaks(tmp_path) == []


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_record_refuses_each_kind_and_writes_nothing(planted: Path, tmp_path: Path, kind: str) -> None:
    import asyncio

    folder = tmp_path / "cassettes" / kind / "openai" / "r0"

    async def go() -> object:
        with serve(load_script(planted / "emulator.yaml")) as emu:
            ep = Endpoint(source="emulator", base_url=emu.base_url, api_key="sk-portagent-dummy")
            return await record_run(
                planted / "agent.yaml", RunRequest(input=f"leak {kind}", provider="openai"), folder, ep
            )

    with pytest.raises(RecordingError) as refused:
        asyncio.run(go())
    assert "secret survived scrubbing" in str(refused.value)
    assert not folder.exists() and not any(folder.parent.iterdir())
    assert _leaks(tmp_path) == []


def test_record_cli_prints_the_whole_refusal_names_the_folder_and_leaves_no_empty_out(
    planted: Path, tmp_path: Path
) -> None:
    """The refusal was cut at 300 characters (mid-word, the remedy lost) and named the staging folder
    (``.r0.stage-…``), gone by then; the ``--out`` folder record had made stayed behind, empty."""
    out = tmp_path / "new" / "cas"
    argv = [
        "record", str(planted / "agent.yaml"), "--providers", "openai", "--emulator",
        str(planted / "emulator.yaml"), "--case", "leaky", "--input", "leak openai",
    ]  # fmt: skip
    code, stdout, err = run_cli(*argv, "--out", str(out))
    assert code == 1, stdout + err
    text = " ".join(stdout.split())  # the console wraps long lines
    final = out / "adhoc" / "planted@1.0.0" / "leaky" / "openai" / "r0" / "cassette.yaml"
    assert f"refusing to write {final}: a secret survived scrubbing" in text
    assert text.rstrip().endswith("0 recorded, 0 skipped, 1 failed")
    assert "Remove it from the tool output or request (or scrub its header)" in text
    assert ".stage-" not in text
    assert not (tmp_path / "new").exists()  # the folders this record made are gone again
    mine = tmp_path / "mine"
    mine.mkdir()  # a folder that was there before is kept, empty or not
    code, _, _ = run_cli(*argv, "--out", str(mine))
    assert code == 1 and mine.is_dir() and not any(mine.iterdir())
    assert _leaks(tmp_path) == []


def test_a_handler_error_with_a_key_is_masked_before_record_writes(planted: Path, tmp_path: Path) -> None:
    """The exception text is masked in the observation itself, so record keeps the run (the model saw
    the mask) and no file holds the key."""
    code, stdout, err = run_cli(
        "run", str(planted / "agent.yaml"), "--provider", "openai", "--input", Q_LEAK,
        "--emulator", str(planted / "emulator.yaml"), "--out", str(tmp_path / "o"),
    )  # fmt: skip
    assert code == 0, stdout + err
    assert ERROR_SECRET not in (tmp_path / "o" / "trace.jsonl").read_text()


def test_a_refused_recording_does_not_break_the_next_one(planted: Path, tmp_path: Path) -> None:
    """vcrpy saves before it unpatches: a refusal raised inside its exit left its patches on, and the next
    recording in the process lost its interactions (a folder without cassette.yaml)."""
    import asyncio

    async def go(question: str, folder: Path) -> object:
        with serve(load_script(planted / "emulator.yaml")) as emu:
            ep = Endpoint(source="emulator", base_url=emu.base_url, api_key="sk-portagent-dummy")
            return await record_run(
                planted / "agent.yaml", RunRequest(input=question, provider="openai"), folder, ep
            )

    for i in range(3):
        with pytest.raises(RecordingError, match="secret survived scrubbing"):
            asyncio.run(go("leak stripe", tmp_path / f"bad{i}" / "r0"))
        clean = tmp_path / f"clean{i}" / "r0"
        asyncio.run(go("leak clean", clean))
        cassette = yaml.safe_load((clean / "cassette.yaml").read_text())
        assert len(cassette["interactions"]) == 2
    assert _leaks(tmp_path) == []


def test_the_emulator_request_log_masks_org_project_and_key_like_values(
    planted: Path, tmp_path: Path
) -> None:
    """The real openai client sends its organization and project headers; the log (in memory and on
    disk) proves they were sent, in which header, without holding them — and a key in the body is masked."""
    import openai

    org, project = "org-" + "PlantedOrganization42", "proj_" + "PlantedProject0042"
    log = tmp_path / "requests.jsonl"
    with serve(load_script(planted / "emulator.yaml"), log_path=log) as emu:
        client = openai.OpenAI(
            base_url=emu.openai_base_url, api_key="sk-portagent-dummy", organization=org, project=project
        )
        client.chat.completions.create(
            model="gpt-4.1-mini",
            messages=[
                {"role": "user", "content": "leak clean"},
                {"role": "user", "content": PLANTED["stripe"][0]},
            ],
        )
        entries = emu.requests()
    headers = entries[-1]["headers"]
    assert headers["openai-organization"] == "<masked>" and headers["openai-project"] == "<masked>"
    on_disk = log.read_text()
    for text in (json.dumps(entries), on_disk):
        assert org not in text and project not in text and NEEDLES["stripe"] not in text
    assert "[REDACTED:stripe-key]" in on_disk


# Held-out shapes (adversarial re-test of issue 14): secret-named variables beyond *_API_KEY/*_TOKEN, an
# env secret written base64-encoded, percent-encoded or JSON-escaped, and a credential in a URL query.
ENV_SHAPES = {
    "MY_SERVICE_KEY": "zq8Xk2PpL0v" + "R7tWmAb",
    "DB_PASS": "hunter2" + "hunter2X",
    "SECRET_KEY": "dj4ngo-s3cr3t" + "-v4lue-xyz",
    "GH_PAT": "0123456789abcdef" * 2 + "01234567",
    "SMTP_PASSWORD_FILE_CONTENT": 'p"ss\\w' + "ord-123",
}


def test_secret_named_variables_are_masked_in_every_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in ENV_SHAPES.items():
        monkeypatch.setenv(name, value)
    for name, value in ENV_SHAPES.items():
        raw = value.encode()
        from urllib.parse import quote

        for shape in (
            value,
            base64.b64encode(raw).decode(),
            base64.urlsafe_b64encode(raw).decode().rstrip("="),
            quote(value, safe=""),
        ):
            text = json.dumps({"out": f"leaked {shape} here"})
            masked = mask_text(text)
            assert shape not in masked, (name, shape)
            assert json.loads(masked)["out"].startswith("leaked [REDACTED:"), masked
        assert find_secret({"a": value}) is not None, name
    # the working folder (PWD) is not a secret
    monkeypatch.setenv("PWD", "/srv/some/workspace")
    assert mask_text("cwd /srv/some/workspace") == "cwd /srv/some/workspace"


def test_a_credential_in_a_url_query_is_masked() -> None:
    token = "ZT9mPq2LkW8" + "xN4vB7cR1"
    for url in (
        f"https://hooks.example/x?token={token}&page=2",
        f"https://s3.example/o?X-Amz-Signature={token}",
        f"https://api.example/v1?api_key={token}",
        f"https://api.example/v1?a=1&key={token}#frag",
    ):
        masked = mask_text(json.dumps({"url": url}))
        assert token not in masked and "[REDACTED:" in masked, url
    ordinary = "https://docs.example/search?page=2&id=123456789&q=refund+deadline"
    assert mask_text(ordinary) == ordinary


def test_a_token_given_as_a_urls_whole_userinfo_is_masked() -> None:
    """``http://TOKEN@host/v1`` (a token as the user name, no password) stayed in run.json in clear: only
    ``user:password@`` was a URL credential. A short user name alone (``ssh://git@host``) is left."""
    token = "ghp_" + "Zk81mQp0Xw2Lr7Ty" + "Aa11"
    for url in (f"http://{token}@127.0.0.1:8080/v1", f"https://x{token[4:]}@hooks.example/in"):
        masked = mask_data({"base_url": url})["base_url"]
        assert token[4:] not in masked and "[REDACTED:" in masked and masked.endswith(url.split("@")[1]), url
    ordinary = "ssh://git@github.com/org/repo.git"
    assert mask_text(ordinary) == ordinary


def test_the_environment_is_read_at_each_mask(monkeypatch: pytest.MonkeyPatch) -> None:
    """The protected values are worked out once per distinct environment: a variable set, changed or
    removed between two masks is honoured by the second (a run may set one mid-way)."""
    first, second = "vq8Lk2PzR7" + "mW4xT1nB", "Hc5Jd9QaE3" + "sY6uZ0oG"
    monkeypatch.delenv("PORTAGENT_TEST_API_KEY", raising=False)
    assert mask_text(f"value {first}") == f"value {first}"
    monkeypatch.setenv("PORTAGENT_TEST_API_KEY", first)
    assert first not in mask_text(f"value {first}")
    monkeypatch.setenv("PORTAGENT_TEST_API_KEY", second)  # same variables, another value
    assert first in mask_text(f"value {first}") and second not in mask_text(f"value {second}")
    monkeypatch.delenv("PORTAGENT_TEST_API_KEY")
    assert mask_text(f"value {second}") == f"value {second}"


def test_masked_short_texts_are_kept_per_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """``mask_data`` keeps the masked form of short texts (ids and names recur in every event), but a
    kept form counts only for the environment it was worked out in: the same text seen again after a
    variable appears, changes or goes is masked against the new environment."""
    value = "Ru7Kq2Xw" + "9PzL4mTb"
    event = {"args": {"note": f"ref {value}", "n": 3, "ok": True, "tags": [f"t {value}", None]}}
    monkeypatch.delenv("PORTAGENT_TEST_TOKEN", raising=False)
    assert mask_data(event) == event  # kept unmasked for this environment
    monkeypatch.setenv("PORTAGENT_TEST_TOKEN", value)
    masked = mask_data(event)
    assert value not in json.dumps(masked)
    assert masked["args"]["n"] == 3 and masked["args"]["ok"] is True and masked["args"]["tags"][1] is None
    monkeypatch.delenv("PORTAGENT_TEST_TOKEN")
    assert mask_data(event) == event  # back to an environment without it
    monkeypatch.setenv("PORTAGENT_TEST_TOKEN", value)
    assert value not in json.dumps(mask_data(event))  # and again with it
