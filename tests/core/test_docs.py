"""The README's promises: CI runs its test command, doctests pass, the docs pages hold together.

The README's blocks run in test_docs_blocks.py."""

import doctest
import re
from pathlib import Path

import agentgym
import agentgym.envs.clarify
import agentgym.envs.household
import agentgym.envs.kbqa
import agentgym.envs.oversight
import agentgym.envs.webshop

ROOT = Path(__file__).resolve().parents[2]


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", (ROOT / "README.md").read_text(), re.DOTALL)


def test_ci_runs_the_readme_test_command():
    ci_command = (ROOT / ".ci/run").read_text().strip().splitlines()[-1]
    assert ci_command in [b.strip() for b in _blocks("bash")]


def test_docstring_examples():
    for module in (
        agentgym,
        agentgym.envs.clarify,
        agentgym.envs.household,
        agentgym.envs.kbqa,
        agentgym.envs.oversight,
    ):
        assert doctest.testmod(module).failed == 0


DOCS = ROOT / "docs"
NOTEBOOK = DOCS / "notebook"
OPEN_SECTION = "## Measurements added since"


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _sections(text: str) -> dict[str, str]:
    parts = re.split(r"^(## .*)$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_results_page_is_short_and_every_section_has_a_command():
    text = (DOCS / "results.md").read_text()
    assert len(text.splitlines()) < 300
    sections = _sections(text.split(f"\n{OPEN_SECTION}\n")[0])  # what follows is appended
    assert OPEN_SECTION in text.splitlines()
    command = re.compile(r"(python -m |python benchmarks/|agentgym |pytest |bash )")
    anchors = {_anchor(h) for h in re.findall(r"^#+ (.*)$", text, flags=re.M)}
    summary = "## Which methods beat their baseline"
    for heading, body in sections.items():
        if heading == summary:  # each row points to the section that gives its command
            for row in re.findall(r"^\| (?!method|---).*$", body, flags=re.M):
                links = re.findall(r"\]\(#([^)]+)\)", row)
                assert links and set(links) <= anchors - {_anchor(summary[3:])}, row
        elif heading != "## Machines":
            assert command.search(body), f"{heading} gives no command"


def test_results_page_names_only_checkpoints_in_the_tree():
    text = (DOCS / "results.md").read_text()
    assert "experiments/runs" not in text
    for name in set(re.findall(r"experiments/checkpoints/([\w.-]+)", text)):
        assert (ROOT / "experiments" / "checkpoints" / name).is_dir(), name


def test_doc_links_resolve_and_the_notebook_index_lists_every_entry():
    pages = [ROOT / "README.md", *DOCS.glob("*.md"), *NOTEBOOK.glob("*.md")]
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" not in target:
                assert (page.parent / target).is_file(), f"{page.name}: {target}"
    for page in pages:  # and every #anchor names a heading of its page
        for target, anchor in re.findall(r"\]\(([^)#\s]*)#([^)\s]+)\)", page.read_text()):
            if "://" not in target:
                dest = (page.parent / target) if target else page
                headings = re.findall(r"^#+ (.*)$", dest.read_text(), flags=re.M)
                assert anchor in {_anchor(h) for h in headings}, f"{page.name}: {target}#{anchor}"
    index = set(
        re.findall(r"\]\((\d{4}-\d\d-\d\d-[\w-]+\.md)\)", (NOTEBOOK / "README.md").read_text())
    )
    assert index == {p.name for p in NOTEBOOK.glob("2*.md")}


def test_docs_speak_of_the_project_without_machine_paths():
    pages = [ROOT / "README.md", *DOCS.glob("*.md"), *NOTEBOOK.glob("*.md")]
    for page in pages:
        text = page.read_text()
        assert not re.search(r"issue \d|this\s+session", text, flags=re.I), page.name
        if page.name != "README.md":
            assert not re.search(r"(?<![\w.])/(work|tmp|root|home)/", text), page.name
