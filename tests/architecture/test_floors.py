"""The floors hold: no package cycle (lazy imports counted), and docs/architecture.md states the
same rules that pyproject's import-linter contracts enforce (``lint-imports`` runs in .ci/run)."""

from __future__ import annotations

import re
import tomllib
from itertools import pairwise
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]


def _packages(graph: grimp.ImportGraph) -> list[str]:
    return sorted(m for m in graph.modules if (ROOT / m.replace(".", "/") / "__init__.py").is_file())


def _package_edges(graph: grimp.ImportGraph, packages: list[str]) -> dict[str, set[str]]:
    """Package → packages its modules import (a module belongs to its innermost package)."""

    def owner(module: str) -> str:
        return max((p for p in packages if module == p or module.startswith(p + ".")), key=len)

    edges: dict[str, set[str]] = {p: set() for p in packages}
    for module in graph.modules:
        if not module.startswith("portagent"):
            continue
        src = owner(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported.startswith("portagent.") and imported != "portagent":
                dst = owner(imported)
                if dst != src and not src.startswith(dst + ".") and not dst.startswith(src + "."):
                    edges[src].add(dst)
    return edges


def test_no_package_cycles() -> None:
    graph = grimp.build_graph("portagent")  # function-level (lazy) imports are part of the graph
    packages = _packages(graph)
    edges = _package_edges(graph, packages)
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(p: str) -> None:
        state[p] = 1
        stack.append(p)
        for q in sorted(edges[p]):
            if state.get(q) == 1:
                cycles.append([*stack[stack.index(q) :], q])
            elif q not in state:
                visit(q)
        stack.pop()
        state[p] = 2

    for p in packages:
        if p not in state:
            visit(p)
    assert not cycles, "package cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def _layers() -> list[list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    floors = next(c for c in config["contracts"] if c["id"] == "floors")
    return [
        [m.strip().removeprefix("portagent.") for m in re.split(r"[|:]", layer)] for layer in floors["layers"]
    ]


def test_architecture_doc_states_the_enforced_floors() -> None:
    """Each room of the import-linter layers appears in the doc's table, on the floor it is enforced at."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    table = doc.split("## Who may import whom", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, int] = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].isdigit():
            for room in re.findall(r"`([\w_]+)`", cells[1]):
                rows[room] = int(cells[0])
    layers = _layers()
    floor_of = {room: len(layers) - i for i, layer in enumerate(layers) for room in layer}
    assert rows == floor_of, f"docs/architecture.md floors {rows} differ from pyproject's {floor_of}"
    assert all(a > b for a, b in pairwise(sorted(set(floor_of.values()), reverse=True)))


def test_every_package_is_on_a_floor() -> None:
    """A new room must be placed on a floor (else import-linter would not look at it)."""
    rooms = {p.name for p in (ROOT / "portagent").iterdir() if (p / "__init__.py").is_file()}
    rooms |= {p.stem for p in (ROOT / "portagent").glob("*.py") if p.stem != "__init__"}
    placed = {room for layer in _layers() for room in layer}
    assert rooms == placed, (
        f"not on a floor: {sorted(rooms - placed)}; on a floor but missing: {sorted(placed - rooms)}"
    )


def test_the_a2a_room_loads_its_sdk_lazily() -> None:
    """``a2a`` (floor 7, beside ``mcp``) and the A2A tool source reach the ``a2a-sdk`` only inside the
    functions that need it: the CLI's start-up and an agent without ``a2a_agents`` never import it."""
    import subprocess
    import sys

    code = (
        "import sys, portagent.cli as c; c.build_parser();"
        "import portagent.a2a.server, portagent.a2a.card, portagent.tools.a2a.sources, portagent.runtime.runner;"
        "print(sorted(m for m in sys.modules if m == 'a2a' or m.startswith('a2a.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout
