"""The viewer in a real browser: headless Chromium (Debian's chromium + chromium-driver, installed
by scripts/setup.d/30-chromium.sh) driven by Selenium, on a store made by real evals.

The screenshot is kept as an artifact: under $AGENTGYM_ARTIFACTS if set, else the test's tmp_path;
its path is printed.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
webdriver = pytest.importorskip("selenium.webdriver")
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402
from test_viewer_api import make_store  # noqa: E402

import agentgym  # noqa: E402
from agentgym.viewer import ViewerThread  # noqa: E402

CHROMIUM = os.environ.get("AGENTGYM_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("AGENTGYM_CHROMEDRIVER", "/usr/bin/chromedriver")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1000",
]
WAIT_S = 30


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium()


def chromium() -> Iterator[Any]:
    """A headless Chromium driven by Selenium (skips the test where it is not installed)."""
    for binary in (CHROMIUM, CHROMEDRIVER):
        if not Path(binary).is_file():
            pytest.skip(f"{binary} missing: run scripts/setup.d/30-chromium.sh")
    profile = tempfile.mkdtemp(prefix="agentgym-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [*FLAGS, f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def viewer(tmp_path_factory) -> Iterator[tuple[str, dict[str, str], Path]]:
    path = tmp_path_factory.mktemp("viewer-browser") / "runs.db"
    runs = make_store(path)
    with ViewerThread(path) as v:
        yield v.url, runs, path


def wait_for(driver: Any, check: Callable[[], Any], what: str) -> Any:
    """Poll ``check`` until it returns something truthy; fail naming what never appeared."""
    last: list[Any] = []

    def probe(_: Any) -> Any:
        try:
            return check()
        except Exception as e:  # stale elements while the page redraws
            last[:] = [e]
            return False

    try:
        return WebDriverWait(driver, WAIT_S, poll_frequency=0.1).until(probe)
    except Exception:
        raise AssertionError(f"timed out waiting for {what} ({last})") from None


def rows(driver: Any, table: str) -> list[Any]:
    return driver.find_elements(By.CSS_SELECTOR, f"table#{table} tbody tr")


def total(driver: Any) -> int:
    return int(driver.find_element(By.ID, "total").get_attribute("data-total"))


def test_runs_episodes_filters_steps_and_live_updates(browser, viewer, tmp_path, capsys):
    url, runs, path = viewer
    store = agentgym.Store(path)
    browser.get(url + "?poll=300#/")
    wait_for(browser, lambda: len(rows(browser, "runs")) == 3, "three runs in the runs table")
    expert = browser.find_element(By.CSS_SELECTOR, f"tr[data-run-id='{runs['clarify_expert']}']")
    assert "100.0% [98.1%, 100.0%]" in expert.text and "200" in expert.text

    # A run's episodes, then a filter applied by the server.
    random_id = runs["clarify_random"]
    browser.find_element(By.CSS_SELECTOR, f"tr[data-run-id='{random_id}'] a.run-link").click()
    wait_for(browser, lambda: total(browser) == 200, "200 episodes of the random run")
    assert len(rows(browser, "episodes")) == 50  # one page
    failed = [r for r in store.episode_rows(random_id) if not r["success"]]
    Select(browser.find_element(By.ID, "filter-success")).select_by_value("no")
    wait_for(browser, lambda: total(browser) == len(failed), f"{len(failed)} failed episodes")
    shown = rows(browser, "episodes")
    assert {r.get_attribute("data-success") for r in shown} == {"false"}
    assert [r.get_attribute("data-task") for r in shown] == [r["task_id"] for r in failed[:50]]
    assert "success=no" in browser.current_url  # the filter lives in the URL
    Select(browser.find_element(By.ID, "filter-tag")).select_by_value("hard")
    hard = [r for r in failed if "hard" in r["tags"]]
    wait_for(browser, lambda: total(browser) == len(hard), "failed episodes tagged hard")
    search = browser.find_element(By.ID, "filter-q")
    search.send_keys("products")
    hard_products = [r for r in hard if "products" in r["task_id"]]
    wait_for(browser, lambda: total(browser) == len(hard_products), "search in the task text")

    # An episode's steps as a conversation.
    first = rows(browser, "episodes")[0]
    task_id = first.get_attribute("data-task")
    first.find_element(By.CSS_SELECTOR, "a").click()
    episode = next(e for e in store.episodes(random_id) if e.task_id == task_id)
    wait_for(
        browser,
        lambda: len(browser.find_elements(By.CSS_SELECTOR, "#steps li.step")) == episode.n_steps,
        f"{episode.n_steps} steps of {task_id}",
    )
    actions = browser.find_elements(By.CSS_SELECTOR, "#steps li.step pre.action")
    assert [a.text for a in actions] == [s.action for s in episode.steps]
    assert "failure" in browser.find_element(By.TAG_NAME, "h1").text

    # Tool calls and their results.
    mock_id = runs["mock_expert"]
    tool_ep = next(e for e in store.episodes(mock_id) if e.steps[0].action.startswith("{"))
    browser.get(f"{url}?poll=300#/episode/{mock_id}?task={tool_ep.task_id}&sample=0")
    tool = wait_for(
        browser, lambda: browser.find_element(By.CSS_SELECTOR, ".tool-call .tool-name"), "a tool"
    )
    assert tool.text == tool_ep.steps[0].info["source"]
    assert browser.find_elements(By.XPATH, "//*[contains(text(), 'tool result')]")
    shot_dir = Path(os.environ.get("AGENTGYM_ARTIFACTS") or tmp_path)
    shot_dir.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(shot_dir / "viewer-tool-episode.png"))

    # Live: a new eval's episodes appear on the open runs page without a reload.
    browser.get(url + "?poll=300#/")
    wait_for(browser, lambda: len(rows(browser, "runs")) == 3, "the runs page again")
    browser.execute_script("window.__not_reloaded = true")
    counts = _watch_live_eval(browser, path, set(runs.values()))
    assert browser.execute_script("return window.__not_reloaded === true")
    assert counts[-1] == 200 and any(0 < c < 200 for c in counts), counts

    shot = shot_dir / "viewer-runs.png"
    browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, severe
    store.close()
    with capsys.disabled():
        print(f"\nviewer screenshots: {shot} and {shot_dir / 'viewer-tool-episode.png'}")


def _watch_live_eval(browser: Any, path: Path, known: set[str]) -> list[int]:
    """Run a slowed-down eval in a thread; return the episode counts its row showed meanwhile."""
    done = threading.Event()

    def run() -> None:
        slow = lambda ep, progress: time.sleep(0.03)  # noqa: E731
        agentgym.evaluate("clarify/test", "random", db=path, seed=7, on_episode=slow).store.close()
        done.set()

    threading.Thread(target=run, daemon=True).start()
    counts: list[int] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (done.is_set() and counts and counts[-1] == 200):
        try:
            for row in rows(browser, "runs"):
                if row.get_attribute("data-run-id") not in known:
                    cell = row.find_element(By.CSS_SELECTOR, "td.episodes")
                    counts.append(int(cell.text.replace(",", "")))
        except StaleElementReferenceException:  # the table redrew under us
            pass
        time.sleep(0.1)
    return counts


def test_compare_tag_plot_and_errors(browser, viewer):
    url, runs, path = viewer
    store = agentgym.Store(path)
    a, b = runs["clarify_expert"], runs["clarify_random"]
    solved_b = {r["task_id"] for r in store.episode_rows(b) if r["success"]}
    store.close()

    # Two runs chosen on the runs page, compared per task.
    browser.get(url + "#/")
    wait_for(browser, lambda: len(rows(browser, "runs")) >= 3, "the runs")
    for run_id in (a, b):
        browser.find_element(By.CSS_SELECTOR, f"tr[data-run-id='{run_id}'] input").click()
    browser.find_element(By.ID, "compare-selected").click()
    only_a = wait_for(
        browser,
        lambda: browser.find_element(By.CSS_SELECTOR, "#verdicts [data-verdict='only_a']"),
        "the verdict counts",
    )
    assert only_a.text == f"only A ({200 - len(solved_b)})"
    only_a.click()
    wait_for(
        browser,
        lambda: {r.get_attribute("data-verdict") for r in rows(browser, "compare")} == {"only_a"},
        "tasks only A solved",
    )
    assert len(rows(browser, "compare")) == min(100, 200 - len(solved_b))

    # Success by tag: one bar per group (all + 5 tags), each with its interval.
    browser.get(f"{url}#/run/{b}")
    bars = wait_for(
        browser,
        lambda: browser.find_elements(By.CSS_SELECTOR, "#tag-plot svg g.bar-group"),
        "the tag plot",
    )
    assert len(bars) == 6
    assert len(rows(browser, "tag-summary")) == 6

    # Bad addresses say what is wrong.
    browser.get(f"{url}#/run/nope")
    box = wait_for(browser, lambda: browser.find_element(By.CLASS_NAME, "error-box"), "an error")
    assert "no run 'nope'" in box.text


def test_training_page(browser, tmp_path):
    """A training run's page: held-out success over steps with intervals, linked to each
    evaluation's episodes, and one chart per logged metric (stored as `agentgym train` stores)."""
    path = tmp_path / "train.db"
    store = agentgym.Store(path)
    store.start_run("t" * 16, "demo", "clarify/test", "train:grpo:tiny", {}, {}, None)
    for step in (1, 2, 3):
        store.save_train_metrics(
            "t" * 16, step, {"reward": 0.1 * step, "kl": 0.01, "pg_loss": -step}
        )
    tasks = agentgym.TaskSuite.load("clarify/test").filter((), 4)
    for step, agent in ((0, "random"), (3, "expert")):
        result = agentgym.evaluate(tasks, agent, db=store, name=f"demo step-{step}")
        row = store.run(result.run_id)
        store.db.execute(  # link it as the trainer does: config train_run / train_step
            "update runs set config = ? where id = ?",
            [
                json.dumps(row["config"] | {"train_run": "t" * 16, "train_step": step}),
                result.run_id,
            ],
        )
    store.db.conn.commit()
    browser.get_log("browser")  # drain what earlier tests on this browser logged
    with ViewerThread(path) as v:
        browser.get(v.url + "#/")
        link = wait_for(
            browser,
            lambda: browser.find_element(
                By.CSS_SELECTOR, f"tr[data-run-id='{'t' * 16}'] a.run-link"
            ),
            "the training run",
        )
        assert (
            "training"
            in browser.find_element(By.CSS_SELECTOR, f"tr[data-run-id='{'t' * 16}']").text
        )
        link.click()
        wait_for(
            browser, lambda: len(rows(browser, "held-out-table")) == 2, "two held-out evaluations"
        )
        cells = [r.text for r in rows(browser, "held-out-table")]
        assert cells[1].startswith("3 100.0%")
        charts = browser.find_elements(By.CSS_SELECTOR, "#train-metrics svg.plot")
        assert [c.get_attribute("aria-label") for c in charts] == ["reward", "kl", "pg_loss"]
        rows(browser, "held-out-table")[1].find_element(By.LINK_TEXT, "episodes").click()
        wait_for(browser, lambda: total(browser) == 4, "the step-3 evaluation's 4 episodes")
        logs = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        assert not logs, logs
