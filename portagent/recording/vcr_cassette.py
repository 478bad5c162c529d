"""vcrpy cassettes for the Python SDKs (openai-agents over httpx2, google-adk over httpx / aiohttp).

- Ordered, single-use playback (``allow_playback_repeats`` stays off: with body-less matching it
  replays the first response forever — SDK_NOTES §3.3).
- Matching on method (case-insensitive: aiohttp records ``post``, httpx ``POST`` — SDK_NOTES §3.2),
  path and query, plus the *normalized* request body, so a changed prompt, tool schema or tool
  result is detected as drift instead of being answered with a stale response.
- Host and port are not matched: a recording made against an emulator on a random port, or against
  the vendor's host, replays wherever the client points.
- Scrubbing happens before anything is written (``recording/scrub.py``); a cassette in which a secret
  survives is refused by the persister.
"""

from __future__ import annotations

import difflib
import functools
import json
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from portagent.contracts.errors import RecordingError
from portagent.recording.scrub import SECRET_HEADERS, refuse_if_secret, scrub_headers, scrub_url

CASSETTE_FILE = "cassette.yaml"
RECORD_MODES = ("none", "once", "new_episodes", "all")

# Request-body fields that legitimately change between runs of the same agent.
VOLATILE_BODY_FIELDS = frozenset({"user", "metadata", "prompt_cache_key", "safety_identifier"})


def normalized_body(raw: Any) -> Any:
    """The request body as parsed JSON without volatile fields (or the raw text when not JSON)."""
    if raw is None:
        return None
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    try:
        data = json.loads(raw)
    except (TypeError, ValueError):
        return raw
    if isinstance(data, dict):
        data = {k: v for k, v in data.items() if k not in VOLATILE_BODY_FIELDS}
    return data


def _method(r1: Any, r2: Any) -> None:
    assert r1.method.upper() == r2.method.upper(), f"{r1.method} != {r2.method}"


@functools.lru_cache(maxsize=512)
def _normalized_text(raw: bytes | str) -> str:
    """Canonical text of a normalized body; cached because vcrpy compares each request with every
    recorded one (bodies are hashable bytes/str)."""
    return json.dumps(normalized_body(raw), sort_keys=True, ensure_ascii=False)


def _body(r1: Any, r2: Any) -> None:
    b1, b2 = r1.body, r2.body
    if b1 == b2:
        return
    if b1 is None or b2 is None:
        raise AssertionError("request body differs")
    assert _normalized_text(b1) == _normalized_text(b2), "request body differs"


def _before_record_request(request: Any) -> Any:
    request.uri = scrub_url(request.uri)
    for name in list(request.headers):
        if name.lower() in SECRET_HEADERS:
            del request.headers[name]
    return request


def _before_record_response(response: dict[str, Any]) -> dict[str, Any]:
    headers = response.get("headers") or {}
    response["headers"] = scrub_headers(dict(headers))
    return response


class _ScanningPersister:
    """vcrpy persister that refuses to write a cassette holding a secret."""

    @classmethod
    def load_cassette(cls, cassette_path: str, serializer: Any) -> Any:
        from vcr.persisters.filesystem import CassetteDecodeError, CassetteNotFoundError, FilesystemPersister

        try:
            return FilesystemPersister.load_cassette(cassette_path, serializer)
        except CassetteNotFoundError:
            raise
        except CassetteDecodeError as e:
            raise RecordingError(f"{cassette_path}: corrupt cassette ({e})") from e
        except Exception as e:  # yaml errors, wrong structure
            raise RecordingError(f"{cassette_path}: not a readable cassette: {type(e).__name__}: {e}") from e

    refused: dict[str, RecordingError] = {}
    """Refusals by cassette path. The persister must not raise: vcrpy saves in ``__exit__`` before it
    unpatches, so an exception there leaves its patches on and the NEXT recording in the process loses
    its interactions. ``vcr_session`` raises the refusal after the cassette context has closed."""

    @classmethod
    def save_cassette(cls, cassette_path: str, cassette_dict: dict[str, Any], serializer: Any) -> None:
        # vcrpy hands over Request objects: scan them as the dicts that will be written
        requests = [r._to_dict() if hasattr(r, "_to_dict") else r for r in cassette_dict.get("requests", [])]
        try:
            refuse_if_secret({**cassette_dict, "requests": requests}, cassette_path)
        except RecordingError as e:
            cls.refused[cassette_path] = e
            return
        from vcr.persisters.filesystem import FilesystemPersister

        FilesystemPersister.save_cassette(cassette_path, cassette_dict, serializer)


