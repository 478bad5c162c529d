"""Notes ingestion: Markdown notes with front matter (an Obsidian vault) into the governed memory store.

    portagent memory import DIR --scope S (--expires DATE|never | --ttl-days N) --confidence X
          ─► find_notes: every *.md under DIR (folders and files starting with '.' skipped: .obsidian, .trash)
          ─► plan_import: each note parsed and checked, nothing written yet
                 ready    front matter with type, status, date, source, all valid; a statement; a current status
                 flagged  anything else, with the reason — never stored
          ─► apply_import: the ready notes written through ``MemoryStore.write`` (one transaction per record)

Design source ch. 04 ("Tropiezos → tests"): "Obsidian as automatic memory → ingestion requires metadata
(type, status, date, source). Notes without metadata are flagged." A note is a person's writing, not yet a
fact with a source: only a note that says what kind of memory it is (``type``), that it is current
(``status``), when it was written (``date``) and where its content comes from (``source``) becomes a record.

``source`` is required and never defaulted to the note's path: the path says where the text is, not what it
rests on, and defaulting it would let every note pass the check the chapter asks for. The record's source is
the front matter's ``source`` followed by `` (note <folder>/<path>)``, so a recall's explanation names both
the evidence and the note, and a later import finds the record an edited note replaces.

Idempotent: a record's id is a hash of scope, owner, statement and source, so an unchanged note is the same
record ("unchanged", nothing written; a changed ``type``, ``confidence`` or expiry is applied to it as an edit).
A note whose statement or source changed gets a new record that ``supersedes`` the note's earlier active record
(which becomes ``superseded`` and is no longer recalled). Import never deletes or retires: a note removed from
the folder keeps its record, and a note flagged now (say, turned ``archived``) while an earlier import stored it
says so in its reason (``portagent memory delete``/``edit``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from portagent.contracts.errors import UsageError
from portagent.contracts.memory import MemoryRecord, MemoryWrite, memory_id_for, parse_expiry
from portagent.tools.memory_store import MemoryStore, MemoryWriteRefused, nfc

REQUIRED_METADATA = ("type", "status", "date", "source")
"""Front-matter keys a note must have to be ingested (ch. 04)."""
INGESTED_STATUSES = ("active", "approved", "final", "published")
"""Statuses that mean "current knowledge". Anything else — ``draft``, ``wip``, ``review``, ``archived``,
``deprecated``, an unknown word — is flagged: an allow-list, so a status nobody thought of is not stored."""
MEMORY_TYPES = ("episodic", "semantic", "procedural", "artifact")
"""A note's ``type`` is the memory layer of its record (``MemoryType``)."""
_HEADING = re.compile(r"^\s{0,3}#{1,6}(\s+|$)")
_FENCE = re.compile(r"^(---|\.\.\.)\s*$")


@dataclass(frozen=True)
class Flagged:
    """A note that was not stored, and why."""

    note: str
    """Its path relative to the imported folder (``/`` separated)."""
    reason: str
    """Every problem found, ``; ``-separated."""


@dataclass(frozen=True)
class ReadyNote:
    """A note that passed every check: the write it becomes."""

    note: str
    """Its path relative to the imported folder."""
    write: MemoryWrite
    """The validated write (``supersedes`` set when it replaces the note's earlier record)."""
    memory_id: str
    """The record's id (``memory_id_for``)."""
    unchanged: bool = False
    """The same record is already stored: nothing to write."""
    update: dict[str, Any] | None = None
    """The same record is stored but the note's ``type``, ``confidence`` or expiry changed: these changes
    (applied with ``MemoryStore.edit``, re-validated)."""


@dataclass
class ImportPlan:
    """What an import would do: computed before anything is written."""

    folder: Path
    scope: str
    owner: str
    ready: list[ReadyNote] = field(default_factory=list)
    flagged: list[Flagged] = field(default_factory=list)

    @property
    def to_write(self) -> list[ReadyNote]:
        return [n for n in self.ready if not n.unchanged]


class _NoteProblem(Exception):
    """A note that cannot be read at all (no or broken front matter, not UTF-8)."""


