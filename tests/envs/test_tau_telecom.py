"""TauTelecom-v0: tau2's telecom domain, the phone the user acts on, the suites, the expert."""

import contextlib
import hashlib
import json
from pathlib import Path

import pytest

import agentgym
from agentgym.envs.tooluse import phone_state, telecom
from agentgym.envs.tooluse.data import read_json, read_text
from agentgym.envs.tooluse.generate import REPO_ROOT
from agentgym.envs.tooluse.world import World, get_domain
from agentgym.task import TaskSuite

SETUP = {
    "initialization_actions": [
        {
            "env_type": "user",
            "func_name": "set_user_info",
            "arguments": {"name": "John Smith", "phone_number": "555-123-2002"},
        }
    ]
}
ME = {"customer_id": "C1001", "line_id": "L1002"}


def world(initial_state=SETUP):
    w = World(get_domain("telecom"))
    w.apply_initial_state(initial_state)
    return w


def user(w, name, **arguments):
    return w.call(name, arguments, "user").output


def test_tools_are_tau2s_thirteen_agent_and_thirty_phone_tools():
    domain = get_domain("telecom")
    assert len(domain.toolkit.schemas()) == 13 and len(domain.user_toolkit.schemas()) == 30
    assert {"refuel_data", "enable_roaming", "send_payment_request"} <= set(
        domain.toolkit.tool_functions()
    )
    assert {"toggle_airplane_mode", "reboot_device", "run_speed_test", "set_apn_settings"} <= set(
        domain.user_toolkit.tool_functions()
    )


def test_phone_texts_and_network_follow_tau2():
    w = world()
    assert user(w, "check_status_bar") == "Status Bar: 📶³ Good | 5G | 📱 Data Enabled | 🔋 80%"
    assert user(w, "run_speed_test") == (
        "Speed Test Result: 220.00 Mbps (Excellent). Connection is very fast."
    )
    out = user(w, "toggle_airplane_mode")
    assert out == "Airplane Mode is now ON.\nStatus Bar: ✈️ Airplane Mode | 🔋 80%"
    assert user(w, "run_speed_test") == "Speed test failed: No Connection."
    user(w, "toggle_airplane_mode")  # off again: a network search finds 5G, excellent signal
    assert user(w, "run_speed_test").startswith("Speed Test Result: 275.00 Mbps (Excellent)")
    user(w, "set_network_mode_preference", mode="2g_only")
    assert user(w, "run_speed_test").startswith("Speed Test Result: 0.05 Mbps (Very Poor)")
    bad = user(w, "set_network_mode_preference", mode="6g")
    assert bad.startswith("Failed to set network mode: '6g' is not a valid option.")


def test_apn_reset_applies_at_reboot_and_permissions_are_checked():
    w = world()
    w.toolkit("user").run_function("break_apn_mms_setting", {})
    assert user(w, "can_send_mms") == "Your messaging app cannot send MMS messages."
    user(w, "reset_apn_settings")
    assert user(w, "can_send_mms") == "Your messaging app cannot send MMS messages."
    assert user(w, "reboot_device").startswith("Resetting APN settings...\nRestarting network")
    assert user(w, "can_send_mms") == "Your messaging app can send MMS messages."
    assert user(w, "grant_app_permission", app_name="messaging", permission="camera").startswith(
        "Error. Permission 'camera' not tracked for app 'messaging', available permissions: "
        "['sms', 'storage', 'phone', 'network']"
    )


def test_the_phone_follows_the_carriers_records():
    """tau2's sync_tools: roaming allowed, data allowance, line status, payment requests."""
    w = world()
    w.toolkit("user").run_function("set_user_location", {"abroad": True})
    assert w.call("disable_roaming", ME).output == "Roaming disabled successfully"
    assert not w.user_db.peek().surroundings.roaming_allowed
    user(w, "toggle_roaming")
    assert user(w, "run_speed_test") == "Speed test failed: No Connection."  # carrier: no roaming
    assert w.call("enable_roaming", ME).output == "Roaming enabled successfully"
    assert w.user_db.peek().surroundings.roaming_allowed
    assert user(w, "run_speed_test").startswith("Speed Test Result:")
    w.toolkit("assistant").run_function("set_data_usage", {**ME, "data_used_gb": 15.0})
    w.sync()
    assert w.user_db.peek().surroundings.mobile_data_usage_exceeded
    refuel = json.loads(w.call("refuel_data", {**ME, "gb_amount": 2.0}).output)
    assert refuel["message"] == "Successfully added 2.0 GB of data for line L1002 for $4.00"
    assert not w.user_db.peek().surroundings.mobile_data_usage_exceeded
    # the shared base stays untouched
    assert phone_state.base_user_db().surroundings.phone_number is None


