"""JUnit XML of a results folder, for CI test UIs.

One ``<testsuite>`` per agent version; one ``<testcase>`` per case × provider (classname
``<suite>.<agent version>.<provider>``, name = case id). A testcase fails when any of its runs failed
(the gate's default ``min_pass_rate`` of 1.0); the failure message names the factors and the body
lists every failed run's notes; its ``type`` is the category (``regression``, ``drift``,
``provider_error``, ``not_run``, ``flaky``). Properties carry the provenance (live / emulator) and pass rate.
Each testcase carries ``file`` and ``line``: the file that holds the case (the suite or one of its
``case_files``, relative to ``$GITHUB_WORKSPACE`` or the current folder when inside it) and the line of
its ``case_id`` mapping, so CI test UIs point at the case.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from typing import TYPE_CHECKING

from portagent.evals.compare import CATEGORY_LABELS, failing_category
from portagent.evals.github import case_places

if TYPE_CHECKING:
    from portagent.evals.report import Results
    from portagent.evals.scoring import RunScore


def render_junit(results: Results) -> str:
    r = results.result
    groups: dict[str, dict[tuple[str, str], list[RunScore]]] = defaultdict(lambda: defaultdict(list))
    for run in r.runs:
        p = run.provenance
        groups[p.agent_version][(p.case_id, p.provider)].append(run)
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
            bad = [x for x in runs if not x.passed]
            if bad:
                failures += 1
                factors = sorted({f for x in bad for f in x.failed_factors})
                category = failing_category(runs)
                failure = ET.SubElement(
                    tc,
                    "failure",
                    type=category,
                    message=f"{CATEGORY_LABELS[category]}: {passed}/{len(runs)} runs passed"
                    + (f"; failed {', '.join(factors)}" if factors else ""),
                )
                failure.text = "\n".join(
                    f"r{x.provenance.repeat} ({x.provenance.label()}): " + "; ".join(x.notes) for x in bad
                )
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(failures))
        suite.set("errors", "0")
        suite.set("time", f"{time_total:.3f}")
        total_tests += len(cases)
        total_failures += failures
    root.set("tests", str(total_tests))
    root.set("failures", str(total_failures))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