def find_notes(folder: Path) -> list[Path]:
    """Every ``*.md`` file under ``folder``, sorted; hidden folders and files (``.obsidian``, ``.trash``,
    ``.git``) are skipped."""
    found = []
    for path in folder.rglob("*.md"):
        rel = path.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts) or not path.is_file():
            continue
        found.append(path)
    return sorted(found, key=lambda p: p.relative_to(folder).as_posix())


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """The front matter (a YAML mapping between a first line ``---`` and the next ``---`` or ``...``) and
    the body after it. A note without one, an unclosed one, invalid YAML or a non-mapping is a problem."""
    import yaml

    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        raise _NoteProblem("no front matter (the note must start with a '---' line)")
    end = next((i for i in range(1, len(lines)) if _FENCE.match(lines[i])), None)
    if end is None:
        raise _NoteProblem("front matter is not closed (no second '---' line)")
    try:
        meta = yaml.safe_load("\n".join(lines[1:end]))
    except ValueError as e:  # a date that does not exist (2024-02-30) comes out of the YAML loader as this
        raise _NoteProblem(f"front matter has a value that cannot be read: {e}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""  # +1 (0-based) +1 (the '---')
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise _NoteProblem(f"front matter is not valid YAML{where}: {problem}") from None
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise _NoteProblem(f"front matter is not a mapping of keys to values (got {type(meta).__name__})")
    return {str(k): v for k, v in meta.items()}, "\n".join(lines[end + 1 :])


def note_statement(meta: dict[str, Any], body: str) -> str | None:
    """The front matter's ``statement`` when given; else the body's first paragraph that is not a heading,
    on one line; else the first heading's text (the note's title); None for an empty note."""
    given = meta.get("statement")
    if isinstance(given, str) and given.strip():
        return " ".join(given.split())
    paragraph: list[str] = []
    title: str | None = None
    for line in [*body.splitlines(), ""]:
        if _HEADING.match(line):
            title = title or _HEADING.sub("", line).strip().strip("#").strip() or None
            if paragraph:
                break
            continue
        if line.strip():
            paragraph.append(line.strip())
        elif paragraph:
            break
    if paragraph:
        return " ".join(" ".join(paragraph).split())
    return title


def _as_date(value: Any) -> date | None:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.strip().replace("Z", "+00:00")).date()
        except ValueError:
            return None
    return None


