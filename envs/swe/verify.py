"""Fast bulk check of many small repositories: which test functions pass, in one sandbox process.

Running pytest once per task version costs ~0.5 s each; the generator and the tests need 328
runs for HumanEvalFix alone. This runner imports each repository's test module in one Python
process inside a sandbox and calls its ``test_*`` functions directly, each under a
``SIGALRM`` limit (three HumanEvalFix bugs loop forever); after a timeout the job's remaining
tests count as failed without running. It reports per-test outcomes with the node ids pytest
uses. It is a fast screen: task labels (FAIL_TO_PASS) come from the env's real pytest grading.
"""

from __future__ import annotations

import json
from typing import Any

from agentgym.sandbox import Sandbox

RUNNER = r"""
import importlib.util, json, os, signal, sys, tempfile, traceback
jobs = json.load(sys.stdin)
limit = int(sys.argv[1])
def expire(*_):
    raise TimeoutError("test time limit")
signal.signal(signal.SIGALRM, expire)
results = {}
base = sys.path[:]
for job in jobs:
    root = tempfile.mkdtemp(dir=os.getcwd())
    for path, text in job["files"].items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as fh:
            fh.write(text)
    for name in [m for m in sys.modules if m.split(".")[0] in job.get("purge", [])]:
        del sys.modules[name]
    sys.path[:] = [root] + base
    out = {}
    try:
        spec = importlib.util.spec_from_file_location("agentgym_t", os.path.join(root, job["test"]))
        mod = importlib.util.module_from_spec(spec)
        signal.alarm(limit)
        spec.loader.exec_module(mod)
        signal.alarm(0)
        tests = [n for n in dir(mod) if n.startswith("test_") and callable(getattr(mod, n))]
    except BaseException:
        signal.alarm(0)
        tests, out["<import>"] = [], False
    timed_out = False
    for name in tests:
        ok = False
        if not timed_out:  # after one timeout (a looping bug) the rest count as failed, unrun
            try:
                signal.alarm(limit)
                getattr(mod, name)()
                ok = True
            except TimeoutError:
                timed_out = True
            except BaseException:
                pass
            finally:
                signal.alarm(0)
        out[job["test"] + "::" + name] = ok
    results[job["id"]] = out
print(json.dumps(results))
"""


def run_tests_bulk(
    sandbox: Sandbox, jobs: list[dict[str, Any]], limit_s: int = 10, timeout: float = 900
) -> dict[str, dict[str, bool]]:
    """``{job id: {node id: passed}}`` for jobs ``{id, files, test, purge: [module names]}``."""
    result = sandbox.exec(
        ["python3", "-c", RUNNER, str(limit_s)], input=json.dumps(jobs), timeout=timeout
    )
    if result.returncode != 0:
        raise RuntimeError(f"bulk test runner failed: {result.stderr[-2000:]}")
    data: dict[str, dict[str, bool]] = json.loads(result.stdout)
    return data
