"""experiments/: a shared kit, no import cycle, an experiment importing another only where
experiments/__init__.py says so; regenerated sections keep hand-written text."""

import ast
from pathlib import Path

from experiments import BUILDS_ON
from experiments.results import replace_section, section_text

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


def _imports(path: Path) -> set[str]:
    """The experiments modules ``path`` imports, at module level or inside functions."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == "experiments":
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("experiments."):
            out.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            out |= {a.name.split(".")[1] for a in node.names if a.name.startswith("experiments.")}
    return out


def test_experiments_have_no_import_cycle():
    graph = {p.stem: _imports(p) for p in EXPERIMENTS.glob("*.py") if p.stem != "__init__"}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(
            n == goal or (n not in seen and reaches(n, goal, seen | {n}))
            for n in graph.get(start, ())
        )

    cyclic = sorted(m for m in graph if reaches(m, m, set()))
    assert not cyclic, f"experiments in an import cycle: {cyclic}"
    users = sorted(m for m, deps in graph.items() if "train_demo" in deps)
    assert not users, f"{users} import train_demo: shared code belongs in experiments/kit.py"


def test_an_experiment_imports_another_only_as_experiments_init_says():
    """Modules with a command are experiments; the others are shared code any of them may use."""
    modules = {p.stem: p for p in EXPERIMENTS.glob("*.py") if p.stem != "__init__"}
    runnable = {m for m, p in modules.items() if "__main__" in p.read_text(encoding="utf-8")}
    found = {m: _imports(modules[m]) & runnable for m in sorted(runnable)}
    assert {m: deps for m, deps in found.items() if deps} == BUILDS_ON


def test_a_regenerated_section_keeps_its_hand_written_block(tmp_path):
    path = tmp_path / "results.md"
    reading = "<!-- hand-written -->\nReading: the table says little.\n<!-- /hand-written -->"
    path.write_text(f"## A\n\nold table\n\n{reading}\n\n## B\n\nkept\n", encoding="utf-8")
    replace_section(path, "## A", section_text("## A", "new table"))
    assert path.read_text() == f"## A\n\nnew table\n\n{reading}\n\n## B\n\nkept\n"
    replace_section(path, "## A", section_text("## A", "newer table", reading))  # not twice
    assert path.read_text().count("Reading:") == 1
    replace_section(path, "## B", section_text("## B", "replaced"))
    assert path.read_text().endswith("## B\n\nreplaced\n")
