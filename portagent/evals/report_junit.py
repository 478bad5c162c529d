"""JUnit XML of a results folder, for CI test UIs: it fails exactly when the gate blocks.

One ``<testsuite>`` per agent version the gate judged (in a folder holding a baseline and a candidate,
the candidate only: the baseline's runs are the reference, not judged); one ``<testcase>`` per case ×
provider (classname ``<suite>.<agent version>.<provider>``, name = case id). A testcase fails when the
gate decision has a blocking finding on its case and provider (with the default ``min_pass_rate`` of
1.0: when any of its runs failed); the failure ``type`` is the finding's category (``regression``,
``drift``, ``provider_error``, ``not_run``, ``run_error``, ``flaky``, ``tool_unversioned_change``), the message names it and the
factors, the body lists the findings and every failed run's notes. Blocking findings about no single
testcase (a quality or trajectory drop, a p95 rise, a flake rate, a context gate, a case only one side
ran, a tool changed without a version bump under ``--strict``) are testcases of a ``<suite> gate``
testsuite, one per finding, named by its message, with the category as failure type; so junit.xml has
failures if and only if ``ci_gate.json`` says ``block``. Properties carry the provenance (live /
emulator) and pass rate. Each case testcase carries ``file`` and ``line``: the file that holds the case
(the suite or one of its ``case_files``, relative to ``$GITHUB_WORKSPACE`` or the current folder when
inside it) and the line of its ``case_id`` mapping, so CI test UIs point at the case.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from typing import TYPE_CHECKING

from portagent.evals.findings import CATEGORY_LABELS
from portagent.evals.github import case_places

if TYPE_CHECKING:
    from portagent.evals.gate import GateDecision
    from portagent.evals.report import Results
    from portagent.evals.scoring import RunScore


def render_junit(results: Results, decision: GateDecision) -> str:
    from portagent.evals.deciding import judged_versions

    r = results.result
    versions = judged_versions(results)
    groups: dict[str, dict[tuple[str, str], list[RunScore]]] = defaultdict(lambda: defaultdict(list))
    for run in r.runs:
        p = run.provenance
        if versions is None or p.agent_version in versions:
            groups[p.agent_version][(p.case_id, p.provider)].append(run)
    blocking = [f for f in decision.findings if f.blocking]
    attached: set[int] = set()
    places = case_places(results.meta.suite if results.meta is not None else None)
    root = ET.Element("testsuites", name=f"portagent eval {r.suite_id}")
    total_tests = total_failures = 0
    for version in sorted(groups):
        cases = groups[version]
        agent = next(iter(cases.values()))[0].provenance.agent
        suite = ET.SubElement(root, "testsuite", name=f"{r.suite_id} {agent}@{version}")
        failures = 0
        time_total = 0.0
        for (case_id, provider), runs in sorted(cases.items()):
            seconds = sum((x.latency_ms or 0) for x in runs) / 1000
            time_total += seconds
            tc = ET.SubElement(
                suite,
                "testcase",
                classname=f"{r.suite_id}.{version}.{provider}",
                name=case_id,
                time=f"{seconds:.3f}",
            )
            place = places.get(case_id)
            if place is not None:
                tc.set("file", place.file)
                if place.line:
                    tc.set("line", str(place.line))
            props = ET.SubElement(tc, "properties")
            sources = sorted({x.provenance.label() for x in runs})
            passed = sum(x.passed for x in runs)
            for name, value in (
                ("provenance", ",".join(sources)),
                ("provider", provider),
                ("agent_version", version),
                ("runs", str(len(runs))),
                ("passed", str(passed)),
            ):
                ET.SubElement(props, "property", name=name, value=value)
            mine = [
                i
                for i, f in enumerate(blocking)
                if (f.case_id, f.provider) == (case_id, provider) and f.agent_version in (None, version)
            ]
            if not mine:  # failed runs the gate tolerated (--min-pass-rate) do not fail the testcase
                continue
            attached.update(mine)
            failures += 1
            first = blocking[mine[0]]
            bad = [x for x in runs if not x.passed]
            factors = sorted({f for x in bad for f in x.failed_factors})
            message = (
                f"{CATEGORY_LABELS[first.category]}: {passed}/{len(runs)} runs passed"
                + (f"; failed {', '.join(factors)}" if factors else "")
                if bad
                else first.message
            )
            failure = ET.SubElement(tc, "failure", type=first.category, message=message)
            failure.text = "\n".join(
                [
                    *(blocking[i].message for i in mine),
                    *(f"r{x.provenance.repeat} ({x.provenance.label()}): " + "; ".join(x.notes) for x in bad),
                ]
            )
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(failures))
        suite.set("errors", "0")
        suite.set("time", f"{time_total:.3f}")
        total_tests += len(cases)
        total_failures += failures
    rest: list[tuple[str, str]] = [
        (f.category, f.message) for i, f in enumerate(blocking) if i not in attached
    ]
    found = {f.message for f in blocking}
    rest += [("gate", reason) for reason in decision.reasons if reason not in found]
    if rest:
        total_tests += len(rest)
        total_failures += len(rest)
        _gate_suite(root, r.suite_id, rest)
    root.set("tests", str(total_tests))
    root.set("failures", str(total_failures))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _gate_suite(root: ET.Element, suite_id: str, rest: list[tuple[str, str]]) -> None:
    """The blocking findings (and reasons without one) that no case testcase carries, a failing
    testcase each, so junit blocks whenever the gate does."""
    suite = ET.SubElement(
        root,
        "testsuite",
        name=f"{suite_id} gate",
        tests=str(len(rest)),
        failures=str(len(rest)),
        errors="0",
        time="0.000",
    )
    for category, message in rest:
        tc = ET.SubElement(suite, "testcase", classname=f"{suite_id}.gate", name=message, time="0.000")
        failure = ET.SubElement(tc, "failure", type=category, message=message)
        failure.text = message
