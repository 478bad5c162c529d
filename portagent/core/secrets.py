"""The one secret scanner every writer uses (cassettes, traces, run.json, runs.db, reports, the
emulator's request log, the approvals store).

Three sources of findings, merged into spans of text:

- the regex plugins of ``detect-secrets`` (AWS key ids, GitHub, GitLab, Slack, Stripe, JWT, OpenAI,
  npm, PyPI, SendGrid, Twilio, Discord, Telegram, Mailchimp, Square, Azure storage, credentials in
  URLs): a maintained catalogue of key shapes;
- portagent's own patterns for what those plugins miss or match too narrowly: Anthropic ``sk-ant-``
  and OpenAI ``sk-``/``sk-proj-`` keys of any shape, Google ``AIza…`` keys and ``ya29.`` tokens,
  fine-grained GitHub ``github_pat_`` tokens, AWS secret access keys next to an ``aws…key`` name,
  ``Bearer``/``Basic`` credentials, PEM private-key blocks and password-like assignments
  (``password=…``, ``"api_key": "…"``);
- the values of the current ``*_API_KEY`` / ``*_TOKEN`` / ``*_SECRET`` / ``*_PASSWORD`` variables, and
  those portagent hands on to an MCP server's ``env`` from ``${NAME}`` (:func:`protect_variable`), in
  their encoded forms and in any text once its JSON escapes and percent-encoding are undone, level after
  level (:func:`scan`: a tool output travels JSON-encoded inside a JSON body).

Writers call :func:`mask_text` (a JSON or YAML text about to be written: a mask never contains a
quote or a backslash, so masked JSON stays valid) or :func:`mask_data` (a value before it is
serialized); ``record`` calls :func:`find_secret` and refuses instead (``recording/scrub.py``).
A masked secret reads ``[REDACTED:<kind>]``: the same input always gives the same text.
"""

from __future__ import annotations

import base64
import importlib
import json
import os
import re
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any
from urllib.parse import quote

from portagent.core.encoded import Finding, found_in_views, literal_findings, may_be_encoded_in

MASK_PREFIX = "[REDACTED:"

ALLOWED_DUMMIES: frozenset[str] = frozenset(
    {"sk-portagent-dummy", "sk-ant-portagent-dummy", "portagent-dummy-key", "sk-dummy", "dummy"}
)
"""The dummy keys sent to the emulator and in replays (``adapters/base.py``): never secrets."""

ENV_SUFFIXES = (
    "_API_KEY",
    "_APIKEY",
    "_KEY",
    "_TOKEN",
    "_SECRET",
    "_PASSWORD",
    "_PASSWD",
    "_PASS",
    "_PWD",
    "_PAT",
    "_CREDENTIALS",
    "_SECRET_ACCESS_KEY",
    "_ACCESS_KEY_ID",
)
"""Environment variables whose values are protected literally (values of 8 characters or more), also
when a name only contains SECRET, TOKEN or PASSWORD (``SECRET_KEY``, ``DB_PASS``, ``MY_SERVICE_KEY``).
``PWD`` itself (the working folder) is not a secret."""

_ENV_WORDS = ("SECRET", "TOKEN", "PASSWORD", "PASSWD", "APIKEY", "API_KEY")
_ENV_NOT_SECRET = frozenset({"PWD", "OLDPWD", "GPG_KEY"})

# Characters a secret value may contain inside JSON/YAML/header text: never a quote, a backslash
# (the start of a JSON escape), whitespace or a separator, so a mask never breaks the text around it.
_VAL = r"[^\s\"'\\,;&<>{}\[\]()]"

