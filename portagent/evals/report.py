"""Results folders: what ``portagent eval`` writes, and what ``report``, ``gate`` and ``compare`` read.

    results/
      report.json       SuiteResult (kind: suite-result) — the stable, CI-readable result
      eval.json         EvalMeta (kind: eval-run) — how it was produced: mode, agents and roles, workers
      ci_gate.json      GateDecision (kind: gate-decision)
      comparison.json   Comparison (kind: comparison), when the suite has a baseline and a candidate
      report.md         Markdown summary (PR comments)          — report_md.py
      junit.xml         a testcase per judged case × provider, per blocking finding — report_junit.py
      report.html       one self-contained page (no network)      — report_html.py
      runs/<agent>@<version>/<case>/<provider>/r<k>/trace.jsonl, run.json

The gate's decision on a folder, and the settings it was made with: ``evals.deciding``.

``report.json`` has a published JSON Schema, ``docs/schemas/report.schema.json`` (``report_schema()``;
a test keeps the file equal to the model). Its ``schema_version`` changes only with a breaking change.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import ValidationError

from portagent.contracts._base import Contract
from portagent.contracts.errors import UsageError
from portagent.core.files import write_text_atomic
from portagent.core.secrets import mask_text
from portagent.evals.aggregate import SuiteResult
from portagent.evals.compare import Comparison
from portagent.evals.gate import GateDecision
from portagent.recording.layout import is_results_folder

EVAL_META_SCHEMA_VERSION: Final = 1
REPORT_FILES = (
    "report.json",
    "eval.json",
    "ci_gate.json",
    "comparison.json",
    "report.md",
    "junit.xml",
    "report.html",
)
SCHEMA_BASE = "https://portagent.dev/schemas"


class AgentInfo(Contract):
    """One agent version of an eval."""

    role: Literal["agent", "baseline", "candidate"]
    """Its role in the suite."""
    name: str
    """Agent name."""
    version: str
    """Agent version (what results are keyed by)."""
    spec: str
    """Spec path, as resolved when the eval ran."""


class WorkerInfo(Contract):
    """One worker process of the eval's pool."""

    provider: str
    """The provider it ran (one SDK per worker)."""
    runs: int
    """Runs it made."""
    peak_rss_mb: float
    """Its peak resident memory."""


class GateSettings(Contract):
    """What the folder's ``ci_gate.json`` was decided with (``eval --baseline``/``--strict``, or the last
    ``gate`` that wrote into the folder), so ``portagent report`` re-renders the same decision."""

    baseline: str | None = None
    """Baseline results folder it was gated against (absolute), if any."""
    baseline_relative: str | None = None
    """The same folder relative to the results folder (found again when both moved together)."""
    baseline_report_sha256: str | None = None
    """SHA-256 of the baseline's report.json then: a changed baseline is refused, never judged anew."""
    strict: bool = False
    """A tool changed without a version bump blocked (``--strict``)."""
    min_pass_rate: float | None = None
    """``--min-pass-rate`` (None: the default)."""


class EvalMeta(Contract):
    """How a results folder was produced (``eval.json``)."""

    kind: Literal["eval-run"] = "eval-run"
    """File kind marker."""
    schema_version: Literal[1] = EVAL_META_SCHEMA_VERSION
    """Version of this format."""
    suite_id: str
    """The suite."""
    dataset_version: str
    """Its dataset version."""
    suite: str
    """Suite file."""
    mode: Literal["replay", "emulator", "live"]
    """Where the model answers came from."""
    providers: list[str]
    """Providers run."""
    repeats: int
    """Repeats per case × provider × version."""
    workers: int
    """Worker processes."""
    agents: list[AgentInfo]
    """Agent versions and their roles."""
    runs: int
    """Runs made."""
    errors: list[str] = []
    """Runs that could not be made or failed outright (drift, crash …)."""
    started_at: str = ""
    """ISO-8601 UTC."""
    duration_s: float = 0.0
    """Wall time of the eval."""
    portagent_version: str = ""
    """portagent version."""
    workers_used: list[WorkerInfo] = []
    """Every worker process, in the order they finished."""
    cassettes: str | None = None
    """Cassette root a replay read (absolute), for the re-record line of a drift."""
    scheduling: dict[str, Any] | None = None
    """What the scheduler of the eval did, when limits or ``--max-spend-usd`` applied: spend, why it
    stopped, and per provider the runs admitted, retries, pauses (Retry-After / backoff) and the most in
    flight (``runtime.limits``)."""
    gate: GateSettings | None = None
    """The gate settings of ``ci_gate.json`` (None in folders written before they were recorded: the
    defaults)."""

    def version_of(self, role: str) -> str | None:
        return next((a.version for a in self.agents if a.role == role), None)


