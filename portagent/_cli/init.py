"""``portagent init DIR [--name NAME]``: a minimal runnable project, to start from.

Writes an agent (``agent.yaml``), its tool (``tools.yaml``) with a Python handler
(``<name>_handlers.py``, found next to the spec), a policy (``policy.yaml``), an emulator script
(``emulator.yaml``), a one-case suite (``suite.yaml``) and a ``README.md`` of next steps. The project
validates, runs on the emulator on every provider, records and evals as written.

``DIR`` must be absent or empty: anything else is refused (exit 2) and nothing is written. The files
are written into a temporary folder beside ``DIR``, validated like ``portagent validate``, then renamed
into place, so an interrupted ``init`` leaves nothing half-written.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from portagent.core.files import staging_dir

AGENT = """\
# A first portagent agent, written by `portagent init` (README.md: what to do next).
kind: agent
schema_version: 1
name: {name}
version: 1.0.0
description: Answers questions about orders.
instructions: |
  You answer questions about orders. Read the order with get_order before you say anything about it,
  then answer in one sentence.
models:
  openai: gpt-4.1-mini
  claude: claude-sonnet-4-6
  adk: gemini-2.5-flash
tool_files: [tools.yaml]
tools: [get_order]
policy: policy.yaml
budget:
  max_turns: 6
  max_tool_calls: 4
  max_cost_usd: 0.10
  timeout_s: 60
"""

TOOLS = """\
# The agent's tools: a contract (schema, effect, budgets) and the Python function that runs it.
kind: tools
schema_version: 1
tools:
  - name: get_order
    version: 1.0.0
    owner: {name}
    description: Read one order by its id and return its status and carrier.
    when_to_use: ["the user asks about an order they name"]
    effect: read
    input_schema:
      type: object
      properties:
        order_id: {{type: string, pattern: "^ORD-[0-9]+$"}}
      required: [order_id]
      additionalProperties: false
    output_schema:
      type: object
      properties:
        order_id: {{type: string}}
        status: {{type: string}}
        carrier: {{type: string}}
      required: [order_id, status]
    budgets: {{timeout_ms: 2000, max_retries: 1}}
    handler: {module}:get_order
"""

HANDLERS = '''\
"""The handlers of {name}'s tools: plain functions, called with the tool's arguments (tools.yaml).

Return the output (checked against output_schema), or {{"ok": False, "error": <code>, "message": ...}}
for a failure the model should see. A handler may also declare a parameter annotated ToolContext
(``from portagent.tools.tool_context import ToolContext``) to get the run id, the call id and a
per-session ``state`` mapping on every provider.
"""

from __future__ import annotations

from typing import Any

ORDERS: dict[str, dict[str, str]] = {{
    "ORD-7": {{"status": "shipped", "carrier": "DHL"}},
    "ORD-8": {{"status": "processing", "carrier": "none yet"}},
}}


def get_order(order_id: str) -> dict[str, Any]:
    order = ORDERS.get(order_id)
    if order is None:
        return {{"ok": False, "error": "not_found", "message": f"no order {{order_id}}"}}
    return {{"order_id": order_id, **order}}
'''

POLICY = """\
# What the agent may do, decided by portagent's gateway on every provider (docs/policies.md).
# Without a rule, effect classes decide: read/compute allow, writes need approval, privileged deny.
kind: policy
schema_version: 1
name: {name}-policy
version: "1"
rules:
  - id: orders-are-readable
    decision: allow
    reason: reading an order changes nothing
    tool: get_order
"""

EMULATOR = """\
# The scripted "model" for tests without an API key: `portagent run … --emulator emulator.yaml`.
# The same script drives openai-agents, the Claude Agent SDK and google-adk.
kind: emulator-script
schema_version: 1
name: {name}
defaults:
  usage: {{input_tokens: 200, output_tokens: 20}}
conversations:
  - name: order_status
    match: {{first_user: "Where is my order ORD-7?"}}
    turns:
      - tool_calls: [{{name: get_order, arguments: {{order_id: ORD-7}}}}]
      - text: "Order ORD-7 is {{{{last_tool_result.status}}}} with {{{{last_tool_result.carrier}}}}."
"""

SUITE = """\
# The agent's tests (docs/evals.md): `portagent record` then `portagent eval --replay`.
kind: suite
schema_version: 1
suite_id: {suite_id}
dataset_version: "1"
owner: {name}
agent: agent.yaml
providers: [openai, claude, adk]
repeats: 1
emulator_script: emulator.yaml
cases:
  - case_id: order-status
    input: "Where is my order ORD-7?"
    why_it_exists: An order's status is read with get_order, never guessed.
    expect:
      final_must_contain: ["shipped"]
      required_tools: [get_order]
      args: {{mode: subset, expected: {{get_order: {{order_id: ORD-7}}}}}}
      approval: false
"""

README = """\
# {name}

A first portagent agent, written by `portagent init`: one agent (`agent.yaml`), one tool (`tools.yaml`,
run by `get_order` in `{module}.py`), a policy (`policy.yaml`), an emulator script (`emulator.yaml`) and a
one-case suite (`suite.yaml`). Every command below runs from this folder, with no API key.

