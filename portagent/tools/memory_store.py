"""The governed memory store: ``$PORTAGENT_HOME/memory.db``, its records, writes and retrieval.

The memory tools' handlers (``tools/memory.py``), ``portagent memory`` and a run's start (the store's
path in run.json) use it. Writes are governed here a second time, after the gateway: a ``MemoryWrite``
without source, scope, expiry or confidence is refused, and a paused store refuses every write.
Retrieval ranks by the configurable ch. 04 score and excludes expired, superseded and retired records
(``include_stale`` shows them, ranked below every valid one); each result carries its explanation and the
store records ``last_retrieved``. What is stored is masked by the one secret scanner first.
"""

from __future__ import annotations

import re
import unicodedata
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from portagent.contracts.errors import UsageError
from portagent.contracts.memory import (
    MemoryRecord,
    MemoryWrite,
    Recalled,
    RetrievalWeights,
    memory_id_for,
    parse_expiry,
)
from portagent.core.clock import Clock, SystemClock, iso
from portagent.core.secrets import mask_text
from portagent.tools.observations import ToolFailure

MEMORY_DB = "memory.db"
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "the",
        "this",
        "to",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    memory_id TEXT PRIMARY KEY,
    scope TEXT NOT NULL,
    owner TEXT NOT NULL,
    status TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class MemoryWriteRefused(UsageError):
    """A write the memory policy refuses (missing source/scope/expiry, expired, paused, unknown supersedes)."""


def nfc(text: str) -> str:
    """``text`` as memory keeps it: Unicode NFC with every secret masked.

    NFC: the gateway hands tools NFC arguments (docs/policies.md), while a terminal or a macOS file may give
    NFD ("José" as ``e`` + combining accent): without one form, the same fact would be two records and a
    recall would miss the one written in the other form.

    Masked (``core/secrets.py``, as runs.db, approvals.db, sessions.db and ledger.db keep theirs): an agent
    asked to remember "the deploy key is …", a person's ``memory add`` or a note on ``memory import`` must
    not leave the key in memory.db, which every recall and listing reads. Ids are worked out from this form
    (here and by ``memory import``'s plan), so the same fact with the same secret is still one record."""
    return mask_text(unicodedata.normalize("NFC", text))


def terms(text: str) -> list[str]:
    """Lower-cased words of two or more characters, stop words removed, in order, without repeats."""
    seen: dict[str, None] = {}
    for w in re.findall(r"[\w][\w-]*", unicodedata.normalize("NFC", text).lower()):
        if len(w) >= 2 and w not in STOP_WORDS:
            seen.setdefault(_stem(w), None)
    return list(seen)


def _stem(word: str) -> str:
    """A plural's singular, crudely (``refunds`` → ``refund``; ``class`` stays): enough to match a query
    against a statement without a language model."""
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def score(
    record: MemoryRecord, query: str, now: datetime, weights: RetrievalWeights
) -> tuple[float, dict[str, float], str]:
    """The ch. 04 score of one record for ``query`` at ``now``, its parts, and an explanation."""
    q, s = terms(query), terms(record.statement)
    matched = [t for t in q if t in s]
    rel = len(matched) / len(q) if q else 0.0
    expired = record.expired(now)
    valid = record.status == "active" and not expired
    noise = (len(s) - len(matched)) / len(s) if s else 1.0
    cost = min(1.0, (len(record.statement) / 4) / 250)
    parts = {
        "rel": rel,
        "vig": 1.0 if valid else 0.0,
        "authority": record.confidence,
        "noise": noise,
        "cost": cost,
    }
    total = (
        weights.alpha * rel
        + weights.beta * parts["vig"]
        + weights.gamma * record.confidence
        - weights.delta * noise
        - weights.lam * cost
    )
    if record.status == "superseded":
        validity = f"superseded by {record.superseded_by}"
    elif record.status == "retired":
        validity = f"retired ({record.retired_reason or 'forgotten'})"
    elif expired:
        validity = f"expired {record.expires_at}"
    else:
        validity = "valid" + ("" if record.expires_at == "never" else f" until {record.expires_at}")
    why = (
        f"matched {len(matched)}/{len(q)} query terms ({', '.join(matched) or 'none'}); {validity}; "
        f"confidence {record.confidence:g}; source {record.source}; score {total:.3f}"
    )
    return round(total, 6), {k: round(v, 6) for k, v in parts.items()}, why


WriteOutcome = Literal["stored", "updated", "unchanged"]


