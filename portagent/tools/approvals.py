"""ApprovalStore: approval cards persisted in SQLite (``<PORTAGENT_HOME>/approvals.db``, WAL).

Lifecycle (DESIGN §3)::

    pending ──► approved ──► (expired, when its expiry passes before execution)
        ├─────► edited ────► (expired, likewise)
        ├─────► rejected
        ├─────► expired
        └─────► superseded

Anything else raises ``ApprovalError`` with a message that names the card and its state. Only
``approved``/``edited`` cards let a call run, and the gateway re-checks expiry (and re-validates
edited arguments) right before executing. A card the gateway has acted on is marked *consumed*
(``consumed_by`` = the call), so a later identical call asks again instead of reusing it.

The card row also keeps the tool's ``input_schema``, so ``portagent approvals edit`` can check
edited arguments without loading the agent.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

from portagent.contracts.errors import ApprovalError
from portagent.contracts.policy import ApprovalCard, ApprovalStatus
from portagent.core.clock import Clock, SystemClock, iso
from portagent.core.home import APPROVALS_DB, state_file
from portagent.tools.sqlite_state import open_state_db
from portagent.tools.validation import BadSchemaError, schema_errors, validator_for

TRANSITIONS: dict[str, frozenset[str]] = {
    "pending": frozenset({"approved", "edited", "rejected", "expired", "superseded"}),
    "approved": frozenset({"expired"}),
    "edited": frozenset({"expired"}),
    "rejected": frozenset(),
    "expired": frozenset(),
    "superseded": frozenset(),
}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS approval_cards (
    approval_id  TEXT PRIMARY KEY,
    scope        TEXT NOT NULL,
    run_id       TEXT NOT NULL,
    call_id      TEXT NOT NULL,
    tool         TEXT NOT NULL,
    args_hash    TEXT NOT NULL,
    status       TEXT NOT NULL,
    card         TEXT NOT NULL,
    input_schema TEXT,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    decided_at   TEXT,
    consumed_by  TEXT
);
CREATE INDEX IF NOT EXISTS approval_cards_call ON approval_cards (scope, tool, args_hash);
"""


class EditRefusedError(ApprovalError):
    """Edited arguments failed re-validation; the card stays pending (exit 1: a check failed)."""

    exit_code = 1

    def __init__(self, approval_id: str, problems: list[dict[str, Any]]) -> None:
        lines = "; ".join(f"{p.get('path') or '(arguments)'}: {p['message']}" for p in problems)
        super().__init__(f"edited arguments for {approval_id} refused: {lines}")
        self.problems = problems


class ApprovalIdTaken(ApprovalError):
    """``create`` with an id already in the store (a seeded id factory replaying an earlier attempt)."""


def parse_ts(text: str) -> datetime:
    return datetime.fromisoformat(text)


