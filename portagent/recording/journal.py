"""The run journal: every model exchange of an attempt, kept as it happens (ADR 0007).

A run with a run folder sends its model traffic through a loopback proxy (``recording/http_proxy.py``,
journal mode) in front of the endpoint. Each exchange is one line of ``journal/attempt-<n>.jsonl``,
written and ``fsync``-ed before the answer's last chunk reaches the SDK, so a crash loses at most the
exchange in flight. The lines use vcrpy's request/response form, scrubbed like a cassette: credential
headers and query parameters dropped, every string passed through the secret scanner — a streamed
answer also as the text its events spell together (``mask_split_secrets``) — and a response that had to
be masked is marked ``masked``: it can no longer be replayed as it was, so a resume refuses it.

A resumed attempt is given the exchanges of the attempt before it, up to the call that paused it
(``replay_plan``): the proxy serves those first, byte for byte, without reaching the endpoint — so the
model's earlier turns, and the paused tool call with its exact arguments, come back as they were — and
forwards everything after to the endpoint. Its own journal holds the replayed exchanges too (marked
``replayed``), so each attempt's journal is the whole conversation of that attempt.

Line 1 is a header (``portagent_journal``, run id, attempt, provider, and how the command line started
the run, masked as ``run.json`` masks it); then one line per exchange, in completion order, each with
``seq`` — its arrival order, the order replay follows. A base URL's credentials (``user:pass@``, a
``?token=``) are in neither: masked in the header, dropped from every exchange's ``uri`` (``shown_uri``).

Durability: each line is in the kernel before the SDK gets the answer's end, so a process that dies
(``kill -9`` included) loses at most the exchange in flight; the file is ``fsync``-ed when the attempt
pauses for approval and when it ends (an OS crash in the middle of an attempt can lose its unsynced
tail — such an attempt was running, not paused, and is resumed from what is whole).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from portagent.contracts.errors import UsageError

JOURNAL_DIR = "journal"
FORMAT = 1


class JournalError(UsageError):
    """A journal that cannot bring a paused run back (missing, cut short, changed, masked)."""


def journal_file(folder: Path, attempt: int) -> Path:
    return folder / JOURNAL_DIR / f"attempt-{attempt}.jsonl"


@dataclass
class Kept:
    """One exchange of an earlier attempt, to be served again."""

    seq: int
    method: str
    path: str
    query: str
    model: str | None
    response: dict[str, Any]
    line: dict[str, Any]


def _text(value: Any) -> Any:
    """Bytes as text for a JSON line (UTF-8, else base64 in a ``{"base64": …}`` object)."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(value).decode("ascii")}
    return value


def _bytes(value: Any) -> bytes:
    if isinstance(value, dict) and "base64" in value:
        return base64.b64decode(value["base64"])
    if isinstance(value, bytes):
        return value
    return str(value if value is not None else "").encode("utf-8")


def _model_of(body: Any) -> str | None:
    """The ``model`` a JSON request body names (OpenAI, Anthropic); Gemini names it in the path."""
    if not body:
        return None
    try:
        data = json.loads(body if isinstance(body, str | bytes) else str(body))
    except (ValueError, TypeError):
        return None
    model = data.get("model") if isinstance(data, dict) else None
    return model if isinstance(model, str) else None


def shown_uri(uri: str) -> str:
    """``uri`` as the journal keeps it: without the credentials a base URL may carry (``user:pass@``,
    dropped whole — a lone user name is often the token itself), credential query parameters dropped
    (``scrub_url``), and any other secret-looking value masked. Replay matches a request's query in this
    form too (``RunJournal.take``). The netloc gets no ``[REDACTED:…]``: brackets there are an IPv6 host
    to ``urlsplit``, which would refuse the line."""
    from portagent.core.secrets import mask_text
    from portagent.recording.scrub import scrub_url

    parts = urlsplit(scrub_url(uri))
    netloc = parts.netloc.rpartition("@")[2]
    return mask_text(urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)))


