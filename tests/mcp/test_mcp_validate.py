"""``validate`` knows the tools an agent gets from its ``mcp_servers:`` sources.

Before: a deny rule naming an MCP-sourced tool was rejected by ``validate`` ("matches no tool of the
agent") while ``run`` enforced it. Now a rule may name a declared source's tools: exactly once the server
was listed (by a run, or by ``validate --list-mcp``), by the source's prefix before that.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from _mcp_helpers import server, write_agent
from _support import portagent_home, run_cli


def with_rules(spec: Path, *rules: dict) -> Path:
    policy = spec.with_name("policy.yaml")
    doc = yaml.safe_load(policy.read_text(encoding="utf-8"))
    doc["rules"] = [*doc.get("rules", []), *rules]
    policy.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return spec


def deny(rule_id: str, tool: str) -> dict:
    return {"id": rule_id, "decision": "deny", "tool": tool, "reason": "not here"}


def test_a_rule_naming_a_declared_sources_tool_is_accepted_before_any_listing(tmp_path):
    spec = with_rules(
        write_agent(tmp_path / "a", [server("weather")]), deny("no-forecast", "weather_get_forecast")
    )
    with portagent_home(tmp_path / "home"):
        code, out, err = run_cli("validate", str(spec))
        assert code == 0, err
        assert not (tmp_path / "home").exists()  # validate writes no state


def test_a_rule_outside_every_source_is_still_refused_and_names_the_sources(tmp_path):
    spec = with_rules(write_agent(tmp_path / "a", [server("weather")]), deny("typo", "wether_get_forecast"))
    with portagent_home(tmp_path / "home"):
        code, _, err = run_cli("validate", str(spec))
    assert code == 1
    assert (
        "rule 'typo' matches no tool of the agent" in err and "MCP weather: weather_* (not listed yet)" in err
    )


def test_list_mcp_makes_the_check_exact_and_a_later_validate_remembers_it(tmp_path):
    spec = with_rules(
        write_agent(tmp_path / "a", [server("weather")]),
        deny("no-forecast", "weather_get_forecast"),
        deny("gone", "weather_no_such_tool"),
    )
    with portagent_home(tmp_path / "home"):
        code, _, err = run_cli("validate", str(spec))
        assert code == 0, err  # not listed yet: the prefix is all validate knows
        code, _, err = run_cli("validate", "--list-mcp", str(spec))
        assert code == 1 and "rule 'gone' matches no tool of the agent" in err
        assert "weather_get_forecast" in err and "rule 'no-forecast'" not in err
        code, _, err = run_cli("validate", str(spec))  # the listing is remembered
        assert code == 1 and "rule 'gone'" in err and "rule 'no-forecast'" not in err


def test_an_allow_list_is_known_without_listing(tmp_path):
    spec = with_rules(
        write_agent(tmp_path / "a", [server("weather", allow=["get_forecast"])]),
        deny("not-allowed", "weather_book_table"),
    )
    with portagent_home(tmp_path / "home"):
        code, _, err = run_cli("validate", str(spec))
    assert (
        code == 1
        and "rule 'not-allowed' matches no tool" in err
        and "MCP weather: weather_get_forecast" in err
    )