def test_a_payment_request_reaches_the_phone_and_the_payment_the_bill():
    task = next(
        t
        for t in TaskSuite.load("tooluse/telecom-full")
        if any(a["name"] == "make_payment" for a in t.gold.get("actions") or [])
    )
    w = world(task.config["initial_state"])
    request = next(a for a in task.gold["actions"] if a["name"] == "send_payment_request")
    bill_id = request["arguments"]["bill_id"]
    overdue = next(b for b in w.db.peek().bills if b.bill_id == bill_id)
    assert overdue.status == telecom.BillStatus.OVERDUE
    assert user(w, "check_payment_request") == "No payment request has been made."
    assert w.call("send_payment_request", request["arguments"]).output == (
        f"Payment request sent to the customer for bill {bill_id}"
    )
    assert user(w, "check_payment_request") == (
        f"You have a payment request for bill {overdue.bill_id} of {overdue.total_due} USD."
    )
    user(w, "make_payment")
    bill = next(b for b in w.db.peek().bills if b.bill_id == overdue.bill_id)
    assert bill.status == telecom.BillStatus.PAID
    assert w.user_db.peek().surroundings.payment_request is None


@pytest.mark.parametrize(
    ("suite", "split", "size"),
    [("telecom-test", "test", 40), ("telecom-train", "train", 74), ("telecom-small", "small", 20),
     ("telecom-full", "full", 2285)],
)  # fmt: skip
def test_suites_are_tau2s_splits_generated_from_tasks_json(suite, split, size):
    ids = read_json("tau2/telecom/split_tasks.json")[split]
    tasks = TaskSuite.load(f"tooluse/{suite}")
    assert len(tasks) == size == len(ids)
    assert [t.id for t in tasks] == [f"tau2-telecom-{i}" for i in ids]
    if split == "full":
        assert len(read_json("tau2/telecom/tasks.json")) == size


def test_on_the_gold_path_the_user_makes_its_own_gold_calls():
    """The expert's reward 1 on every base task is tested in test_tooluse (TAU_ENVS)."""
    env = agentgym.make("TauTelecom-v0")
    for task in TaskSuite.load("tooluse/telecom-test"):
        env.reset(seed=0, options={"task": task})
        while not env.done:
            env.step(env.expert_action())
        wanted = [(a["name"], a.get("arguments", {})) for a in task.gold["actions"] or []
                  if a.get("requestor") == "user"]  # fmt: skip
        assert [(n, a) for n, a, side in env.state.calls if side == "user"] == wanted, task.id


def test_the_user_acts_only_when_asked_and_nothing_is_solved_by_talking():
    env = agentgym.make("TauTelecom-v0")
    obs, info = env.reset(seed=0, options={"task": TaskSuite.load("tooluse/telecom-test").tasks[0]})
    assert info["policy"].startswith("<main_policy>\n# Telecom Agent Policy")
    assert "<tech_support_policy>" in info["policy"] and info["domain"] == "telecom"
    assert len(info["tools"]) == 13  # the agent never sees the phone's tools
    before = env.state.world.user_db.hash()
    reply = env.step("Could you tell me your phone number?")[0]
    assert reply.startswith("I am John Smith with phone number 555-123-2002")
    assert env.step("Let me look into it.")[0] == "Okay. Is there anything else you need from me?"
    assert env.state.world.user_db.hash() == before and not env.state.calls
    first = env.state.path[0]
    assert first.requestor == "user"  # this task's gold path starts on the phone
    words = first.name.split("_", 1)[1].replace("_", " ")
    reply = env.step(f"Please check your {words} setting and change it.")[0]
    assert reply.startswith(f"Done. {first.name} gave: ")
    assert env.state.calls == [(first.name, first.arguments, "user")]
    assert env.state.world.user_db.hash() != before
    _, reward, terminated, _, _ = env.step("###STOP###")
    assert terminated and reward == 0.0


def test_inaction_never_succeeds_in_telecom():
    manifest = REPO_ROOT / "tasks" / "tooluse" / "manifest.json"
    suites = json.loads(manifest.read_text())["suites"]
    assert all(not suites[s]["inaction_succeeds"] for s in suites if s.startswith("telecom"))


def test_extra_harmless_writes_do_not_keep_the_user_on_the_line():
    """The user leaves once the phone works (tau2 grades telecom by env assertions only)."""
    env = agentgym.make("TauTelecom-v0")
    task = next(
        t
        for t in TaskSuite.load("tooluse/telecom-test")
        if t.gold["reward_basis"] == ["ENV_ASSERTION"]
        and all(a.get("requestor") == "user" for a in t.gold["actions"])
    )
    env.reset(seed=0, options={"task": task})
    # a write the gold path does not make: roaming on another line of the same customer
    assert env.step('{"name": "enable_roaming", "arguments": {"customer_id": "C1001", '
                    '"line_id": "L1001"}}')[0] == "Roaming enabled successfully"  # fmt: skip
    for action in env.state.plan:
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    assert (obs, reward, terminated) == ("###STOP###", 1.0, True), info["reward_info"]
    assert not env.state.world.same_state(env.state.target)


