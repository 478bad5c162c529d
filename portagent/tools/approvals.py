"""ApprovalStore: approval cards persisted in SQLite (``<PORTAGENT_HOME>/approvals.db``, WAL).

Lifecycle (DESIGN §3)::

    pending ──► approved ──► (expired, when its expiry passes before execution;
        │                     superseded, when a resumed run no longer makes the call)
        ├─────► edited ────► (expired, superseded, likewise)
        ├─────► rejected
        ├─────► expired
        └─────► superseded

Anything else raises ``ApprovalError`` with a message that names the card and its state. Only
``approved``/``edited`` cards let a call run, and the gateway re-checks expiry (and re-validates
edited arguments) right before executing. A card the gateway has acted on is marked *consumed*
(``consumed_by`` = the call), so a later identical call asks again instead of reusing it.

The card row also keeps the tool's ``input_schema``, and ``approval_checks`` keeps the tool spec, the
policy and the run context the call was decided with (``recheck_material``), so ``portagent approvals
edit`` checks edited arguments the way the run will — schema, policy, idempotency key — without loading
the agent (``edit_problems``, the one check the gateway also makes before running an edit).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from portagent.contracts.errors import ApprovalError, PortagentError
from portagent.contracts.policy import ApprovalCard, ApprovalStatus, PermissionPolicy
from portagent.contracts.tool import ToolSpec
from portagent.core.clock import Clock, SystemClock, iso
from portagent.core.home import APPROVALS_DB, state_file
from portagent.core.secrets import mask_data
from portagent.tools.sqlite_state import close_state_db, open_state_db
from portagent.tools.validation import BadSchemaError, schema_errors, validator_for

if TYPE_CHECKING:
    from portagent.tools.context import GatewayContext
    from portagent.tools.policy import PolicyEngine

TRANSITIONS: dict[str, frozenset[str]] = {
    "pending": frozenset({"approved", "edited", "rejected", "expired", "superseded"}),
    "approved": frozenset({"expired", "superseded"}),
    "edited": frozenset({"expired", "superseded"}),
    "rejected": frozenset(),
    "expired": frozenset(),
    "superseded": frozenset(),
}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS approval_cards (
    approval_id  TEXT NOT NULL,
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
    consumed_by  TEXT,
    PRIMARY KEY (scope, approval_id)
);
CREATE INDEX IF NOT EXISTS approval_cards_call ON approval_cards (scope, tool, args_hash);
CREATE TABLE IF NOT EXISTS approval_checks (
    approval_id  TEXT NOT NULL,
    scope        TEXT NOT NULL,
    material     TEXT NOT NULL,
    PRIMARY KEY (scope, approval_id)
);
"""


class EditRefusedError(ApprovalError):
    """Edited arguments failed re-validation; the card stays pending (exit 1: a check failed)."""

    exit_code = 1

    def __init__(self, approval_id: str, problems: list[dict[str, Any]]) -> None:
        lines = "; ".join(f"{p.get('path') or '(arguments)'}: {p['message']}" for p in problems)
        super().__init__(f"edited arguments for {approval_id} refused: {lines}")
        self.problems = problems


def recheck_material(tool: ToolSpec, policy: PermissionPolicy, context: GatewayContext) -> dict[str, Any]:
    """What checking an edit the way the run will needs, kept beside the card: the tool spec and the
    policy the call was decided with, and the run context the policy reads (actor, scopes, env, the
    run's ``context``). A snapshot, not a path to the agent spec: the check needs no agent file and
    tests exactly what the run decided under; the gateway checks again before running the edit."""
    return {
        "tool": tool.model_dump(mode="json", by_alias=True),
        "policy": policy.model_dump(mode="json", by_alias=True),
        "context": {
            "run_id": context.run_id,
            "scope": context.scope,
            "provider": context.provider,
            "agent": context.agent,
            "actor": context.actor,
            "scopes": list(context.scopes),
            "env": context.env,
            "context": context.context,
        },
    }