def make_vcr(record_mode: str, *, match_body: bool = True) -> Any:
    import vcr

    if record_mode not in RECORD_MODES:
        raise RecordingError(
            f"unknown record mode {record_mode!r}; expected one of {', '.join(RECORD_MODES)}"
        )
    v = vcr.VCR(
        record_mode=record_mode,
        match_on=["method_ci", "path", "query", *(["normalized_body"] if match_body else [])],
        before_record_request=_before_record_request,
        before_record_response=_before_record_response,
        decode_compressed_response=True,
    )
    v.register_matcher("method_ci", _method)
    v.register_matcher("normalized_body", _body)
    v.register_persister(_ScanningPersister)
    return v


class CassetteReport:
    """What a cassette session observed: interactions played, left unplayed, and drift."""

    def __init__(self) -> None:
        self.played = 0
        self.total = 0
        self.unplayed: list[str] = []
        self.drift: str | None = None

    def as_details(self) -> dict[str, Any]:
        out: dict[str, Any] = {"played": self.played, "recorded": self.total}
        if self.unplayed:
            out["unplayed"] = self.unplayed
        if self.drift:
            out["drift"] = self.drift
        return out


def describe_mismatch(exc: Any) -> str:
    """A readable diff between the request the SDK sent and the closest recorded one."""
    failed = exc.failed_request
    lines = [f"the SDK sent {failed.method} {failed.path} that the cassette does not hold ({exc.reason})"]
    similar = getattr(exc, "similar_requests", None) or []
    if similar:
        closest = similar[0][0]
        a = json.dumps(
            normalized_body(closest.body), indent=1, sort_keys=True, ensure_ascii=False
        ).splitlines()
        b = json.dumps(
            normalized_body(failed.body), indent=1, sort_keys=True, ensure_ascii=False
        ).splitlines()
        diff = list(difflib.unified_diff(a, b, "recorded", "sent", n=1, lineterm=""))
        lines.append("closest recorded request differs in: " + ", ".join(m for m, _ in similar[0][2]))
        lines.extend(diff[:60])
        if len(diff) > 60:
            lines.append(f"... ({len(diff) - 60} more diff lines)")
    return "\n".join(lines)


def find_mismatch(exc: BaseException) -> Any:
    from vcr.errors import CannotOverwriteExistingCassetteException

    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, CannotOverwriteExistingCassetteException):
            return cur
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return None


@contextmanager
def vcr_session(folder: Path, record_mode: str, *, match_body: bool = True) -> Any:
    """Record or replay the Python SDKs' HTTP traffic of one run in ``folder/cassette.yaml``."""
    path = folder / CASSETTE_FILE
    if record_mode == "none" and not path.exists():
        raise RecordingError(f"{path}: cassette not found")
    report = CassetteReport()
    v = make_vcr(record_mode, match_body=match_body)
    folder.mkdir(parents=True, exist_ok=True)
    _ScanningPersister.refused.pop(str(path), None)
    try:
        with v.use_cassette(str(path)) as cassette:
            try:
                yield report
            finally:
                report.total = len(cassette)
                report.played = cassette.play_count
                if record_mode == "none":
                    report.unplayed = [
                        f"{r.method} {r.path}"
                        for i, r in enumerate(cassette.requests)
                        if not cassette.play_counts[i]
                    ]
    finally:
        refused = _ScanningPersister.refused.pop(str(path), None)
    if refused is not None:
        raise refused
