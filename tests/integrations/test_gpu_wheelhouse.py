"""scripts/gpu_wheelhouse.py's decisions, offline: the image list, markers for the target Python,
image versions that fail a requirement, a wheel's requirements, the size of what travels."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import gpu_wheelhouse as wh  # noqa: E402


def test_image_list_reads_names_and_recorded_versions(tmp_path):
    listed = tmp_path / "image.txt"
    listed.write_text("# header\nTyping_Extensions\ntransformers==5.17.0  # from pip list\n\n")
    assert wh.read_image(listed) == {"typing-extensions": None, "transformers": "5.17.0"}
    image = wh.read_image(wh.IMAGE_LIST)
    assert image["torch"] == "2.11.0" and "pydantic" not in image and "gymnasium" not in image


def test_markers_are_evaluated_for_the_target_python_not_this_one():
    backport = Requirement('tomli>=1; python_version < "3.11"')
    windows = Requirement('colorama; sys_platform == "win32"')
    assert wh.applies(backport, wh.marker_environment("3.10"))
    assert not wh.applies(backport, wh.marker_environment("3.12"))
    assert not wh.applies(windows, wh.marker_environment("3.12"))
    assert not wh.applies(Requirement('pytest; extra == "dev"'), wh.marker_environment("3.12"))


def test_an_image_version_that_fails_a_requirement_stops_the_build():
    image = {"transformers": "5.17.0", "rich": None}
    wh.check_image_version(Requirement("transformers>=4.46"), image, "agentgym")
    wh.check_image_version(Requirement("rich>=99"), image, "agentgym")  # version unknown
    with pytest.raises(wh.BuildError, match="the image's transformers 5.17.0 fails peft's"):
        wh.check_image_version(Requirement("transformers>=5.18"), image, "peft")


def test_agentgym_requirements_are_the_base_and_train_dependencies():
    names = {req.name for req in wh.agentgym_requirements(ROOT / "pyproject.toml")}
    assert {"pydantic", "gymnasium", "sqlite-utils", "torch", "peft", "gguf"} <= names
    assert "vllm" not in names and "openai" not in names


def test_wheel_requirements_come_from_its_metadata(tmp_path):
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    metadata = "Metadata-Version: 2.1\nName: demo\nRequires-Dist: click>=8\nRequires-Dist: x; extra == 'y'\n"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("demo-1.0.dist-info/METADATA", metadata)
    assert [str(r) for r in wh.wheel_requirements(wheel)] == ["click>=8", 'x; extra == "y"']


def test_the_tree_that_travels_counts_tracked_files_and_not_ignored_ones():
    size = wh.tree_bytes(ROOT)
    pyproject = (ROOT / "pyproject.toml").stat().st_size
    assert 10 * 2**20 < size < wh.LIMIT_MIB * 2**20  # the tracked tree is about 41 MiB
    assert size > pyproject