def edit_problems(
    tool: ToolSpec, policy: PolicyEngine, context: GatewayContext, args: Any, *, key: bool = True
) -> tuple[list[dict[str, Any]], str | None]:
    """Why the run would refuse to run ``args`` as an edit of a call to ``tool`` (empty when it would
    not), and the idempotency key they would run under. In order: the input schema, the policy (a
    ``deny`` refuses; scopes, env and run context included) and, with ``key``, the idempotency key
    (a key field the edit dropped). One check for ``approvals edit`` and for the gateway."""
    from portagent.tools.execution import KeyMissingError, idempotency_key

    try:
        validator = validator_for(tool.input_schema, f"{tool.ref}:in:{tool.schema_hash}")
    except BadSchemaError as e:
        return [{"path": "", "message": f"{tool.name}'s input_schema is invalid: {e}"}], None
    problems = schema_errors(validator, args)
    if problems:
        return problems, None
    try:
        decision = policy.decide(tool, args, context)
    except PortagentError as e:
        return [{"path": "context", "message": f"the policy cannot decide the edited arguments: {e}"}], None
    if decision.decision == "deny":
        return [
            {
                "path": "",
                "message": f"the policy denies the edited arguments: {decision.reason}",
                "rule": decision.rule,
            }
        ], None
    if not key or not tool.idempotency.required:
        return [], None
    from portagent.contracts._base import args_hash

    try:
        return [], idempotency_key(tool, args, args_hash(args))
    except KeyMissingError as e:
        return [{"path": tool.idempotency.key_field or "", "message": str(e)}], None


class ApprovalIdTaken(ApprovalError):
    """``create`` with an id already in the store (a seeded id factory replaying an earlier attempt)."""


def _stored(card: ApprovalCard) -> str:
    """The card as stored: secrets in the model's arguments, reason and note masked (core/secrets.py).
    Running an approved call uses the run's own arguments, never these; a reviewer's edit is kept as
    given (it is what will run)."""
    data = card.model_dump(mode="json")
    edited = data.get("effective_args") if card.status == "edited" else None
    data = mask_data(data)
    if edited is not None:
        data["effective_args"] = edited
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _namespace_ids(db: sqlite3.Connection) -> None:
    """Approval ids are unique per run scope, not across the store: a replay (seeded ids, scope
    ``replay:…``) makes the same ids as its recording (scope ``eval:…``) in the same PORTAGENT_HOME, and
    both cards must exist without one taking the other's id (which shifted every later seeded id and
    made the replay drift). A lookup by bare id reads the newest card with that id. Stores created
    before this (``approval_id`` alone the key) are rebuilt once, rows and their order kept."""
    pk = [r[1] for r in db.execute("PRAGMA table_info(approval_cards)").fetchall() if r[5]]
    if pk != ["approval_id"]:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        pk = [r[1] for r in db.execute("PRAGMA table_info(approval_cards)").fetchall() if r[5]]
        if pk == ["approval_id"]:  # (another process may have rebuilt it meanwhile)
            db.execute("ALTER TABLE approval_cards RENAME TO approval_cards_v1")
            db.execute("DROP INDEX IF EXISTS approval_cards_call")
            for stmt in _SCHEMA.split(";"):
                if stmt.strip():
                    db.execute(stmt)
            db.execute("INSERT INTO approval_cards SELECT * FROM approval_cards_v1 ORDER BY rowid")
            db.execute("DROP TABLE approval_cards_v1")
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def parse_ts(text: str) -> datetime:
    return datetime.fromisoformat(text)


