"""``import-report.md``: everything an import did, so nothing is dropped silently.

Each finding names the native thing, what was done about it, and its kind:

- ``not_portable`` — no portable equivalent (hosted tools, guardrails, callbacks, permission modes,
  functions whose schema cannot be produced …): listed here, left out of the spec;
- ``changed`` — imported, but not exactly as it was (a renamed agent, a strict-mode schema, an
  inherited tool list made explicit …);
- ``review`` — imported with a conservative default a person must confirm (every tool's effect class);
- ``note`` — for information (where handlers are imported from, a shim that was generated …).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

FindingKind = Literal["not_portable", "changed", "review", "note"]

_SECTIONS: tuple[tuple[FindingKind, str, str], ...] = (
    (
        "not_portable",
        "Not imported: no portable equivalent",
        "These exist in the native definition but have no portable contract. They are not in the spec; "
        "re-create what you need with a ToolSpec, a policy rule or a budget, as suggested.",
    ),
    ("changed", "Imported with changes", "Imported, but not exactly as the native definition had it."),
    (
        "review",
        "Review before use",
        "Imported with a conservative default. Effect classes cannot be inferred from code: every tool is "
        "`external_effect` (approval required, idempotency key over its arguments) until you set its real class "
        "in tools.yaml.",
    ),
    ("note", "Notes", ""),
)


@dataclass(frozen=True)
class Finding:
    kind: FindingKind
    subject: str
    """The native thing (``hosted tool WebSearchTool on agent shop_desk``)."""
    action: str
    """What the import did about it, and what to do next."""


@dataclass
class ImportReport:
    sdk: str
    """``openai-agents 0.24.0`` …"""
    source: str
    """``MODULE:OBJECT`` as given."""
    findings: list[Finding] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    """Files written (relative to the output folder)."""
    summary: dict[str, int] = field(default_factory=dict)

    def add(self, kind: FindingKind, subject: str, action: str) -> None:
        finding = Finding(kind, subject, action)
        if finding not in self.findings:
            self.findings.append(finding)

    def of(self, kind: FindingKind) -> list[Finding]:
        return [f for f in self.findings if f.kind == kind]

    def render(self) -> str:
        lines = [
            "# Import report",
            "",
            f"- source: `{self.source}` ({self.sdk})",
            "- written: " + ", ".join(f"`{w}`" for w in self.written),
        ]
        for key, value in self.summary.items():
            lines.append(f"- {key}: {value}")
        lines += [
            "",
            "Next: `portagent validate agent.yaml`, then `portagent port-check agent.yaml --to <provider>` "
            "for each provider you want (see docs/migration.md).",
        ]
        for kind, title, intro in _SECTIONS:
            items = self.of(kind)
            lines += ["", f"## {title} ({len(items)})", ""]
            if intro:
                lines += [intro, ""]
            if not items:
                lines.append("None.")
                continue
            lines += ["| what | what was done |", "|---|---|"]
            lines += [f"| {_cell(f.subject)} | {_cell(f.action)} |" for f in items]
        return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