_URL_USERINFO = re.compile(r"(://)[^\s/@\"'\\]+@")


def _strings(value: Any, path: tuple[Any, ...] = ()) -> Any:
    """Every string in a JSON value, with where it is: (path, its container, its key or index, text)."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(item, str):
            yield (*path, key), value, key, item
        else:
            yield from _strings(item, (*path, key))


def mask_split_secrets(raw: str) -> str:
    """A streamed (SSE) answer with every secret that only its events together spell masked, piece by
    piece; ``raw`` itself when there is none.

    A streamed answer is many small events, each carrying a piece of the text or of a tool call's
    arguments (Anthropic's ``delta.text``/``delta.partial_json``, OpenAI chat's ``choices[].delta``, the
    Responses API's ``delta``, Gemini's ``parts[].text``), cut wherever the vendor's tokens fall: a key
    the model wrote arrives as ``"use sk-proj-abcd"``, ``"efgh…"``, ``"…6789 now"``, and a scanner
    reading the body sees no key anywhere. So the pieces of each field (the same place in every event)
    are joined in order — the text the SDK rebuilds — and scanned as one; every piece holding part of a
    secret has that part replaced by the mask, and its event is written again. The answer is then no
    longer the one received, so the caller marks it ``masked``: it is never served again."""
    from portagent.core.secrets import MASK_PREFIX, scan

    if "data:" not in raw:
        return raw
    lines = raw.split("\n")
    events: dict[int, Any] = {}
    fields: dict[tuple[Any, ...], list[tuple[int, Any, Any, str]]] = {}
    for number, line in enumerate(lines):
        if not line.startswith("data:"):
            continue
        try:
            data = json.loads(line[5:])
        except ValueError:  # ``data: [DONE]``, or not JSON
            continue
        events[number] = data
        for where, holder, key, text in _strings(data):
            fields.setdefault(where, []).append((number, holder, key, text))
    changed: set[int] = set()
    for pieces in fields.values():
        if len(pieces) < 2 or len({text for *_, text in pieces}) == 1:  # one piece, or a repeated id
            continue
        joined = "".join(text for *_, text in pieces)
        findings = scan(joined)
        start = 0
        for number, holder, key, text in pieces if findings else ():
            end = start + len(text)
            hits = [f for f in findings if f.start < end and f.end > start]
            if hits:
                parts, pos = [], start
                for f in hits:
                    parts += [joined[pos : max(f.start, start)], f"{MASK_PREFIX}{f.kind}]"]
                    pos = min(f.end, end)
                holder[key] = "".join([*parts, joined[pos:end]])
                changed.add(number)
            start = end
    if not changed:
        return raw
    for number in changed:
        cr = "\r" if lines[number].endswith("\r") else ""
        lines[number] = "data: " + json.dumps(events[number], ensure_ascii=False, separators=(",", ":")) + cr
    return "\n".join(lines)


@dataclass
class RunJournal:
    """The journal of one attempt, being written; optionally primed with exchanges to replay."""

    path: Path
    header: dict[str, Any]
    replay: list[Kept] = field(default_factory=list)
    pause_at: int | None = None
    """How many requests had arrived when the attempt paused for approval (the replay point)."""
    replayed: int = 0
    live: int = 0
    failed_count: int = 0
    masked: list[int] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    _arrived: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _fd: int | None = None

    def open(self) -> RunJournal:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self._write({"portagent_journal": FORMAT, **self.header})
        return self

    # --- what the proxy calls -----------------------------------------------------------------------

    def next_seq(self) -> int:
        with self._lock:
            seq = self._arrived
            self._arrived += 1
            return seq

    def take(self, method: str, path: str, query: str, body: bytes, seq: int) -> dict[str, Any] | None:
        """The earlier attempt's answer to this request, if one is still to be replayed: the first
        unplayed exchange with the same method, path and query (and model, when several wait)."""
        query = urlsplit(shown_uri(f"http://journal{path}?{query}")).query if query else query
        with self._lock:
            if not self.replay:
                return None
            same = [
                k for k in self.replay if k.method == method.upper() and k.path == path and k.query == query
            ]
            if not same:
                self.unmatched.append(f"{method} {path}")
                return None
            model = _model_of(body)
            kept = next((k for k in same if k.model == model), same[0])
            self.replay.remove(kept)
            self.replayed += 1
        line = dict(kept.line)
        line.update(seq=seq, replayed=kept.seq)
        self._write(line)
        response = dict(kept.response)
        response["body"] = {"string": _bytes(kept.response.get("body", {}).get("string"))}
        return response

    def append(self, seq: int, request: Any, response: dict[str, Any]) -> None:
        """Keep one exchange that reached the endpoint (request: vcrpy ``Request``, scrubbed)."""
        from portagent.core.secrets import mask_data, mask_text

        req = request._to_dict()
        body = _text(req.get("body"))
        masked = False
        raw = _text(response.get("body", {}).get("string"))
        if isinstance(raw, str):
            shown = mask_text(mask_split_secrets(raw))
            masked = shown != raw
            raw = shown
        line = {
            "seq": seq,
            "request": {
                "method": req["method"],
                "uri": shown_uri(req["uri"]),
                "headers": mask_data(req.get("headers") or {}),
                "body": mask_text(body) if isinstance(body, str) else body,
            },
            "response": {
                "status": response["status"],
                "headers": mask_data(response.get("headers") or {}),
                "body": {"string": raw},
            },
        }
        if masked:
            line["masked"] = True
        with self._lock:
            self.live += 1
            if masked:
                self.masked.append(seq)
        self._write(line)

    def failed(self, seq: int, why: str) -> None:
        """A request that never got an answer (the endpoint could not be reached). ``why`` names the
        endpoint: its URL's credentials are dropped, as from every ``uri``."""
        from portagent.core.secrets import mask_text

        with self._lock:
            self.failed_count += 1
        self._write({"seq": seq, "failed": mask_text(_URL_USERINFO.sub(r"\1", why))})

    def mark_pause(self) -> None:
        """The attempt paused for approval: the requests that arrived so far are what a resume replays."""
        with self._lock:
            if self.pause_at is None:
                self.pause_at = self._arrived
        self.sync()

    # --- the file -----------------------------------------------------------------------------------

    def _write(self, line: dict[str, Any]) -> None:
        data = (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        with self._lock:
            if self._fd is None:
                return
            os.write(self._fd, data)  # in the kernel at once: a process that dies loses nothing written

    def sync(self) -> None:
        """Force the journal to disk (at a pause and at the end of the attempt: what a resume reads)."""
        with self._lock:
            if self._fd is not None:
                os.fsync(self._fd)

    def close(self, folder: Path) -> dict[str, Any]:
        """Close the file; what ``run.json`` says about this attempt's journal."""
        self.sync()
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
        data = self.path.read_bytes() if self.path.is_file() else b""
        summary: dict[str, Any] = {
            "journal": self.path.relative_to(folder).as_posix(),
            "exchanges": self._arrived,
            "replayed": self.replayed,
            "live": self.live,
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
        if self.pause_at is not None:
            summary["paused_after"] = self.pause_at
        if self.failed_count:
            summary["failed"] = self.failed_count
        if self.masked:
            summary["masked"] = self.masked
        if self.replay:
            summary["unplayed"] = [f"{k.method} {k.path} (exchange {k.seq})" for k in self.replay]
        if self.unmatched:
            summary["not_in_journal"] = self.unmatched
        return summary


def replay_plan(
    path: Path, *, run_id: str, attempt: int, record: dict[str, Any] | None
) -> tuple[list[Kept], int]:
    """The exchanges a resumed attempt replays from ``path`` (attempt ``attempt``'s journal), and how
    many requests they stand for.

    ``record`` is what ``run.json`` says about that journal (``RunJournal.close``): the file must still
    be exactly that long (shorter is truncated, longer was appended to — the attempt had closed it) with
    that digest, and the replay stops where the attempt paused. Without a record (the
    attempt's process died before writing ``run.json``) the journal is read as far as it is whole: a
    line cut off by the crash ends it, and every exchange before the first gap is replayed.
    Raises ``JournalError`` (naming the file) when the journal cannot bring the run back."""
    restart = (
        f"the model's earlier turns cannot be brought back as they were. Run the request again with a new "
        f"--idempotency-key to start over (run {run_id}'s approval cards will not apply to it)"
    )
    if not path.is_file():
        raise JournalError(f"cannot resume run {run_id}: its journal {path} is missing, so {restart}")
    data = path.read_bytes()
    if record is not None:
        size = int(record.get("bytes") or 0)
        if len(data) < size:
            raise JournalError(
                f"cannot resume run {run_id}: its journal {path} is truncated ({len(data)} of the {size} "
                f"bytes attempt {attempt} wrote), so {restart}"
            )
        if len(data) > size:
            # ``record`` is written by ``RunJournal.close``, after the file's last write: a sealed journal
            # never grows (a later attempt writes its own file), so bytes past ``size`` were added since.
            raise JournalError(
                f"cannot resume run {run_id}: its journal {path} was changed after attempt {attempt} "
                f"wrote it ({len(data) - size} bytes were added after the {size} it wrote), so {restart}"
            )
        if hashlib.sha256(data).hexdigest() != record.get("sha256"):
            raise JournalError(
                f"cannot resume run {run_id}: its journal {path} was changed after attempt {attempt} "
                f"wrote it, so {restart}"
            )
    *whole, cut = data.split(b"\n")  # ``cut``: what follows the last newline (a line cut off, or b"")
    if cut and record is not None:
        raise JournalError(
            f"cannot resume run {run_id}: the last line of its journal {path} is cut off, so {restart}"
        )
    entries: dict[int, dict[str, Any]] = {}
    for number, raw in enumerate(whole, start=1):
        try:
            line = json.loads(raw)
        except ValueError:
            raise JournalError(
                f"cannot resume run {run_id}: line {number} of its journal {path} is not a journal line, so {restart}"
            ) from None
        if number == 1:
            if not isinstance(line, dict) or line.get("portagent_journal") != FORMAT:
                raise JournalError(
                    f"cannot resume run {run_id}: {path} is not a portagent journal (format {FORMAT}), so {restart}"
                )
            continue
        if isinstance(line, dict) and isinstance(line.get("seq"), int):
            entries[line["seq"]] = line
    if record is not None and record.get("paused_after") is not None:
        upto = int(record["paused_after"])
        missing = [s for s in range(upto) if s not in entries]
        if missing:
            raise JournalError(
                f"cannot resume run {run_id}: its journal {path} is truncated (it holds "
                f"{upto - len(missing)} of the {upto} model exchanges attempt {attempt} made before it "
                f"paused), so {restart}"
            )
    elif record is not None:
        upto = int(record.get("exchanges") or 0)
    else:
        upto = 0
        while upto in entries:
            upto += 1
    kept: list[Kept] = []
    for seq in range(upto):
        line = entries.get(seq)
        if line is None or "failed" in line:
            continue
        if line.get("masked"):
            raise JournalError(
                f"cannot resume run {run_id}: model exchange {seq} in its journal {path} held a "
                f"secret-looking value that was masked when it was kept, so {restart}"
            )
        request, response = line.get("request") or {}, line.get("response") or {}
        parts = urlsplit(str(request.get("uri") or ""))
        body = request.get("body")
        kept.append(
            Kept(
                seq=seq,
                method=str(request.get("method") or "POST").upper(),
                path=parts.path,
                query=parts.query,
                model=_model_of(body if isinstance(body, str) else None),
                response=response,
                line={k: v for k, v in line.items() if k not in ("seq", "replayed")},
            )
        )
    return kept, upto