@pytest.mark.parametrize("policy", ["manual", "workflow"])
def test_policy_variants_are_tau2s(policy):
    env = agentgym.make("TauTelecom-v0", policy=policy)
    _, info = env.reset(seed=0, options={"task": TaskSuite.load("tooluse/telecom-test").tasks[0]})
    expected = "tech_support_manual" if policy == "manual" else "tech_support_workflow"
    body = read_text(f"tau2/telecom/{expected}.md")
    assert info["policy"].endswith(f"<tech_support_policy>\n{body}\n</tech_support_policy>")
    with pytest.raises(ValueError, match="unknown telecom policy 'short'"):
        agentgym.make("TauTelecom-v0", policy="short")


def test_solo_mode_the_agent_works_the_ticket_with_both_sides_tools():
    env = agentgym.make("TauTelecom-v0", solo=True)
    tasks = TaskSuite.load("tooluse/telecom-test").tasks
    obs, info = env.reset(seed=0, options={"task": tasks[0]})
    assert info["source"] == "ticket" and obs.endswith(tasks[0].config["ticket"].strip())
    assert info["policy"].startswith(
        f"<main_policy>\n{read_text('tau2/telecom/main_policy_solo.md')}"
    )
    names = [t["function"]["name"] for t in info["tools"]]
    assert len(names) == 44 and names[-1] == "done" and "toggle_airplane_mode" in names
    before = env.state.world.user_db.hash()
    out = env.step('{"name": "check_status_bar", "arguments": {}}')[0]
    assert out.startswith("Status Bar: ")  # a phone tool runs on the phone
    env.step('{"name": "toggle_wifi_calling", "arguments": {}}')
    assert env.state.world.user_db.hash() != before
    obs, reward, terminated, _, info = env.step("I have fixed your phone.")
    assert terminated and reward == 0.0 and info["valid"] is False
    for task in tasks:  # the expert, both sides' gold calls then done, solves every test task
        env.reset(seed=0, options={"task": task})
        while not env.done:
            _, reward, *_ = env.step(env.expert_action())
        assert reward == 1.0, task.id
    env.reset(seed=0, options={"task": tasks[0]})
    _, reward, terminated, _, _ = env.step('{"name": "done", "arguments": {}}')
    assert terminated and reward == 0.0


class ScriptedClient:
    """Offline test double for the chat client; replies from a script, records requests."""

    model = "scripted"

    def __init__(self, replies):
        self.replies = list(replies)
        self.requests = []

    def complete(self, request):
        from agentgym.llm.base import ChatResponse, Choice

        self.requests.append(request)
        return ChatResponse(choices=[Choice(message=self.replies.pop(0))], model=self.model)


def test_llm_user_acts_on_its_phone_through_the_episode():
    from agentgym.envs.tooluse.users import LLMUser

    toggle = {"id": "t1", "type": "function",
              "function": {"name": "toggle_airplane_mode", "arguments": "{}"}}  # fmt: skip
    client = ScriptedClient(
        [
            {"role": "assistant", "content": "My phone has no service."},
            {"role": "assistant", "content": None, "tool_calls": [toggle]},
            {"role": "assistant", "content": "Airplane mode is off now."},
        ]
    )
    env = agentgym.make("TauTelecom-v0", user=LLMUser(client))
    task = next(
        t
        for t in TaskSuite.load("tooluse/telecom-test")
        if t.gold["actions"][0]["name"] == "toggle_airplane_mode"
    )
    obs, _ = env.reset(seed=0, options={"task": task})
    assert obs.endswith("user: My phone has no service.")
    assert len(client.requests[0].tools) == 30
    assert "You have some tools to perform the actions" in client.requests[0].messages[0]["content"]
    assert env.state.world.user_db.peek().device.airplane_mode
    reply = env.step("Please turn airplane mode off.")[0]
    assert reply == "Airplane mode is off now."
    assert env.state.calls == [("toggle_airplane_mode", {}, "user")]
    assert not env.state.world.user_db.peek().device.airplane_mode
    assert client.requests[2].messages[-1]["content"].startswith("Airplane Mode is now OFF.")


TRACE = Path(__file__).parents[1] / "data" / "tau2_telecom" / "trace.json"


def digest(text):
    """make_trace.py's digest of a tool output."""
    with contextlib.suppress(json.JSONDecodeError):
        text = json.dumps(json.loads(text), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def test_every_output_hash_and_verdict_matches_tau2s_own_code():
    """762 calls recorded from tau2's telecom code (make_trace.py): the 40 test tasks' gold
    actions and 15 random calls each, both sides; outputs, both DB hashes, assertion verdicts."""
    trace = json.loads(TRACE.read_text())
    tasks = {t.id: t for t in TaskSuite.load("tooluse/telecom-test")}
    for row in trace:
        task = tasks[row["task"]]
        w = world(task.config["initial_state"])
        for i, (name, arguments, side, expected) in enumerate(row["calls"]):
            assert digest(w.call(name, arguments, side).output) == expected, (row["task"], i, name)
        assert (w.db.hash(), w.user_db.hash()) == (row["db_hash"], row["user_db_hash"]), row["task"]
        verdicts = [w.run_assertion(a) for a in task.gold["env_assertions"]]
        assert verdicts == row["assertions"], row["task"]
