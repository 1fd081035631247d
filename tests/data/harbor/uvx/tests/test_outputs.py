from pathlib import Path


def test_out():
    assert Path("/app/out.txt").read_text()
