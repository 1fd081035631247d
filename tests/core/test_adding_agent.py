"""docs/evaluation.md's "An agent: 1 module", run as written."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_agent_example_runs_as_written():
    text = (ROOT / "docs" / "evaluation.md").read_text(encoding="utf-8")
    section = re.search(r"^### An agent: 1 module\n(.*?)^###", text, re.M | re.S)
    assert section, "docs/evaluation.md lost its 'An agent: 1 module' section"
    blocks = dict(re.findall(r"```python\n# ([^\n]+)\n(.*?)```", section.group(1), re.S))
    assert set(blocks) == {"my_agents.py", "try it"}
    namespace: dict = {}
    exec(blocks["my_agents.py"], namespace)
    exec(blocks["try it"], namespace)
    rows = namespace["result"].episode_rows()
    assert len(rows) == 200 and all(r["status"] == "completed" for r in rows)
    assert 0 < sum(r["success"] for r in rows) < 100  # a floor: it answers the last candidate