@dataclass
class Results:
    """A results folder, read back."""

    folder: Path
    result: SuiteResult
    meta: EvalMeta | None

    @property
    def agents(self) -> list[AgentInfo]:
        return list(self.meta.agents) if self.meta else []

    def trace_path(self, agent: str, version: str, case_id: str, provider: str, repeat: int) -> Path:
        return self.folder / "runs" / f"{agent}@{version}" / case_id / provider / f"r{repeat}" / "trace.jsonl"

    def missing_runs(self) -> list[str]:
        """The files of the runs report.json lists that are not in the folder (``runs/…/r<k> has no FILE``).
        A run that could not be made (no run id) wrote none."""
        missing = []
        for r in self.result.runs:
            p = r.provenance
            if not p.run_id:
                continue
            trace = self.trace_path(p.agent, p.agent_version, p.case_id, p.provider, p.repeat)
            for f in (trace, trace.with_name("run.json")):
                if not f.is_file():
                    missing.append(f"{f.parent.relative_to(self.folder)} has no {f.name}")
        return missing


def report_schema() -> dict[str, Any]:
    """The published JSON Schema of ``report.json``."""
    schema = SuiteResult.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{SCHEMA_BASE}/report.schema.json",
        "title": "portagent report.json (SuiteResult)",
        **schema,
    }


def gate_schema() -> dict[str, Any]:
    """The published JSON Schema of ``ci_gate.json``."""
    schema = GateDecision.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{SCHEMA_BASE}/ci_gate.schema.json",
        "title": "portagent ci_gate.json (GateDecision)",
        **schema,
    }


# -- reading ------------------------------------------------------------------------------------------