_OWN_PATTERNS: tuple[tuple[str, re.Pattern[str], int], ...] = (
    ("anthropic-key", re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"), 0),
    ("openai-key", re.compile(r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}"), 0),
    ("google-key", re.compile(r"AIza[0-9A-Za-z_\-]{30,}"), 0),
    ("google-token", re.compile(r"ya29\.[0-9A-Za-z_\-]{20,}"), 0),
    ("github-token", re.compile(r"github_pat_[A-Za-z0-9_]{22,}"), 0),
    ("github-token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), 0),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"), 0),
    ("stripe-key", re.compile(r"\b[rsp]k_live_[0-9A-Za-z]{16,}"), 0),
    ("aws-access-key", re.compile(r"\b(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}\b"), 0),
    (
        "aws-secret-key",
        re.compile(
            r"(?i)aws[\w\-. ]{0,25}?(?:secret|key)[\w\-. ]{0,20}?[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
        ),
        1,
    ),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*"), 0),
    ("bearer-token", re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/\-]{16,}=*)"), 1),
    ("basic-auth", re.compile(r"(?i)\bbasic\s+([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])"), 1),
    ("url-credentials", re.compile(r"://[^\s/:@\"'\\]+:([^\s/@\"'\\]+)@"), 1),
    # a token given as the whole userinfo (``https://TOKEN@host``, as GitHub and many webhooks take one); a
    # short user name alone (``ssh://git@host``) is not a credential
    ("url-credentials", re.compile(r"://([^\s/:@\"'\\]{16,})@"), 1),
    (
        "url-query-credential",
        re.compile(
            r"(?i)[?&#;](?:[a-z0-9_.\-]*[_.\-])?(?:token|key|apikey|api_key|sig|signature|secret|password|pass|pwd"
            r"|auth|credential|credentials|access_token|code)=([^\s&#\"'\\<>]{8,})"
        ),
        1,
    ),
    (
        "private-key",
        re.compile(
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----[^\"']*?(?:-----END [A-Z ]*PRIVATE KEY-----|(?=[\"'])|\Z)"
        ),
        0,
    ),
    (
        "password",
        re.compile(
            r"(?i)(?<![A-Za-z0-9])(?:password|passwd|passphrase|pwd|secret|client_secret|secret_key|api[_-]?key"
            r"|access[_-]?token|auth[_-]?token|refresh[_-]?token|private[_-]?key)"
            r"(?![A-Za-z0-9])[\"']?\s*[:=]\s*[\"']?(" + _VAL + r"{6,})"
        ),
        1,
    ),
)
"""(kind, pattern, group): the group is the secret part of the match."""

# detect-secrets regex plugins: module, class, kind. High-entropy and keyword plugins are left out
# (hashes and ids everywhere in a trace would be masked); the keyword case is covered above.
_DS_PLUGINS: tuple[tuple[str, str, str], ...] = (
    ("aws", "AWSKeyDetector", "aws-key"),
    ("azure_storage_key", "AzureStorageKeyDetector", "azure-storage-key"),
    ("basic_auth", "BasicAuthDetector", "url-credentials"),
    ("discord", "DiscordBotTokenDetector", "discord-token"),
    ("github_token", "GitHubTokenDetector", "github-token"),
    ("gitlab_token", "GitLabTokenDetector", "gitlab-token"),
    ("jwt", "JwtTokenDetector", "jwt"),
    ("mailchimp", "MailchimpDetector", "mailchimp-key"),
    ("npm", "NpmDetector", "npm-token"),
    ("openai", "OpenAIDetector", "openai-key"),
    ("pypi_token", "PypiTokenDetector", "pypi-token"),
    ("sendgrid", "SendGridDetector", "sendgrid-key"),
    ("slack", "SlackDetector", "slack-token"),
    ("square_oauth", "SquareOAuthDetector", "square-token"),
    ("stripe", "StripeDetector", "stripe-key"),
    ("telegram_token", "TelegramBotTokenDetector", "telegram-token"),
    ("twilio", "TwilioKeyDetector", "twilio-key"),
)


@lru_cache(maxsize=1)
def _patterns() -> tuple[tuple[str, re.Pattern[str], int, Any], ...]:
    """portagent's patterns plus the detect-secrets plugins' (loaded once), each with its RE2 gate
    (``core.regex_prefilter``: skips the pattern on a text where it cannot match; None: always run)."""
    from portagent.core.regex_prefilter import prefilter

    out = list(_OWN_PATTERNS)
    for module, cls, kind in _DS_PLUGINS:
        try:
            plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), cls)
        except (ImportError, AttributeError):  # pragma: no cover - a plugin renamed upstream
            continue
        for pat in getattr(plugin, "denylist", ()):
            if isinstance(pat, re.Pattern):
                out.append((kind, pat, 1 if pat.groups else 0))
    return tuple((kind, pat, group, prefilter(pat)) for kind, pat, group in out)


@lru_cache(maxsize=1)
def _any_gate() -> Any:
    """One RE2 gate for every pattern at once (``regex_prefilter.prefilter_any``), or None."""
    from portagent.core.regex_prefilter import prefilter_any

    return prefilter_any([pat for _, pat, _, _ in _patterns()])