## Next steps

```bash
cd {folder}
portagent validate agent.yaml                              # the specs, and whether each provider can run them
portagent run agent.yaml --provider openai --emulator emulator.yaml --input "Where is my order ORD-7?"
portagent run agent.yaml --provider adk --emulator emulator.yaml --input "Where is my order ORD-7?"
portagent run agent.yaml --provider claude --emulator emulator.yaml --input "Where is my order ORD-7?"
portagent run agent.yaml --provider anthropic --emulator emulator.yaml --input "Where is my order ORD-7?"
portagent run agent.yaml --provider langgraph --emulator emulator.yaml --input "Where is my order ORD-7?"
portagent record suite.yaml --providers openai,claude,adk --emulator --out cassettes   # cassettes/
portagent eval suite.yaml --replay --cassettes cassettes --out results                 # offline, scored
portagent gate results                                     # exit 0 pass, 1 block: put it in CI
```

Then make it yours:

1. Change `instructions` in `agent.yaml` and the function in `{module}.py`.
2. Add a tool in `tools.yaml` (its `effect` decides what the policy does by default) and list it under
   `tools:` in `agent.yaml`.
3. Add a case to `suite.yaml` and the conversation that answers it to `emulator.yaml`; re-record with
   `portagent record suite.yaml --providers openai,claude,adk --emulator --out cassettes --drifted`.
4. Run on a real provider with `--live` instead of `--emulator` (it needs that provider's API key).

`portagent schema` writes JSON Schemas for editors; docs/evals.md, docs/policies.md and docs/emulator.md
describe every field.
"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "init",
        help="write a minimal runnable project (agent, tool, policy, emulator script, suite) into DIR",
        description="Write a minimal runnable project into DIR: an agent, a tool with its Python handler, "
        "a policy, an emulator script, a one-case suite and a README of next steps. It validates, runs "
        "on the emulator on every provider, records and evals as written. DIR must be absent or empty "
        "(exit 2 otherwise; nothing is written).",
    )
    p.add_argument("dir", metavar="DIR", help="the project folder to create (absent or empty)")
    p.add_argument("--name", help="the agent's name (default: from DIR; letters, digits, _)")


def agent_name(folder: Path, name: str | None) -> str:
    from portagent.contracts.errors import UsageError

    if name is not None:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,63}", name):
            raise UsageError(
                f"--name {name!r}: an agent name is an identifier (letters, digits, _; a letter first)"
            )
        return name
    base = re.sub(r"[^A-Za-z0-9_]+", "_", folder.resolve().name).strip("_").lower()
    if not base or not base[0].isalpha():
        base = "agent_" + base if base else "my_agent"
    return base[:64]


def files(name: str, folder: str) -> dict[str, str]:
    module = f"{name}_handlers"
    values = {"name": name, "module": module, "suite_id": name.replace("_", "-"), "folder": folder}
    return {
        "agent.yaml": AGENT.format(**values),
        "tools.yaml": TOOLS.format(**values),
        f"{module}.py": HANDLERS.format(**values),
        "policy.yaml": POLICY.format(**values),
        "emulator.yaml": EMULATOR.format(**values),
        "suite.yaml": SUITE.format(**values),
        "README.md": README.format(**values),
    }


def run(args: argparse.Namespace) -> int:
    import os
    import shlex
    import shutil

    from portagent.contracts.bundle import load_agent
    from portagent.contracts.errors import SpecError, UsageError
    from portagent.runtime.validate import bundle_problems

    target = Path(args.dir)
    if target.exists() and not target.is_dir():
        raise UsageError(f"{target}: exists and is not a folder (nothing was written)")
    if target.is_dir() and any(target.iterdir()):
        raise UsageError(
            f"{target}: not empty; init writes only into a new or empty folder (nothing was written)"
        )
    name = agent_name(target, args.name)
    parent = target.resolve().parent
    if not parent.is_dir():
        from portagent.core.files import not_a_folder

        blocker = not_a_folder(parent)
        what = (
            f"{blocker} is a file, not a folder" if blocker else f"its parent folder {parent} does not exist"
        )
        raise UsageError(f"{target}: {what} (nothing was written)")
    texts = files(name, shlex.quote(str(target)))
    try:
        tmp = staging_dir(parent, f".{target.name}.tmp-")
    except OSError as e:
        raise UsageError(
            f"{target}: cannot write in {parent}: {e.strerror or e} (nothing was written)"
        ) from None
    try:
        for fname, text in texts.items():
            (tmp / fname).write_text(text, encoding="utf-8")
        problems, _ = bundle_problems(load_agent(tmp / "agent.yaml"), None)
        if problems:  # a template that does not validate is portagent's bug: never leave it on disk
            raise SpecError(problems)
        if target.is_dir():
            target.rmdir()  # empty (checked above); replaced by the finished folder
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    print(f"wrote {target}/: {', '.join(texts)}")
    print(f"next: cd {shlex.quote(str(target))} && portagent validate agent.yaml  (README.md has the rest)")
    return 0