def _read_model(path: Path, model: Any, what: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise UsageError(f"{path}: cannot read {what}: {e.strerror}") from None
    try:
        return model.model_validate_json(text)
    except ValidationError as e:
        first = e.errors(include_url=False)[0]
        loc = ".".join(str(x) for x in first["loc"]) or "(root)"
        raise UsageError(f"{path}: not a portagent {what} ({loc}: {first['msg']})") from None


def load_results(path: str | Path, *, need_runs: bool = True) -> Results:
    """A results folder (or its ``report.json``). Missing or foreign files are usage errors (exit 2).

    With ``need_runs`` (gate and report read the runs' ``run.json`` and traces: a tool changed without a
    version bump, the trace diffs and timelines), every run report.json lists must have its files: a
    folder without them would pass on its summary alone. ``compare`` reads report.json only."""
    p = Path(path)
    if p.is_file() and p.name.endswith(".json"):
        folder, report = p.parent, p
    elif p.is_dir():
        folder, report = p, p / "report.json"
        if not report.is_file():
            raise UsageError(f"{p}: no report.json here; give the folder 'portagent eval --out' wrote")
    else:
        raise UsageError(f"{p}: no such results folder or report.json")
    result = _read_model(report, SuiteResult, "eval result (report.json)")
    meta_path = folder / "eval.json"
    meta = _read_model(meta_path, EvalMeta, "eval record (eval.json)") if meta_path.is_file() else None
    results = Results(folder, result, meta)
    missing = results.missing_runs() if need_runs else []
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        what = f"{missing[0]}{more}" if (folder / "runs").is_dir() else "no runs/ folder"
        raise UsageError(
            f"{folder}: incomplete results: {what}; every run report.json lists needs its trace.jsonl and "
            "run.json. Give the whole folder 'portagent eval --out' wrote, or run the eval again"
        )
    if need_runs:  # a damaged trace is refused here, before gate or report writes anything
        for r in result.runs:
            p = r.provenance
            if p.run_id:
                load_events(results.trace_path(p.agent, p.agent_version, p.case_id, p.provider, p.repeat))
    return results


# -- writing ------------------------------------------------------------------------------------------


def prepare_out_dir(path: str | Path, *, overwrite: bool) -> Path:
    """An empty results folder. A non-empty one is refused unless ``overwrite`` — and even then only
    when it is a results folder (it has ``eval.json`` or ``report.json``): ``--overwrite`` never
    empties an arbitrary folder."""
    out = check_out_dir(path, overwrite=overwrite)
    if out.is_dir():
        for child in out.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:  # a parent that is a file, a read-only or virtual file system (/proc)
        raise UsageError(f"--out {out}: cannot create the folder ({e.strerror or e})") from None
    return out


def check_out_dir(path: str | Path, *, overwrite: bool) -> Path:
    """``prepare_out_dir``'s refusals, with nothing touched."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a folder")
    if out.is_dir() and any(out.iterdir()):
        if not overwrite and (out / "runs").is_dir() and not is_results_folder(out):
            raise UsageError(
                f"--out {out}: holds the runs of an eval that did not finish (no eval.json); "
                "add --resume to continue it, or remove the folder to start over"
            )
        if not overwrite:
            raise UsageError(
                f"--out {out}: folder is not empty; pass --overwrite to replace the results in it, "
                "or choose another folder"
            )
        if not is_results_folder(out):
            if (out / "runs").is_dir():  # an eval stopped before it wrote eval.json (interrupted, killed)
                raise UsageError(
                    f"--out {out}: holds the runs of an eval that did not finish (no eval.json); "
                    "add --resume to continue it, or remove the folder to start over"
                )
            raise UsageError(
                f"--out {out}: not a portagent results folder (no eval.json or report.json); "
                "refusing to empty it even with --overwrite"
            )
    return out


def write_text(path: Path, text: str) -> Path:
    """Atomic write (a reader never sees half a report); secrets never reach a report (core/secrets.py)."""
    # 0644: reports are meant to be read (CI artefacts, browsers)
    return write_text_atomic(path, mask_text(text), mode=0o644)


_RESULTS_KINDS: Final = {"suite-result": "report.json", "eval-run": "eval.json", "run": "run.json"}
"""Files that hold results (not renderings of them): never replaced by another kind of file."""


def write_json(path: Path, model: Any) -> Path:
    """Write ``model`` as JSON. A file holding results of another kind is refused (``UsageError``,
    nothing written): ``compare --out`` and ``gate --out`` take any path, and one naming an input's
    report.json or eval.json would destroy the results it was computed from."""
    import re

    kind = getattr(model, "kind", None)
    try:
        with Path(path).open("rb") as f:
            head = f.read(200).decode("utf-8", "replace")
    except OSError:  # absent (the usual case) or unreadable: the write reports it
        head = ""
    found = re.match(r'\s*\{\s*"kind"\s*:\s*"([^"]+)"', head)
    if found and found[1] in _RESULTS_KINDS and found[1] != kind:
        raise UsageError(
            f"{path}: holds results ({_RESULTS_KINDS[found[1]]}, kind {found[1]}); refusing to replace it "
            f"with {kind or 'another file'} — choose another output path"
        )
    return write_text(path, model.model_dump_json(indent=2) + "\n")


def warm_reports() -> None:
    """Do ahead what writing an eval's reports first does once — import the renderers and the gate's
    helpers, compile the secret scanner's patterns (detect-secrets and re2: about half a second) — so that
    a thread can do it while the eval's runs are made, not after the last one (``portagent eval``, demo)."""
    import contextlib

    import portagent.evals.context_metrics
    import portagent.evals.deciding
    import portagent.evals.github
    import portagent.evals.report_html
    import portagent.evals.report_junit
    import portagent.evals.report_md
    import portagent.evals.tool_versions
    import portagent.tracing.diff  # noqa: F401

    mask_text("portagent")  # the first scan compiles every pattern
    todo = list(Contract.__subclasses__())  # models whose build pydantic deferred: the findings, the traces…
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if not cls.__pydantic_complete__:
            with contextlib.suppress(Exception):  # unresolved names: it builds (and fails) where it is used
                cls.model_rebuild()


def write_reports(
    results: Results,
    gate_decision: GateDecision,
    comparison: Comparison | None,
    formats: tuple[str, ...] = ("json", "md", "junit", "html"),
) -> list[Path]:
    """(Re-)render the reports of a results folder."""
    from portagent.evals.report_html import render_html
    from portagent.evals.report_junit import render_junit
    from portagent.evals.report_md import render_markdown

    folder = results.folder
    # Every report is rendered before the first is written: one that cannot be rendered (a damaged
    # trace) leaves the folder's reports as they were, never some of them new and the others old.
    models: list[tuple[Path, Any]] = []
    if "json" in formats:
        models.append((folder / "ci_gate.json", gate_decision))
        if comparison is not None:
            models.append((folder / "comparison.json", comparison))
    texts: list[tuple[Path, str]] = []
    if "md" in formats:
        texts.append((folder / "report.md", render_markdown(results, gate_decision, comparison)))
    if "junit" in formats:
        texts.append((folder / "junit.xml", render_junit(results, gate_decision)))
    if "html" in formats:
        texts.append((folder / "report.html", render_html(results, gate_decision, comparison)))
    written = [write_json(path, model) for path, model in models]
    written += [write_text(path, text) for path, text in texts]
    return written


def load_events(path: Path) -> list[Any]:
    """A run's trace events (empty when the file is missing: ``load_results`` refuses a folder without a
    trace a run needs, and a run that could not be made wrote none).

    A line that is not a trace event, or a file that cannot be read, is a ``UsageError`` naming the file
    and the line: skipping it would render the run without the events it held (its tool calls, its end)
    as if that were the whole run."""
    from portagent.contracts.trace import parse_event

    if not path.is_file():
        return []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) else "not UTF-8 text"
        raise UsageError(f"{path}: cannot read this run's trace ({why})") from None
    out = []
    for n, line in enumerate(text.split("\n"), 1):  # not splitlines(): U+2028 may sit inside a JSON string
        if line.strip():
            try:
                out.append(parse_event(json.loads(line)))
            except (ValueError, ValidationError) as e:
                raise UsageError(
                    f"{path}: line {n} is not a trace event ({_why(e)}); the run's trace is damaged: "
                    "restore it, or run the eval again"
                ) from None
    return out


