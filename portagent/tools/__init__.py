"""The tool gateway, the permission policy engine, approvals and the effect ledger.

Every portable tool call, on every provider, goes through :class:`ToolGateway` — the only place a
tool handler is ever called::

    lookup → parse → schema → preconditions → budget → permission → approval
           → idempotency (ledger) → execute → output checks → trace
"""

from portagent.tools.approvals import ApprovalStore, EditRefusedError
from portagent.tools.approvers import (
    ApproverDecision,
    AutoApprove,
    AutoDeny,
    CallbackApprover,
    Defer,
    InteractiveApprover,
    ScriptedApprover,
    make_approver,
)
from portagent.tools.context import ContextError, GatewayContext
from portagent.tools.gateway import PreparedCall, ToolGateway
from portagent.tools.ledger import EffectLedger, LedgerEntry
from portagent.tools.observations import Observation, ToolFailure
from portagent.tools.policy import PolicyEngine, PolicyInputError

__all__ = [
    "ApprovalStore",
    "ApproverDecision",
    "AutoApprove",
    "AutoDeny",
    "CallbackApprover",
    "ContextError",
    "Defer",
    "EditRefusedError",
    "EffectLedger",
    "GatewayContext",
    "InteractiveApprover",
    "LedgerEntry",
    "Observation",
    "PolicyEngine",
    "PolicyInputError",
    "PreparedCall",
    "ScriptedApprover",
    "ToolFailure",
    "ToolGateway",
    "make_approver",
]
