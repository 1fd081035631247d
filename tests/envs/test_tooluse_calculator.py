"""The ``calculate`` tool: the benchmarks' results for ordinary expressions, bounded for hostile ones."""

import pytest

from agentgym.envs.tooluse.retail import calculate

ORDINARY = [
    "2 + 2",
    "(10 - 3) * 2.5",
    "100 / 3",
    "2 ** 10",
    "-5 + 3",
    "7 // 2",
    "3.14159 * 2",
    "1234.567 - 0.005",
    " 2*(3+4) ",
    "((1))",
    "2 ** -1",
    "1+" * 499 + "1",
]


def benchmark_calculate(expression: str) -> str:
    """tau-bench's and tau2's implementation, verbatim."""
    if not all(char in "0123456789+-*/(). " for char in expression):
        raise ValueError("Invalid characters in expression")
    return str(round(float(eval(expression, {"__builtins__": None}, {})), 2))


@pytest.mark.parametrize("expression", ORDINARY)
def test_same_result_strings_as_the_benchmarks(expression):
    assert calculate(expression) == benchmark_calculate(expression)


@pytest.mark.parametrize(
    "expression, message",
    [
        ("9**9**9", "Result too large"),
        ("9.0**9**9", "Result too large"),
        ("10**5000", "Result too large"),
        ("2**4000*2**4000", "Result too large"),
        ("(" * 100_000 + "1" + ")" * 100_000, "too long"),
        ("__import__('os')", "Invalid characters"),
    ],
)
def test_hostile_expressions_fail_fast_with_a_clear_error(expression, message):
    with pytest.raises(ValueError, match=message):
        calculate(expression)


def test_syntax_errors_stay_syntax_errors():
    with pytest.raises(SyntaxError):
        benchmark_calculate("2 3")
    with pytest.raises(SyntaxError):
        calculate("2 3")


def test_division_by_zero_raises_as_in_the_benchmarks():
    with pytest.raises(ZeroDivisionError):
        calculate("1/0")


def test_the_tool_in_an_env_answers_instead_of_hanging():
    import json

    import agentgym

    env = agentgym.make("TauRetail-v0")
    env.reset(seed=0)
    obs, _, _, _, info = env.step(
        json.dumps({"name": "calculate", "arguments": {"expression": "9**9**9"}})
    )
    assert "Result too large" in obs