def _why(e: ValueError | ValidationError) -> str:
    """The first reason a trace line was refused, in one short phrase."""
    if isinstance(e, ValidationError):
        first = e.errors()[0]
        if first["type"] in ("union_tag_invalid", "union_tag_not_found"):  # not the long list of types
            tag = first["input"].get("type") if isinstance(first["input"], dict) else None
            return "no 'type' field" if tag is None else f"no event type {tag!r}"
        loc = ".".join(str(x) for x in first["loc"]) or "the event"
        return f"{loc}: {first['msg']}"
    if isinstance(e, json.JSONDecodeError):
        return f"not JSON: {e.msg} at column {e.colno}"
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def write_eval(
    run: Any,
    out: Path,
    *,
    started_at: str,
    duration_s: float,
    baseline: Results | None = None,
    strict: bool = False,
) -> tuple[Results, GateDecision, Comparison | None]:
    """Write a finished eval (``runner.EvalRun``) into ``out``: report.json, eval.json and every report
    (gated against ``baseline`` when given; ``strict``: a tool changed without a version bump blocks).
    eval.json records those settings, so a re-render makes the same decision."""
    from portagent.core.versions import PORTAGENT_VERSION as __version__
    from portagent.evals.deciding import decide, gate_settings

    plan = run.plan
    suite = plan.loaded.suite
    cassette = next((t.cassette for t in plan.tasks if t.cassette is not None), None)
    meta = EvalMeta(
        suite_id=suite.suite_id,
        dataset_version=suite.dataset_version,
        suite=str(Path(plan.loaded.path).resolve()),
        mode=plan.mode,
        providers=list(plan.providers),
        repeats=plan.repeats,
        workers=run.workers,
        agents=[
            AgentInfo(role=a.role, name=a.name, version=a.version, spec=str(a.path)) for a in plan.agents
        ],
        runs=len(run.result.runs),
        errors=list(run.errors),
        cassettes=str(Path(cassette).resolve().parents[4])
        if cassette is not None and plan.mode == "replay"
        else None,
        started_at=started_at,
        duration_s=round(duration_s, 3),
        portagent_version=__version__,
        workers_used=[
            WorkerInfo(provider=w.provider, runs=w.runs, peak_rss_mb=w.peak_rss_mb) for w in run.pool.workers
        ],
        scheduling=getattr(run, "scheduling", None),
        gate=gate_settings(out, baseline, strict=strict),
    )
    write_json(out / "report.json", run.result)
    write_json(out / "eval.json", meta)
    results = Results(out, run.result, meta)
    decision, comparison = decide(results, baseline, strict=strict)
    write_reports(results, decision, comparison)
    return results, decision, comparison