def _secret_env_name(name: str) -> bool:
    upper = name.upper()
    if upper in _ENV_NOT_SECRET:
        return False
    return upper.endswith(ENV_SUFFIXES) or any(word in upper for word in _ENV_WORDS)


def _encodings(value: str) -> set[str]:
    """``value`` and the forms it takes once encoded on its way to a file: base64 (standard and URL-safe,
    with and without padding), percent-encoding (a URL query) and a JSON string's escapes."""
    raw = value.encode("utf-8", "surrogatepass")
    forms = {
        value,
        quote(value, safe=""),
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
    }
    for encoded in (base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()):
        forms.update({encoded, encoded.rstrip("=")})
    return {f for f in forms if len(f) >= 8}


def env_secret_values() -> list[str]:
    """Values of the current secret-named variables worth protecting (≥ 8 chars, not a dummy), those
    handed to :func:`protect_variable` included, in their plain and encoded forms (base64, percent-encoded,
    JSON-escaped), longest first.

    Read on every mask (a variable set mid-run is protected from then on), but worked out once per
    distinct environment: the trace recorder masks every event."""
    return list(_current_env_values())


NOT_SECRET_VARIABLES: frozenset[str] = frozenset(
    {
        "PATH", "HOME", "USER", "USERNAME", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ",
        "TMPDIR", "TMP", "TEMP", "PWD", "OLDPWD", "HOSTNAME", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV",
        "NODE_PATH", "NODE_ENV", "JAVA_HOME", "GOPATH", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
    }
)  # fmt: skip
"""Variables :func:`protect_variable` declines (with ``LC_*`` and ``XDG_*``): an MCP spec passes ``PATH`` or
``HOME`` on as it passes a token, and masking a path everywhere would hide what a trace is read for."""

_PROTECTED: frozenset[str] = frozenset()
"""Variables :func:`protect_variable` was given in this process (replaced, never changed: maskers read it
unlocked)."""


def protect_variable(name: str) -> bool:
    """Treat the variable ``name`` as secret-named from now on in this process: its value (whatever it
    is at each mask, as for ``*_TOKEN``) is masked by every writer and refused by ``record``. For the
    variables portagent itself hands on whatever they are called: an MCP server's
    ``env: {API_TOKEN: "${WEATHER_AUTH}"}`` exists so that no secret is written in the spec, and the
    server may echo it back.

    The variable, not its value, is remembered: one unset or changed later protects nothing or its new
    value, so a long-lived process (a server, a test session) does not go on masking a value that was
    once a server's setting. A well-known non-secret variable (:data:`NOT_SECRET_VARIABLES`) is
    declined. True when the variable is protected now."""
    global _PROTECTED
    upper = name.upper()
    if upper in NOT_SECRET_VARIABLES or upper.startswith(("LC_", "XDG_")):
        return False
    if name not in _PROTECTED:
        _PROTECTED = _PROTECTED | {name}
    return True


_LAST_ENV: tuple[dict[Any, Any], frozenset[str], tuple[str, ...]] | None = None
"""The environment last worked out (a copy of ``os.environ``'s encoded entries), the protected variables
of that moment and the values to look for."""


def _current_env_values() -> tuple[str, ...]:
    # os.environ keeps its entries encoded in ``_data`` (CPython). Comparing that dict with the copy taken
    # last time costs a few microseconds; building a key from it (or decoding every variable through
    # ``items()``) on each of a run's hundreds of masks would cost ten times more.
    global _LAST_ENV
    protected = _PROTECTED
    raw = getattr(os.environ, "_data", None)
    if not isinstance(raw, dict):
        return _env_values(frozenset(os.environ.items()), protected)
    last = _LAST_ENV
    if last is not None and last[1] is protected and last[0] == raw:
        return last[2]
    snapshot = dict(raw)
    values = _env_values_raw(frozenset(snapshot.items()), protected)
    _LAST_ENV = (snapshot, protected, values)
    return values


@lru_cache(maxsize=8)
def _env_values_raw(
    environment: frozenset[tuple[Any, Any]], protected: frozenset[str] = frozenset()
) -> tuple[str, ...]:
    decode = os.fsdecode
    return _env_values(frozenset((decode(k), decode(v)) for k, v in environment), protected)