class ApprovalStore:
    """Approval cards on disk. Each instance holds one connection; safe to share between threads."""

    def __init__(self, path: str | Path | None = None, *, clock: Clock | None = None) -> None:
        self.path = Path(path) if path is not None else state_file(APPROVALS_DB)
        self.clock = clock or SystemClock()
        self._lock = threading.Lock()
        self._closed = False
        self._scopes: dict[str, str] = {}
        """approval id → the scope of the card this instance created, found or read (``_where``)."""
        self._db = open_state_db(self.path, _SCHEMA, "approvals store")
        _namespace_ids(self._db)

    def close(self) -> None:
        with self._lock:
            if not self._closed:  # (the connection may serve another store once given back)
                self._closed = True
                close_state_db(self._db)

    # -- reading -------------------------------------------------------------------------------------

    def _where(self, approval_id: str) -> tuple[str, tuple[str, ...]]:
        """The SQL condition naming one card. Ids are unique per run scope (``_namespace_ids``), so a
        bare id is resolved by, in order: ``ID@SCOPE`` as given; the scope in which this store instance
        created, found or read the card (a run's gateway acts on its own cards); the only card with that
        id. Several runs' cards with one id (seeded ids: record, replay, eval) → ApprovalError naming
        each ``ID@SCOPE``."""
        ident, qualified, scope = approval_id.partition("@")
        scope = scope if qualified else self._scopes.get(ident, "")
        if scope:
            return "approval_id=? AND scope=?", (ident, scope)
        scopes = [
            r[0]
            for r in self._db.execute(
                "SELECT scope FROM approval_cards WHERE approval_id=? ORDER BY rowid", (ident,)
            ).fetchall()
        ]
        if len(scopes) > 1:
            raise ApprovalError(
                f"approval id {ident!r} names cards of {len(scopes)} runs; give one of: "
                + ", ".join(f"{ident}@{s}" for s in scopes)
            )
        return "approval_id=?", (ident,)

    def _load(self, approval_id: str) -> tuple[ApprovalCard, str | None] | None:
        where, params = self._where(approval_id)
        row = self._db.execute(
            f"SELECT card, consumed_by FROM approval_cards WHERE {where}",
            params,
        ).fetchone()
        if row is None:
            return None
        card = self._card(row[0], approval_id)
        self._scopes[card.approval_id] = card.scope
        return card, row[1]

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
            where, params = self._where(approval_id)
            row = self._db.execute(
                f"SELECT input_schema FROM approval_cards WHERE {where}",
                params,
            ).fetchone()
        if not row or not row[0]:
            return None
        try:
            value = json.loads(row[0])
        except (ValueError, RecursionError):
            raise self._corrupt(approval_id, "its stored input schema is not JSON") from None
        return value if isinstance(value, dict) else None

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
        return [self._card(r[0]) for r in rows]

    def find(self, scope: str, tool: str, args_hash: str) -> ApprovalCard | None:
        """The newest card for this call (same scope, tool and arguments) not yet acted on — what a
        resumed run uses instead of asking again."""
        return self._newest(
            scope,
            tool,
            args_hash,
            "consumed_by IS NULL AND status IN ('pending', 'approved', 'edited', 'rejected')",
        )

    def last_approved(self, scope: str, tool: str, args_hash: str) -> ApprovalCard | None:
        """The newest card that approved this call as the model made it (same scope, tool and arguments),
        used or not — what approved an effect whose outcome was lost (``approval_flow``)."""
        return self._newest(scope, tool, args_hash, "status='approved'")

    def _newest(self, scope: str, tool: str, args_hash: str, condition: str) -> ApprovalCard | None:
        """The newest card of this call that meets ``condition`` (SQL over the row; constant text only)."""
        with self._lock:
            row = self._db.execute(
                f"SELECT card FROM approval_cards WHERE scope=? AND tool=? AND args_hash=? AND {condition} "
                "ORDER BY rowid DESC LIMIT 1",
                (scope, tool, args_hash),
            ).fetchone()
        if not row:
            return None
        card = self._card(row[0])
        self._scopes[card.approval_id] = card.scope
        return card

    def _corrupt(self, approval_id: str | None, what: str) -> ApprovalError:
        which = f"approval card {approval_id!r}" if approval_id else "an approval card"
        return ApprovalError(
            f"{which} in {self.path} is corrupt ({what}); remove its row or the store and re-run the request"
        )

    def _card(self, text: Any, approval_id: str | None = None) -> ApprovalCard:
        """A stored card; a row that is not a card (edited by hand, a torn write) → ApprovalError."""
        try:
            return ApprovalCard.model_validate_json(text)
        except (ValidationError, ValueError, TypeError, RecursionError) as e:
            errors = e.errors() if isinstance(e, ValidationError) else []
            what = (
                f"{'.'.join(str(x) for x in errors[0]['loc']) or '<card>'}: {errors[0]['msg']}"
                if errors
                else f"{type(e).__name__}"
            )
            raise self._corrupt(approval_id, what) from None

    def is_expired(self, card: ApprovalCard) -> bool:
        return self.clock.now() > parse_ts(card.expires_at)

    # -- writing -------------------------------------------------------------------------------------

    def create(
        self,
        card: ApprovalCard,
        *,
        input_schema: dict[str, Any] | None = None,
        recheck: dict[str, Any] | None = None,
    ) -> ApprovalCard:
        """Store a new pending card; ``recheck`` (``recheck_material``) lets ``edit`` check the policy."""
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
                        _stored(card),
                        json.dumps(input_schema) if input_schema is not None else None,
                        card.created_at,
                        card.expires_at,
                    ),
                )
            except sqlite3.IntegrityError as e:
                raise ApprovalIdTaken(f"approval id {card.approval_id!r} already exists") from e
            if recheck is not None:
                self._db.execute(
                    "INSERT OR REPLACE INTO approval_checks (approval_id, scope, material) VALUES (?, ?, ?)",
                    (card.approval_id, card.scope, json.dumps(recheck, ensure_ascii=False, default=str)),
                )
            self._scopes[card.approval_id] = card.scope
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
            "UPDATE approval_cards SET status=?, card=?, decided_at=? WHERE approval_id=? AND scope=?",
            (status, _stored(card), card.decided_at, card.approval_id, card.scope),
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
        """Approve with changed arguments. With ``validate`` they are checked first the way the run will
        check them (``check_args``: schema, policy, idempotency key) and refused with every problem,
        the card left pending; the gateway checks them again right before running them."""
        if not isinstance(new_args, dict):
            raise EditRefusedError(approval_id, [{"path": "", "message": "arguments must be a JSON object"}])
        changes: dict[str, Any] = {}
        if validate and self.get(approval_id).status == "pending":  # otherwise the transition refuses
            key = self.check_args(approval_id, new_args)
            if key is not None:
                changes["idempotency_key"] = key
        return self._transition(
            approval_id,
            "edited",
            reviewer=reviewer,
            note=note,
            effective_args=new_args,
            decided_at=iso(self.clock.now()),
            **changes,
        )

    def check_args(self, approval_id: str, args: dict[str, Any]) -> str | None:
        """Raise EditRefusedError when the run would refuse ``args`` as the edit of this card: its
        schema, its policy (with the run's actor, scopes, env and context) and its idempotency key,
        from the material stored with the card (``recheck_material``). A card stored without it (an
        older store) is checked against its input schema only. Returns the idempotency key the edit
        will run under (None when the tool has none, or the material is missing)."""
        card = self.get(approval_id)  # unknown id → ApprovalError
        material = self.recheck(card.approval_id + "@" + card.scope)
        if material is not None:
            from portagent.tools.context import GatewayContext
            from portagent.tools.policy import PolicyEngine

            tool, policy, ctx = material
            problems, key = edit_problems(tool, PolicyEngine(policy), GatewayContext(**ctx), args)
            if problems:
                raise EditRefusedError(approval_id, problems)
            return key
        schema = self.input_schema(approval_id)
        if schema is None:
            return None
        try:
            problems = schema_errors(validator_for(schema), args)
        except BadSchemaError as e:
            problems = [{"path": "", "message": str(e)}]
        if problems:
            raise EditRefusedError(approval_id, problems)
        return None

    def recheck(self, approval_id: str) -> tuple[ToolSpec, PermissionPolicy, dict[str, Any]] | None:
        """The tool spec, policy and run context stored with a card (None for a card stored without)."""
        with self._lock:
            where, params = self._where(approval_id)
            row = self._db.execute(
                f"SELECT material FROM approval_checks WHERE {where}",
                params,
            ).fetchone()
        if not row:
            return None
        try:
            data = json.loads(row[0])
            return (
                ToolSpec.model_validate(data["tool"]),
                PermissionPolicy.model_validate(data["policy"]),
                dict(data["context"]),
            )
        except (ValueError, TypeError, KeyError, RecursionError):  # ValidationError is a ValueError
            raise self._corrupt(approval_id, "its stored tool spec, policy or run context") from None

    def expire(self, approval_id: str) -> ApprovalCard:
        return self._transition(approval_id, "expired", decided_at=iso(self.clock.now()))

    def supersede(self, approval_id: str, reason: str = "") -> ApprovalCard:
        """A card that can no longer apply (its run went on without the call); ``reason`` says why."""
        card = self.get(approval_id)
        return self._transition(
            approval_id,
            "superseded",
            decided_at=card.decided_at or iso(self.clock.now()),
            status_reason=reason or None,
        )

    def mark_consumed(self, approval_id: str, call_id: str) -> None:
        """The gateway acted on this card for ``call_id``; it will not be reused."""
        with self._lock:
            where, params = self._where(approval_id)
            self._db.execute(
                f"UPDATE approval_cards SET consumed_by=? WHERE {where} AND consumed_by IS NULL",
                (call_id, *params),
            )

    def clear_scope(self, scope: str) -> int:
        with self._lock:
            self._db.execute("DELETE FROM approval_checks WHERE scope=?", (scope,))
            return self._db.execute("DELETE FROM approval_cards WHERE scope=?", (scope,)).rowcount
