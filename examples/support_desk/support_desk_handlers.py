"""Handlers of the support-desk example tools, over in-memory fixtures.

They are plain functions: the gateway validates, decides and traces before calling them. Tickets are
numbered per run scope (the ledger namespace) so every run of the demo gets ``TCK-0001`` first,
whatever ran before it in the same process.
"""

from __future__ import annotations

import hashlib
from typing import Any

HANDBOOK = [
    {"id": "H-1", "title": "Refund deadline", "text": "Refunds are requested within 30 days of payment."},
    {"id": "H-2", "title": "Required documents", "text": "Enrolment needs a DNI (or passport) and the signed form."},
    {"id": "H-3", "title": "Payment plans", "text": "Balances over 150 EUR can be split into three payments."},
    {"id": "H-4", "title": "Office hours", "text": "The desk answers Monday to Friday, 9:00 to 14:00."},
]

RECORDS: dict[str, dict[str, Any]] = {
    "EXP-42": {"status": "incompleto", "missing_documents": ["DNI"], "balance_due": 180,
               "email": "ana.garcia@uni.example", "payments": [{"date": "2026-09-01", "amount": 220}]},
    "EXP-77": {"status": "completo", "missing_documents": [], "balance_due": 0,
               "email": "li.wei@uni.example", "payments": [{"date": "2026-09-03", "amount": 400}]},
}

_TICKETS: dict[str, dict[str, dict[str, Any]]] = {}
SENT_EMAILS: list[dict[str, Any]] = []


def search_policy(query: str) -> dict[str, Any]:
    words = {w.lower() for w in query.split() if len(w) > 2}
    hits = [h for h in HANDBOOK if words & set((h["title"] + " " + h["text"]).lower().replace(".", "").split())]
    return {"passages": hits or HANDBOOK[:1]}


def get_student_record(case_id: str, include_payments: bool = False) -> dict[str, Any]:
    record = RECORDS.get(case_id)
    if record is None:
        return {"ok": False, "error": "not_found", "details": {"case_id": case_id}}
    out = {k: v for k, v in record.items() if k not in ("payments", "email")}
    if include_payments:
        out["payments"] = record["payments"]
    return out


def prepare_reply_for_review(case_id: str, template_id: str, facts: dict[str, Any] | None = None) -> dict[str, Any]:
    facts = facts or {}
    if template_id == "missing_docs":
        body = f"Your case {case_id} is missing: {', '.join(facts.get('missing', ['documents']))}."
    else:
        body = f"Your case {case_id} has a balance due of {facts.get('balance_due', '?')} EUR."
    return {"draft": body, "status": "draft_for_review"}


def create_ticket(args: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    """Declares ``context``, so the gateway calls it as ``create_ticket(args, context)``."""
    tickets = _TICKETS.setdefault(context.get("scope", ""), {})
    ticket_id = f"TCK-{len(tickets) + 1:04d}"
    tickets[ticket_id] = {"case_id": args["case_id"], "summary": args["summary"], "priority": args["priority"]}
    return {"ticket_id": ticket_id, "status": "open"}


def find_ticket(key: str, args: dict[str, Any], context: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Reconcile a ticket whose outcome was never recorded: look it up by case id."""
    scope = (context or {}).get("scope", "")
    for ticket_id, t in _TICKETS.get(scope, {}).items():
        if t["case_id"] == args.get("case_id"):
            return {"ticket_id": ticket_id, "status": "open"}
    return None


def send_email(to: str, subject: str, body: str) -> dict[str, Any]:
    SENT_EMAILS.append({"to": to, "subject": subject, "body": body})
    # The id depends on the message only, not on how many emails this process sent before: a replayed
    # run must send the model the same tool result as its recording (docs/demo.md).
    digest = hashlib.sha256(f"{to}\n{subject}\n{body}".encode()).hexdigest()[:8]
    return {"message_id": f"MSG-{digest}", "status": "sent"}