@dataclass(frozen=True)
class Written:
    """What a write did to the store."""

    record: MemoryRecord
    """The record as stored now."""
    outcome: WriteOutcome
    """``stored`` a new record · ``updated`` the same fact was stored and this write changed its expiry,
    confidence or type · ``unchanged`` the same fact was stored exactly so."""
    changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    """For ``updated``: each changed field's (old, new) value."""


def content_id(record: MemoryRecord) -> str:
    """The id a record's current content (scope, owner, statement, source) has: a record's identity."""
    return memory_id_for(record.scope, record.owner, record.statement, record.source)


class MemoryStore:
    """Memory records in one SQLite file (``$PORTAGENT_HOME/memory.db`` unless ``path`` is given)."""

    def __init__(self, path: Path | None = None, *, clock: Clock | None = None) -> None:
        from portagent.core.home import state_file
        from portagent.tools.sqlite_state import StoreDamage, open_state_db

        self.path = path or state_file(MEMORY_DB)
        self.clock = clock or SystemClock()
        self._db = open_state_db(self.path, _SCHEMA, "memory store")
        self._damage = StoreDamage("memory store", self.path, "record")
        self._damage.expect_columns(self._db, "memories", ["memory_id", "scope", "owner", "status", "record"])

    def _guard(self) -> AbstractContextManager[None]:
        return self._damage.guard()

    def close(self) -> None:
        self._db.close()

    # --- human controls ------------------------------------------------------------------------------

    @property
    def paused(self) -> bool:
        with self._guard():
            row = self._db.execute("SELECT value FROM settings WHERE key = 'paused'").fetchone()
        return bool(row and row[0] == "1")

    def set_paused(self, paused: bool) -> None:
        with self._guard():
            self._db.execute(
                "INSERT INTO settings VALUES ('paused', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                ("1" if paused else "0",),
            )

    def get(self, memory_id: str) -> MemoryRecord | None:
        with self._guard():
            row = self._db.execute("SELECT record FROM memories WHERE memory_id = ?", (memory_id,)).fetchone()
            return MemoryRecord.model_validate_json(row[0]) if row else None

    def records(self, *, scope: str | None = None, owner: str | None = None) -> list[MemoryRecord]:
        sql, params = "SELECT record FROM memories WHERE 1=1", list[str]()
        if scope is not None:
            sql, params = sql + " AND scope = ?", [*params, scope]
        if owner is not None:
            sql, params = sql + " AND owner = ?", [*params, owner]
        with self._guard():
            rows = self._db.execute(sql + " ORDER BY memory_id", params).fetchall()
            out = [MemoryRecord.model_validate_json(r[0]) for r in rows]
        return sorted(out, key=lambda r: (r.created_at, r.memory_id))

    def _put(self, record: MemoryRecord) -> None:
        self._db.execute(
            "INSERT INTO memories VALUES (?, ?, ?, ?, ?) ON CONFLICT(memory_id) DO UPDATE SET "
            "scope = excluded.scope, owner = excluded.owner, status = excluded.status, record = excluded.record",
            (record.memory_id, record.scope, record.owner, record.status, record.model_dump_json()),
        )

    def edit(self, memory_id: str, **changes: Any) -> MemoryRecord:
        """A person's correction (statement, source, confidence, expires_at, scope, type): re-validated.

        A new expiry already past is refused as ``write`` refuses it: it would leave an ``active`` record
        that is never recalled. (A record that expired with time may still have other fields corrected.)
        A new statement or source gives the record the id of its new content (``_rekeyed``: a later write of
        the old text is then a new record, one of the new text this one); refused when another record
        already holds that content. The returned record carries the id it has now."""
        record = self._require(memory_id)
        allowed = {"statement", "source", "confidence", "expires_at", "type"}
        unknown = set(changes) - allowed
        if unknown:
            raise UsageError(f"cannot edit {', '.join(sorted(unknown))} of a memory")
        write = MemoryWrite(
            statement=nfc(changes.get("statement", record.statement)),
            source=nfc(changes.get("source", record.source)),
            scope=record.scope,
            expires_at=changes.get("expires_at", record.expires_at),
            confidence=changes.get("confidence", record.confidence),
            type=changes.get("type", record.type),
        )
        when = parse_expiry(write.expires_at)
        if "expires_at" in changes and when is not None and when <= self.clock.now():
            raise MemoryWriteRefused(
                f"expires_at {write.expires_at} is already past: the memory would never be recalled "
                f"('portagent memory delete {memory_id}' removes it)"
            )
        updated = record.model_copy(
            update={**write.model_dump(exclude={"supersedes", "scope"}), "updated_at": iso(self.clock.now())}
        )
        MemoryRecord.model_validate(updated.model_dump())
        with self._guard():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                updated = self._rekeyed(updated) if content_id(updated) != memory_id else updated
                self._put(updated)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return updated

    def _rekeyed(self, record: MemoryRecord) -> MemoryRecord:
        """``record`` under the id of its current content, its old row gone and every ``supersedes`` /
        ``superseded_by`` pointing at it moved along (inside the caller's transaction).

        The id is a hash of the content so that the same fact from the same source is one record: a record
        kept under the id of a statement it no longer says would make a later write of that statement
        "the same fact" (told stored, nothing stored), and a write of the new statement a second record.
        Refused when another record already holds the new content: merging two records (which one's
        confidence, expiry, retrievals?) is a person's decision, not the store's."""
        old_id, new_id = record.memory_id, content_id(record)
        other = self.get(new_id)
        if other is not None:
            raise MemoryWriteRefused(
                f"this statement from this source is already memory {new_id} ({other.status}): nothing "
                f"changed ('portagent memory delete {old_id}' keeps only that one, or edit it instead)"
            )
        moved = record.model_copy(update={"memory_id": new_id})
        self._db.execute("DELETE FROM memories WHERE memory_id = ?", (old_id,))
        for r in self.records():
            links = {k: new_id for k in ("supersedes", "superseded_by") if getattr(r, k) == old_id}
            if links:
                self._put(r.model_copy(update=links))
        return moved

    def restore(self, memory_id: str) -> MemoryRecord:
        """A person's undo of an agent's ``forget`` (why ``forget`` is declared ``reversible``): the retired
        record is active and recalled again, its retrieval history kept, ``updated_at`` set.

        Only a forgotten record: an active one has nothing to undo, and a superseded one was replaced by a
        newer record that recall returns instead — making both active would recall two answers to one
        question, so the person edits or deletes the replacement. A record whose expiry has passed is
        restored but still not recalled, and the caller is told (``expired``)."""
        record = self._require(memory_id)
        if record.status == "active":
            raise UsageError(f"memory {memory_id} is active: there is no forget to undo")
        if record.status == "superseded":
            raise UsageError(
                f"memory {memory_id} was superseded by {record.superseded_by}, not forgotten: 'restore' undoes "
                f"a forget only (edit or delete {record.superseded_by} to change what is recalled)"
            )
        restored = record.model_copy(
            update={"status": "active", "retired_reason": None, "updated_at": iso(self.clock.now())}
        )
        with self._guard():
            self._put(restored)
        return restored

    def delete(self, memory_id: str) -> MemoryRecord:
        record = self._require(memory_id)
        with self._guard():
            self._db.execute("DELETE FROM memories WHERE memory_id = ?", (memory_id,))
        return record

    def _require(self, memory_id: str) -> MemoryRecord:
        record = self.get(memory_id)
        if record is None:
            raise UsageError(f"no memory {memory_id!r} in {self.path}: 'portagent memory list' shows them")
        return record

    # --- governed writes -----------------------------------------------------------------------------

    def write(self, write: MemoryWrite, *, owner: str, written_by: str) -> MemoryRecord:
        """Store one memory (``write_fact``) and return the record as stored."""
        return self.write_fact(write, owner=owner, written_by=written_by).record

    def write_fact(self, write: MemoryWrite, *, owner: str, written_by: str) -> Written:
        """Store one memory. Refused when paused, already expired, or superseding an unknown record.

        The same fact from the same source is one record (its id is a hash of scope, owner, statement and
        source, kept in step with the record's content by ``edit``), and a write of it must leave a record
        that recall returns, as this write describes it — the writer is told it was stored. So a stored
        record with another expiry, confidence or type takes this write's (``updated``, with the changes: the
        latest writer's word, as an edited note's on ``memory import``; one that had *expired* is recalled
        again), an identical one is ``unchanged``; one that was *superseded* or *forgotten* (retired) is
        refused with why, nothing written — reviving it would undo a deliberate decision, which is a person's
        to take (``memory show``/``delete``), as ``memory import`` flags such a note. The check and the
        write are one transaction, so two writers of one fact both see what the other left."""
        now = self.clock.now()
        if self.paused:
            raise MemoryWriteRefused("memory writes are paused by a person ('portagent memory pause')")
        when = parse_expiry(write.expires_at)
        if when is not None and when <= now:
            raise MemoryWriteRefused(f"expires_at {write.expires_at} is already past: nothing to remember")
        if not owner.strip():
            raise MemoryWriteRefused("a memory needs an owner")
        write = write.model_copy(update={"statement": nfc(write.statement), "source": nfc(write.source)})
        record = MemoryRecord(
            memory_id=memory_id_for(write.scope, owner, write.statement, write.source),
            statement=write.statement,
            source=write.source,
            scope=write.scope,
            type=write.type,
            owner=owner,
            confidence=write.confidence,
            created_at=iso(now),
            expires_at=write.expires_at,
            supersedes=write.supersedes,
            written_by=written_by,
        )
        with self._guard():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                if write.supersedes is not None:
                    old = self.get(write.supersedes)
                    if old is None or old.scope != write.scope or old.owner != owner:
                        raise MemoryWriteRefused(
                            f"supersedes {write.supersedes!r}: no such memory in scope {write.scope} of {owner}"
                        )
                    self._put(
                        old.model_copy(update={"status": "superseded", "superseded_by": record.memory_id})
                    )
                existing = self.get(record.memory_id)
                if existing is not None and content_id(existing) != existing.memory_id:
                    # edited before ``edit`` re-keyed records: it says something else now, so it moves to
                    # its content's id and this write is a new record
                    self._put(self._rekeyed(existing))
                    existing = None
                if existing is not None and existing.status != "active":
                    raise MemoryWriteRefused(self._not_recalled(existing))
                if existing is None:
                    self._put(record)
                    done = Written(record, "stored")
                else:
                    changes = {
                        k: (getattr(existing, k), getattr(write, k))
                        for k in ("expires_at", "confidence", "type")
                        if getattr(existing, k) != getattr(write, k)
                    }
                    if changes:
                        record = existing.model_copy(update={k: new for k, (_, new) in changes.items()})
                        self._put(record)
                        done = Written(record, "updated", changes)
                    else:
                        done = Written(existing, "unchanged")
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return done

    @staticmethod
    def _not_recalled(existing: MemoryRecord) -> str:
        why = (
            f"was superseded by {existing.superseded_by}"
            if existing.status == "superseded"
            else f"was forgotten ({existing.retired_reason or 'retired'})"
        )
        return (
            f"this fact from this source is memory {existing.memory_id}, which {why} and is not recalled: "
            f"nothing stored (a person can delete that record to let it be remembered again: "
            f"'portagent memory delete {existing.memory_id}')"
        )

    def retire(self, memory_id: str, reason: str, *, owners: dict[str, str]) -> MemoryRecord:
        """An agent's ``forget``: the record stays (audit) but is never retrieved again."""
        if self.paused:
            raise MemoryWriteRefused("memory writes are paused by a person ('portagent memory pause')")
        record = self.get(memory_id)
        if record is None or owners.get(record.scope, record.owner) != record.owner:
            raise ToolFailure("not_found", f"no memory {memory_id!r} visible to this agent")
        updated = record.model_copy(update={"status": "retired", "retired_reason": nfc(reason)})
        with self._guard():
            self._put(updated)
        return updated

    # --- retrieval -----------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        owners: dict[str, str] | None = None,
        k: int = 5,
        weights: RetrievalWeights | None = None,
        include_stale: bool = False,
        touch: bool = True,
    ) -> list[Recalled]:
        """The top ``k`` records for ``query``: relevant ones only (at least one query term), valid ones
        first; ``owners`` maps scope → the owner visible in it (``project`` absent = every project memory).
        ``touch`` records the retrieval (``last_retrieved``, ``retrieval_count``)."""
        weights = weights or RetrievalWeights()
        now = self.clock.now()
        ranked: list[tuple[float, int, MemoryRecord, dict[str, float], str]] = []
        for record in self.records():
            if owners is not None and record.scope in owners and owners[record.scope] != record.owner:
                continue
            total, parts, why = score(record, query, now, weights)
            if parts["rel"] == 0:
                continue
            if not parts["vig"] and not include_stale:
                continue
            ranked.append((total, int(parts["vig"]), record, parts, why))
        # valid records always rank above stale ones, whatever the weights; then by score, then id
        ranked.sort(key=lambda x: (-x[1], -x[0], x[2].memory_id))
        out: list[Recalled] = []
        stamp = iso(now)
        for total, _, record, parts, why in ranked[:k]:
            previous = record.last_retrieved
            if touch:
                record = record.model_copy(
                    update={"last_retrieved": stamp, "retrieval_count": record.retrieval_count + 1}
                )
                with self._guard():
                    self._put(record)
            out.append(
                Recalled(
                    record=record, score=total, parts=parts, explanation=why, previous_retrieval=previous
                )
            )
        return out