def finding_diffs(results: Results, decision: GateDecision) -> list[tuple[str, Any]]:
    """``trace diff`` of baseline vs candidate for every regression and drift of a decision with a
    baseline in the same folder: (heading, ``TraceDiff``). The representative runs are the baseline's
    first passing run and the candidate's first failing one; a missing trace is skipped."""
    from portagent.tracing.diff import diff_traces

    meta = results.meta
    base_v = meta.version_of("baseline") if meta else None
    cand_v = meta.version_of("candidate") if meta else None
    if not (base_v and cand_v):
        return []
    out: list[tuple[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for f in decision.findings:
        if f.category not in ("regression", "drift") or not f.case_id or not f.provider:
            continue
        if (f.case_id, f.provider) in seen:
            continue
        seen.add((f.case_id, f.provider))

        def runs(version: str, case_id: str = f.case_id, provider: str = f.provider) -> list[Any]:
            return [
                r
                for r in results.result.runs
                if (r.provenance.case_id, r.provenance.provider, r.provenance.agent_version)
                == (case_id, provider, version)
            ]

        b_runs, c_runs = runs(base_v), runs(cand_v)
        b = next((r for r in b_runs if r.passed), b_runs[0] if b_runs else None)
        c = next((r for r in c_runs if not r.passed), c_runs[0] if c_runs else None)
        if b is None or c is None:
            continue
        paths = [
            results.trace_path(
                r.provenance.agent, r.provenance.agent_version, f.case_id, f.provider, r.provenance.repeat
            )
            for r in (b, c)
        ]
        events = [load_events(p) for p in paths]
        if not all(events):
            continue
        heading = (
            f"{f.case_id} on {f.provider} ({f.category}): {base_v} r{b.provenance.repeat} → "
            f"{cand_v} r{c.provenance.repeat}"
        )
        out.append((heading, diff_traces(events[0], events[1])))
    return out