@lru_cache(maxsize=8)
def _env_values(
    environment: frozenset[tuple[str, str]], protected: frozenset[str] = frozenset()
) -> tuple[str, ...]:
    values: set[str] = set()
    for name, value in environment:
        if (name in protected or _secret_env_name(name)) and len(value) >= 8 and value not in ALLOWED_DUMMIES:
            values.update(_encodings(value))
    return tuple(sorted(values, key=lambda v: (-len(v), v)))


_ESCAPED_ALNUM = re.compile(
    r"\\u00(?:3[0-9]|4[1-9a-fA-F]|5[0-9aA]|6[1-9a-fA-F]|7[0-9aA])|%(?:3[0-9]|4[1-9a-fA-F]|5[0-9aA]|6[1-9a-fA-F]|7[0-9aA])"
    # an escape written as an escape: ``%2541`` (percent-encoded twice), ``%5Cu0041``, ``\\u0025 41``
    r"|%25[0-9a-fA-F]{2}|%5[cC]u00|\\u00(?:25|5[cC])"
)
"""A letter or digit written as an escape (``\\u0041``, ``%41``), or an escape itself escaped. No ordinary
encoder escapes either, so a text holding one may hide a protected value in any form: it is searched as
``thorough`` searches."""


def _masked(text: str, start: int, end: int) -> bool:
    """Is this span already a mask (or inside one)?"""
    head = text.rfind(MASK_PREFIX, 0, end)
    return head != -1 and text.find("]", head) >= start


def scan(
    text: str,
    *,
    extra: list[str] | None = None,
    env: tuple[str, ...] | None = None,
    thorough: bool = False,
) -> list[Finding]:
    """Every secret in ``text``, as non-overlapping spans in order. ``env``: the protected variable
    values (read from the environment when not given).

    The text is searched as it is and in each of its decoded views (``core.encoded``: JSON string
    escapes undone once, twice…, percent-encoding undone): a tool output is JSON-encoded inside a JSON
    request body, so a secret holding a quote or a backslash is written with two or more levels of
    escapes that no list of the value's encodings can foresee. A finding in a view is mapped back to the
    span of the text it was decoded from (whole escape sequences), so masking it keeps the JSON valid.

    Masking runs on every trace event, so by default a value is looked for in the views only when it has
    a character an encoder escapes and its longest run of characters none escapes is in ``text``
    (``encoded.may_be_encoded_in``) — or when ``text`` holds a letter or digit written as an escape
    (``\\u0041``, ``%41``): an unusual encoder may have written every letter of a value so. ``thorough``
    (what ``record`` uses before it writes anything) looks for every value in every view always."""
    if not text:
        return []
    values = [s for s in (extra or []) if s and len(s) >= 4] + list(
        env if env is not None else env_secret_values()
    )
    found = _scan_one(text, values)
    if values and ("\\" in text or "%" in text):
        everywhere = thorough or _ESCAPED_ALNUM.search(text) is not None
        wanted = values if everywhere else [v for v in values if may_be_encoded_in(v, text)]
        if wanted:
            found += found_in_views(text, wanted)
    found.sort(key=lambda f: (f.start, -(f.end - f.start)))
    merged: list[Finding] = []
    for f in found:
        if merged and f.start < merged[-1].end:
            last = merged[-1]
            if f.end > last.end:
                merged[-1] = Finding(last.start, f.end, last.kind)
            continue
        merged.append(f)
    return merged


def _scan_one(text: str, values: list[str]) -> list[Finding]:
    """The findings of :func:`scan` in one text as written (overlapping, unsorted)."""
    found = literal_findings(text, values)
    patterns = _patterns()
    if patterns and _any_gate() is not None and _any_gate().search(text) is None:
        patterns = ()  # no pattern can match anywhere in this text
    for kind, pat, group, gate in patterns:
        if gate is not None and gate.search(text) is None:
            continue
        for m in pat.finditer(text):
            g = group if group <= (pat.groups or 0) and m.group(group) is not None else 0
            start, end = m.span(g)
            secret = text[start:end]
            if end <= start or secret in ALLOWED_DUMMIES or _masked(text, start, end):
                continue
            if kind == "jwt" and not _looks_like_jwt(secret):
                continue
            found.append(Finding(start, end, kind))
    return found