def _text(value: Any) -> str | None:
    """A string value, or a list of strings joined with ``; `` (Obsidian list properties); else None."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return "; ".join(v.strip() for v in value)
    return None


def check_note(
    meta: dict[str, Any],
    body: str,
    *,
    ref: str,
    scope: str,
    now: datetime,
    confidence: float,
    expires: str | None,
    ttl_days: int | None,
) -> tuple[MemoryWrite | None, list[str]]:
    """The write a note becomes, or every reason it cannot be stored."""
    problems: list[str] = []
    missing = [k for k in REQUIRED_METADATA if meta.get(k) in (None, "", [])]
    if missing:
        problems.append(f"missing metadata: {', '.join(missing)}")
    kind = meta.get("type")
    if kind not in (None, "", []) and kind not in MEMORY_TYPES:
        problems.append(f"type {kind!r} is not a memory type ({', '.join(MEMORY_TYPES)})")
    status = meta.get("status")
    if status not in (None, "", []) and (
        not isinstance(status, str) or status.lower() not in INGESTED_STATUSES
    ):
        problems.append(
            f"status {status!r} is not ingested: only {', '.join(INGESTED_STATUSES)} notes are "
            "(drafts and archived notes are not current knowledge)"
        )
    written: date | None = None
    if meta.get("date") not in (None, "", []):
        written = _as_date(meta["date"])
        if written is None:
            problems.append(f"date {meta['date']!r} is not an ISO date (YYYY-MM-DD)")
        elif written > now.date():
            problems.append(f"date {written.isoformat()} is in the future")
            written = None
    source = _text(meta.get("source")) if meta.get("source") not in (None, "", []) else None
    if meta.get("source") not in (None, "", []) and not source:
        problems.append("source must be text (or a list of texts)")

    note_confidence: Any = meta.get("confidence", confidence)
    if isinstance(note_confidence, bool) or not isinstance(note_confidence, int | float):
        problems.append(f"confidence {note_confidence!r} is not a number from 0 to 1")
        note_confidence = confidence
    note_expires = meta.get("expires", expires)
    if isinstance(note_expires, date):
        note_expires = note_expires.isoformat()
    by_ttl = note_expires is None and ttl_days is not None
    if by_ttl and ttl_days is not None and written is not None:
        note_expires = (written + timedelta(days=ttl_days)).isoformat()
    if note_expires is not None:
        note_expires = str(note_expires)
        try:
            when = parse_expiry(note_expires)
        except ValueError:
            problems.append(f"expires {note_expires!r} is not 'never' or an ISO date")
        else:
            if when is not None and when <= now:
                why = f"dated {written}, --ttl-days {ttl_days}: " if by_ttl else ""
                problems.append(f"expired: {why}valid until {note_expires}, already past")

    statement = note_statement(meta, body)
    if statement is None:
        problems.append("no statement: the note has no text (write one, or give 'statement:')")
    if problems:
        return None, problems
    assert source is not None and statement is not None and note_expires is not None
    try:
        write = MemoryWrite(
            statement=nfc(statement),
            source=nfc(f"{source} (note {ref})"),
            scope=scope,
            expires_at=note_expires,
            confidence=float(note_confidence),
            type=kind,
        )
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "note"
        return None, [f"{where}: {first['msg']}"]
    return write, []


def plan_import(
    folder: Path,
    *,
    scope: str,
    owner: str,
    confidence: float,
    expires: str | None = None,
    ttl_days: int | None = None,
    store: MemoryStore | None = None,
    now: datetime | None = None,
) -> ImportPlan:
    """Read and check every note under ``folder``; write nothing. ``store`` (None: an empty one) tells which
    records already exist (unchanged notes) and which a changed note supersedes."""
    if not folder.exists():
        raise UsageError(f"no folder {str(folder)!r} to import notes from")
    if not folder.is_dir():
        raise UsageError(f"{str(folder)!r} is not a folder: give the folder of the notes (an Obsidian vault)")
    if (expires is None) == (ttl_days is None):
        raise UsageError("give either --expires DATE|never or --ttl-days N")
    if not 0 <= confidence <= 1:
        raise UsageError(f"--confidence must be from 0 to 1, got {confidence:g}")
    if ttl_days is not None and ttl_days < 1:
        raise UsageError(f"--ttl-days must be at least 1, got {ttl_days}")
    now = now or (store.clock.now() if store is not None else datetime.now(UTC))
    # a note's date is never after today, so a ttl that fits from today fits from every note's date;
    # past date.max the expiry cannot be written (and timedelta itself overflows near 10**9 days)
    if ttl_days is not None and ttl_days > (date.max - now.date()).days:
        raise UsageError(
            f"--ttl-days {ttl_days} reaches past the year {date.max.year}: give at most "
            f"{(date.max - now.date()).days}, or --expires never"
        )
    if expires is not None:
        try:
            when = parse_expiry(expires)
        except ValueError as e:
            raise UsageError(f"--expires: {e}") from None
        if when is not None and when <= now:
            raise UsageError(f"--expires {expires} is already past: nothing to remember")
    notes = find_notes(folder)
    if not notes:
        raise UsageError(f"no Markdown notes (*.md) under {str(folder)!r}")
    inside = folder.resolve()
    root = inside.name or "notes"
    plan = ImportPlan(folder=folder, scope=scope, owner=owner)
    existing = store.records(scope=scope, owner=owner) if store is not None else []
    for path in notes:
        rel = path.relative_to(folder).as_posix()
        ref = nfc(f"{root}/{rel}")
        mark = f" (note {ref})"
        earlier = sorted(
            (r for r in existing if r.status == "active" and r.source.endswith(mark)),
            key=lambda r: (r.created_at, r.memory_id),
        )
        target = path.resolve()
        if not target.is_relative_to(inside):
            # a link (to a note, or to a folder holding it) out of the vault: importing from DIR reads DIR,
            # not whatever a link in it points at (a shared drive, another vault, a home folder)
            why = f"links to {target}, outside {str(folder)!r}: not read (copy the note into the folder)"
            plan.flagged.append(Flagged(rel, why + _still_active(earlier)))
            continue
        try:
            meta, body = split_front_matter(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError:
            plan.flagged.append(Flagged(rel, "not UTF-8 text" + _still_active(earlier)))
            continue
        except OSError as e:
            plan.flagged.append(Flagged(rel, f"cannot be read: {e.strerror}" + _still_active(earlier)))
            continue
        except _NoteProblem as e:
            plan.flagged.append(Flagged(rel, str(e) + _still_active(earlier)))
            continue
        write, problems = check_note(
            meta,
            body,
            ref=ref,
            scope=scope,
            now=now,
            confidence=confidence,
            expires=expires,
            ttl_days=ttl_days,
        )
        if write is None:
            plan.flagged.append(Flagged(rel, "; ".join(problems) + _still_active(earlier)))
            continue
        memory_id = memory_id_for(scope, owner, write.statement, write.source)
        same = next((r for r in existing if r.memory_id == memory_id), None)
        if same is not None and same.status != "active":
            reason = (
                f"its text was stored before as {memory_id}, now {same.status}: edit the note, or the records "
                "by hand ('portagent memory show')"
            )
            plan.flagged.append(Flagged(rel, reason + _still_active(earlier)))
        elif same is not None:  # the same record: unchanged, or only its type, confidence or expiry changed
            changes = {
                k: getattr(write, k)
                for k in ("type", "confidence", "expires_at")
                if getattr(write, k) != getattr(same, k)
            }
            plan.ready.append(ReadyNote(rel, write, memory_id, unchanged=not changes, update=changes or None))
        else:
            if earlier:  # an edited note: its new record replaces the earlier one
                write = write.model_copy(update={"supersedes": earlier[-1].memory_id})
            plan.ready.append(ReadyNote(rel, write, memory_id))
    return plan


def _still_active(earlier: list[MemoryRecord]) -> str:
    if not earlier:
        return ""
    return (
        f"; this note's earlier record {earlier[-1].memory_id} is still active "
        "('portagent memory delete' or 'edit' it if it no longer holds)"
    )


def apply_import(plan: ImportPlan, store: MemoryStore, *, written_by: str) -> list[MemoryRecord]:
    """Write the plan's ready notes (each record, with the supersession of the note's earlier one, in one
    transaction). A paused store refuses before anything is written."""
    if store.paused and plan.to_write:
        raise MemoryWriteRefused("memory writes are paused by a person ('portagent memory pause')")
    return [
        store.edit(n.memory_id, **n.update)
        if n.update
        else store.write(n.write, owner=plan.owner, written_by=written_by)
        for n in plan.to_write
    ]
