"""Swe: fix a bug in a Python repository inside a sandbox; hidden tests grade the submission.

The agent gets a repository (a snapshot of files, a fresh git repo at ``/work/repo``) and a
problem statement. It works one action per turn, mini-swe-agent style (a bash command; ``cd``
does not persist) or with structured tools, and submits. Grading follows SWE-bench: the hidden
test files are written over the agent's repository, then the FAIL_TO_PASS and PASS_TO_PASS tests
run with pytest.

=====================  =========================================================================
Id                     ``agentgym/Swe-v0`` (``agentgym.make("Swe-v0", sandbox="docker")``)
Class                  :class:`agentgym.envs.swe.env.SweEnv`
Actions                exactly one ```` ```bash ... ``` ```` block; or a JSON tool call
                       ``{"name": "view"|"edit"|"run_tests"|"bash"|"submit", "arguments": ...}``
                       (schemas in ``info["tools"]``); or ``submit``. ``edit`` replaces the one
                       occurrence of ``old`` by ``new`` (``old=""`` writes the file)
Observations           text: first the problem statement and the file list; then
                       ``<returncode>N</returncode><output>...</output>`` (10,000 characters at
                       most: head and tail), the file view, or what was wrong with the action.
                       pytest run times are removed so observations are deterministic
Reward                 after ``submit``: 1.0 if every FAIL_TO_PASS and PASS_TO_PASS test passes,
                       else 0.0; ``info["score"]`` = share of those tests passing
Episode end            ``submit`` terminates; ``max_turns`` actions (valid or not) truncate with
                       success False, score 0
Turn limit             per task: 20 (HumanEvalFix), 40 (mini-repo)
Suites                 ``swe/humanevalfix`` 164 tasks (tags ``humanevalfix`` + bug type);
                       ``swe/minirepo`` 120 tasks (tags ``minirepo``, ``toolz.<module>``,
                       mutation operator)
Expert                 ``expert_action()``: the reference fix as ``edit`` calls (or one
                       ``git apply`` of a diff), then ``submit``; solves every task
Sandbox                ``sandbox="auto"`` (docker when the engine and a current image are there,
                       else bubblewrap), ``"docker"``, ``"local"``; one warm pool per process
Data                   HumanEvalFix: bigcode-project/octopack HumanEvalPack (MIT); mini-repo:
                       toolz 1.2.0 (BSD-3), bundled in ``envs/swe/data/repos/toolz``
Regenerate             ``python -m agentgym.envs.swe.generate --data ../shared/data``
Import your own        :func:`agentgym.envs.swe.importers.from_swebench` (SWE-bench instances +
                       a local checkout), :func:`agentgym.envs.swe.importers.from_directory`
                       (one folder per program: buggy file, fixed file, tests)
=====================  =========================================================================

HumanEvalFix tasks: ``solution.py`` (prompt + buggy body), visible ``test_example.py``, hidden
``tests/test_hidden.py`` with one test per assertion of the original ``check`` (10 s alarm each:
three bugs loop forever). Mini-repo tasks (SWE-smith style): one function of toolz mutated (a
comparison, operator, constant, argument order, return value or dropped statement), kept only
when tests of its module fail; the statement names the failing tests and the first failure.

Config (``Task.config``, :class:`SweConfig`): ``repo`` (bundled snapshot) or ``git`` (host
checkout + commit) or ``files``; ``edits`` (how the bug is introduced); ``test_command``;
``max_turns``; ``command_timeout``; ``grade_timeout``. Gold (:class:`SweGold`): ``fail_to_pass``,
``pass_to_pass``, ``hidden_tests`` (files), ``fix`` (edits) or ``fix_patch`` (a diff).
"""

from agentgym.envs.swe.config import Edit, GitSource, SweConfig, SweGold
from agentgym.envs.swe.env import SweEnv, SweState

__all__ = ["Edit", "GitSource", "SweConfig", "SweEnv", "SweGold", "SweState"]