def _looks_like_jwt(token: str) -> bool:
    """A JWT's header decodes to a JSON object (the plugin's own check, without its dependency)."""
    import base64
    import json

    head = token.split(".", 1)[0]
    try:
        decoded = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    except ValueError:
        return False
    return isinstance(decoded, dict)


def mask_text(text: str, *, extra: list[str] | None = None) -> str:
    """``text`` with every secret replaced by ``[REDACTED:<kind>]``."""
    return _mask_text(text, extra, _current_env_values())


def mask_data(value: Any, *, extra: list[str] | None = None) -> Any:
    """A copy of a JSON-like value (dicts, lists, tuples, strings) with every string masked; keys
    too. Other values are returned as they are."""
    return _mask_data(value, extra, _current_env_values())


_SCALARS = frozenset({int, float, bool, type(None)})
"""Value types a mask never changes (checked by exact type: the walk below runs on every trace event)."""


def mask_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Named fields (keyword arguments: the names are code's own, not data) with every value masked as
    :func:`mask_data` masks it, the names left as they are: what the trace recorder does to every event,
    whose field names the event's schema checks right after (an unknown name is refused)."""
    env = _current_env_values()
    out: dict[str, Any] = {}
    for k, v in fields.items():
        kind = type(v)
        out[k] = (
            _mask_text(v, None, env) if kind is str else v if kind in _SCALARS else _mask_data(v, None, env)
        )
    return out


def _mask_data(value: Any, extra: list[str] | None, env: tuple[str, ...]) -> Any:
    kind = type(value)
    if kind is str:
        return _mask_text(value, extra, env)
    if kind in _SCALARS:
        return value
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(k, str):
                k = _mask_text(k, extra, env)
            kind = type(v)
            out[k] = (
                _mask_text(v, extra, env)
                if kind is str
                else v
                if kind in _SCALARS
                else _mask_data(v, extra, env)
            )
        return out
    if isinstance(value, str):  # a str subclass
        return _mask_text(value, extra, env)
    if isinstance(value, list):
        return [_mask_data(v, extra, env) for v in value]
    if isinstance(value, tuple):
        return tuple(_mask_data(v, extra, env) for v in value)
    return value


_SHORT: dict[str, tuple[tuple[str, ...], str]] = {}
"""Masked short texts, each with the protected values it was masked against: ids, names and short texts
recur in many events, and a hit counts only for the same environment (``env`` is the same object while
the environment is unchanged)."""

_SHORT_MAX = 4096


def _mask_text(text: str, extra: list[str] | None, env: tuple[str, ...]) -> str:
    if len(text) < 6:  # shorter than any pattern (and than a protected variable's value)
        return text
    if extra or len(text) > 2048:
        return _mask(text, extra, env)
    hit = _SHORT.get(text)
    if hit is not None and hit[0] is env:
        return hit[1]
    masked = _mask(text, None, env)
    if len(_SHORT) >= _SHORT_MAX:
        _SHORT.clear()
    _SHORT[text] = (env, masked)
    return masked


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _mask(text: str, extra: list[str] | None, env: tuple[str, ...]) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (bytes that were not UTF-8): no file or log could hold it
        text = _LONE_SURROGATE.sub("\ufffd", text)
    findings = scan(text, extra=extra, env=env)
    if not findings:
        return text
    parts: list[str] = []
    pos = 0
    for f in findings:
        parts.append(text[pos : f.start])
        parts.append(f"{MASK_PREFIX}{f.kind}]")
        pos = f.end
    parts.append(text[pos:])
    return "".join(parts)


def _walk(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, bytes):
        yield path, value.decode("utf-8", "replace")
    elif isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str):
                yield from _walk(k, f"{path}.<key>")
            yield from _walk(v, f"{path}.{k}")
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from _walk(v, f"{path}.{i}")


def find_secret(value: Any, *, extra: list[str] | None = None, where: str = "") -> str | None:
    """The location of the first secret in ``value`` (a path like ``interactions.0.request.body``)
    and what it looks like, or None."""
    for path, text in _walk(value, where):
        findings = scan(text, extra=extra, thorough=True)
        if findings:
            f = findings[0]
            loc = path.lstrip(".") or "<root>"
            if f.kind == "env-value":
                return f"{loc} (value of an API-key variable)"
            return f"{loc} (looks like a secret: {f.kind})"
    return None
