"""BFCL-v0: the AST checker's rules, call formats, the expert on every task, conformance."""

import warnings

import pytest

import agentgym
from agentgym.envs.tooluse.bfcl import parse_calls
from agentgym.envs.tooluse.bfcl_checker import check, standardize_string
from agentgym.task import TaskSuite
from agentgym.testing import check_env

TRIANGLE = {
    "name": "calculate_triangle_area",
    "parameters": {
        "type": "dict",
        "properties": {
            "base": {"type": "integer"},
            "height": {"type": "float"},
            "unit": {"type": "string"},
        },
        "required": ["base", "height"],
    },
}
ANSWER = [{"calculate_triangle_area": {"base": [10], "height": [5.0], "unit": ["units", ""]}}]


@pytest.mark.parametrize(
    "params, ok, why",
    [
        ({"base": 10, "height": 5}, True, ""),  # int passes for float, optional unit omitted
        ({"base": 10, "height": 5.0, "unit": "Units"}, True, ""),  # strings standardised
        ({"base": 10}, False, "Missing required parameter"),
        ({"base": 10, "height": 5, "color": "red"}, False, "Unexpected parameter"),
        ({"base": "10", "height": 5}, False, "Incorrect type"),
        ({"base": 10, "height": 6}, False, "Invalid value"),
    ],
)
def test_checker_rules(params, ok, why):
    verdict = check([TRIANGLE], [{"calculate_triangle_area": params}], ANSWER)
    assert verdict.valid is ok and why in verdict.error


def test_parallel_calls_match_in_any_order_and_count_matters():
    answers = [{"f": {"x": [1]}}, {"f": {"x": [2]}}]
    spec = [
        {
            "name": "f",
            "parameters": {
                "type": "dict",
                "properties": {"x": {"type": "integer"}},
                "required": ["x"],
            },
        }
    ]
    assert check(spec, [{"f": {"x": 2}}, {"f": {"x": 1}}], answers).valid
    assert not check(spec, [{"f": {"x": 2}}], answers).valid
    assert standardize_string("New York, NY") == "newyorkny"


def test_call_formats():
    expected = [{"math.hypot": {"x": 4, "y": 5}}]
    assert parse_calls("[math.hypot(x=4, y=5)]") == expected
    assert parse_calls('[{"name": "math.hypot", "arguments": {"x": 4, "y": 5}}]') == expected
    assert (
        parse_calls('{"name": "math.hypot", "arguments": "{\\"x\\": 4, \\"y\\": 5}"}') == expected
    )
    assert isinstance(parse_calls("I would call hypot"), str)
    assert isinstance(parse_calls("[f(1)]"), str)


@pytest.mark.parametrize(
    "suite, n", [("bfcl/simple", 400), ("bfcl/multiple", 200), ("bfcl/parallel", 200)]
)
def test_expert_passes_every_task(suite, n):
    env = agentgym.make("BFCL-v0")
    tasks = TaskSuite.load(suite)
    assert len(tasks) == n
    for task in tasks:
        env.reset(seed=0, options={"task": task})
        assert env.step(env.expert_action())[1] == 1.0, task.id


def test_underscored_names_from_openai_schemas_are_accepted():
    env = agentgym.make("BFCL-v0")
    _, info = env.reset(seed=0, options={"task": "bfcl-simple_python_1"})
    assert info["tools"][0]["function"]["name"] == "math_factorial"
    assert env.step('{"name": "math_factorial", "arguments": {"number": 5}}')[1] == 1.0


def test_bfcl_conforms():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(agentgym.make("BFCL-v0"))