class ApprovalStore:
    """Approval cards on disk. Each instance holds one connection; safe to share between threads."""

    def __init__(self, path: str | Path | None = None, *, clock: Clock | None = None) -> None:
        self.path = Path(path) if path is not None else state_file(APPROVALS_DB)
        self.clock = clock or SystemClock()
        self._lock = threading.Lock()
        self._db = open_state_db(self.path, _SCHEMA, "approvals store")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- reading -------------------------------------------------------------------------------------

    def _load(self, approval_id: str) -> tuple[ApprovalCard, str | None] | None:
        row = self._db.execute(
            "SELECT card, consumed_by FROM approval_cards WHERE approval_id=?", (approval_id,)
        ).fetchone()
        if row is None:
            return None
        return ApprovalCard.model_validate_json(row[0]), row[1]

    def get(self, approval_id: str) -> ApprovalCard:
        with self._lock:
            found = self._load(approval_id)
        if found is None:
            raise ApprovalError(f"unknown approval id {approval_id!r} (store: {self.path})")
        return found[0]

    def consumed_by(self, approval_id: str) -> str | None:
        with self._lock:
            found = self._load(approval_id)
        return found[1] if found else None

    def input_schema(self, approval_id: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT input_schema FROM approval_cards WHERE approval_id=?", (approval_id,)
            ).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    def list(self, status: ApprovalStatus | None = None, scope: str | None = None) -> list[ApprovalCard]:
        sql = "SELECT card FROM approval_cards WHERE 1=1"
        params: list[str] = []
        if status is not None:
            sql += " AND status=?"
            params.append(status)
        if scope is not None:
            sql += " AND scope=?"
            params.append(scope)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY created_at, rowid", params).fetchall()
        return [ApprovalCard.model_validate_json(r[0]) for r in rows]

    def find(self, scope: str, tool: str, args_hash: str) -> ApprovalCard | None:
        """The newest card for this call (same scope, tool and arguments) not yet acted on — what a
        resumed run uses instead of asking again."""
        with self._lock:
            row = self._db.execute(
                "SELECT card FROM approval_cards WHERE scope=? AND tool=? AND args_hash=? AND consumed_by IS NULL "
                "AND status IN ('pending', 'approved', 'edited', 'rejected') ORDER BY rowid DESC LIMIT 1",
                (scope, tool, args_hash),
            ).fetchone()
        return ApprovalCard.model_validate_json(row[0]) if row else None

    def is_expired(self, card: ApprovalCard) -> bool:
        return self.clock.now() > parse_ts(card.expires_at)

    # -- writing -------------------------------------------------------------------------------------

    def create(self, card: ApprovalCard, *, input_schema: dict[str, Any] | None = None) -> ApprovalCard:
        if card.status != "pending":
            raise ApprovalError(f"a new card must be pending, got {card.status!r}")
        with self._lock:
            try:
                self._db.execute(
                    "INSERT INTO approval_cards (approval_id, scope, run_id, call_id, tool, args_hash, status, card, "
                    "input_schema, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        card.approval_id,
                        card.scope,
                        card.run_id,
                        card.call_id,
                        card.tool,
                        card.args_hash,
                        card.status,
                        card.model_dump_json(),
                        json.dumps(input_schema) if input_schema is not None else None,
                        card.created_at,
                        card.expires_at,
                    ),
                )
            except sqlite3.IntegrityError as e:
                raise ApprovalIdTaken(f"approval id {card.approval_id!r} already exists") from e
        return card

    def _transition(self, approval_id: str, new: ApprovalStatus, **changes: Any) -> ApprovalCard:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                found = self._load(approval_id)
                if found is None:
                    raise ApprovalError(f"unknown approval id {approval_id!r} (store: {self.path})")
                card = found[0]
                if new not in TRANSITIONS[card.status]:
                    raise ApprovalError(self._refusal(card, new))
                if new in ("approved", "edited", "rejected") and self.clock.now() > parse_ts(card.expires_at):
                    card = self._write(card, "expired", decided_at=iso(self.clock.now()))
                    self._db.execute("COMMIT")
                    raise ApprovalError(
                        f"approval {approval_id} expired at {card.expires_at}; it can no longer "
                        "be decided (re-run the request to get a new card)"
                    )
                card = self._write(card, new, **changes)
                self._db.execute("COMMIT")
                return card
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    def _write(self, card: ApprovalCard, status: ApprovalStatus, **changes: Any) -> ApprovalCard:
        card = card.model_copy(update={"status": status, **changes})
        self._db.execute(
            "UPDATE approval_cards SET status=?, card=?, decided_at=? WHERE approval_id=?",
            (status, card.model_dump_json(), card.decided_at, card.approval_id),
        )
        return card

    @staticmethod
    def _refusal(card: ApprovalCard, new: str) -> str:
        verb = {
            "approved": "approve",
            "edited": "edit",
            "rejected": "reject",
            "expired": "expire",
            "superseded": "supersede",
        }[new]
        if card.status == "pending":
            return f"cannot {verb} approval {card.approval_id}"
        who = f" by {card.reviewer}" if card.reviewer else ""
        return (
            f"cannot {verb} approval {card.approval_id}: it is already {card.status}{who}; "
            "only a pending card can be decided"
        )

    def approve(self, approval_id: str, reviewer: str = "unknown", note: str = "") -> ApprovalCard:
        card = self.get(approval_id)
        return self._transition(
            approval_id,
            "approved",
            reviewer=reviewer,
            note=note,
            effective_args=card.args,
            decided_at=iso(self.clock.now()),
        )

    def reject(self, approval_id: str, reviewer: str = "unknown", note: str = "") -> ApprovalCard:
        return self._transition(
            approval_id, "rejected", reviewer=reviewer, note=note, decided_at=iso(self.clock.now())
        )

    def edit(
        self,
        approval_id: str,
        new_args: dict[str, Any],
        reviewer: str = "unknown",
        note: str = "",
        *,
        validate: bool = True,
    ) -> ApprovalCard:
        """Approve with changed arguments. With ``validate`` the arguments are checked against the
        tool's stored ``input_schema`` first (the gateway re-validates schema, scopes and policy again
        before running them)."""
        if not isinstance(new_args, dict):
            raise EditRefusedError(approval_id, [{"path": "", "message": "arguments must be a JSON object"}])
        if validate:
            self.check_args(approval_id, new_args)
        return self._transition(
            approval_id,
            "edited",
            reviewer=reviewer,
            note=note,
            effective_args=new_args,
            decided_at=iso(self.clock.now()),
        )

    def check_args(self, approval_id: str, args: dict[str, Any]) -> None:
        """Raise EditRefusedError when ``args`` fail the card's stored input schema."""
        schema = self.input_schema(approval_id)
        if schema is None:
            self.get(approval_id)  # unknown id → ApprovalError
            return
        try:
            problems = schema_errors(validator_for(schema), args)
        except BadSchemaError as e:
            problems = [{"path": "", "message": str(e)}]
        if problems:
            raise EditRefusedError(approval_id, problems)

    def expire(self, approval_id: str) -> ApprovalCard:
        return self._transition(approval_id, "expired", decided_at=iso(self.clock.now()))

    def supersede(self, approval_id: str) -> ApprovalCard:
        return self._transition(approval_id, "superseded", decided_at=iso(self.clock.now()))

    def mark_consumed(self, approval_id: str, call_id: str) -> None:
        """The gateway acted on this card for ``call_id``; it will not be reused."""
        with self._lock:
            self._db.execute(
                "UPDATE approval_cards SET consumed_by=? WHERE approval_id=? AND consumed_by IS NULL",
                (call_id, approval_id),
            )

    def clear_scope(self, scope: str) -> int:
        with self._lock:
            return self._db.execute("DELETE FROM approval_cards WHERE scope=?", (scope,)).rowcount
