import sys

sys.path.insert(0, "/app")

from stats import median  # noqa: E402


def test_median_even():
    assert median([4, 1, 3, 2]) == 2.5


def test_median_odd():
    assert median([5, 1, 3]) == 3
