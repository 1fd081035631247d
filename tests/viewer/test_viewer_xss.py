"""The viewer against hostile text in the store: every response carries a Content-Security-Policy
and ``X-Content-Type-Options``, and in a real browser (headless Chromium, as
``tests/viewer/test_viewer_browser.py``) no payload an episode holds runs on any page that shows it."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

import agentgym
from agentgym.episode import Episode, Step

pytest.importorskip("fastapi")
pytest.importorskip("selenium.webdriver")
from test_viewer_browser import chromium, wait_for  # noqa: E402

RUN = "xss0000000000000"
OTHER = "xss1111111111111"
RAN = "window.__pwned = (window.__pwned || []).concat('{0}'); document.title = 'pwned {0}'"
PAYLOADS = {
    "script": "<script>" + RAN.format("script") + "</script>",
    "img": f'<img src=x onerror="{RAN.format("img")}">',
    "svg": f'<svg onload="{RAN.format("svg")}"></svg>',
    "link": f'<a href="javascript:{RAN.format("link")}">open</a>',
    "js-url": f"javascript:{RAN.format('url')}",
    "iframe": f'<iframe srcdoc="<script>parent.{RAN.format("iframe")}</script>"></iframe>',
}
ALL = " ".join(PAYLOADS.values())
TASK = "task-" + PAYLOADS["img"]


def _episode(task_id: str, success: bool) -> Episode:
    tool = json.dumps({"name": PAYLOADS["img"], "arguments": {"q": ALL}})
    command = f"<returncode>0</returncode><output>{ALL}</output>"
    info = {"note": ALL, "dialogue": [{"speaker": PAYLOADS["svg"], "content": ALL}],
            "judge": {"scores": {PAYLOADS["script"]: ALL}}}  # fmt: skip
    steps = [
        Step(t=0, action=ALL, observation=ALL, reward=0.0, info=info),
        Step(t=1, action=tool, observation=json.dumps({"result": ALL}), reward=0.0, valid=False),
        Step(t=2, action=PAYLOADS["js-url"], observation=command, reward=1.0, terminated=True),
    ]
    return Episode(task_id=task_id, env_id="Clarify-v0", instruction=ALL, first_observation=ALL,
                   steps=steps, success=success, score=float(success), reward=1.0,
                   status="completed" if success else "error", error=None if success else ALL)  # fmt: skip


def make_hostile_store(path: Path) -> None:
    """Two runs whose names, agents, tags, tasks and every step field hold the payloads."""
    store = agentgym.Store(path)
    for run_id, success in ((RUN, True), (OTHER, False)):
        store.start_run(run_id, f"run {ALL}", "clarify/test", f"agent {ALL}", {"x": ALL}, {}, None)
        store.save_episode(run_id, _episode(TASK, success), [PAYLOADS["img"], "tag"])
        store.save_episode(run_id, _episode("plain", not success), ["tag"])
    store.close()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Iterator[str]:
    from agentgym.viewer import ViewerThread

    path = tmp_path_factory.mktemp("viewer-xss") / "runs.db"
    make_hostile_store(path)
    with ViewerThread(path) as viewer:
        yield viewer.url


# ------------------------------------------------------------------------------------- headers
@pytest.mark.parametrize(
    ("path", "headers", "status"),
    [
        ("", {}, 200),
        ("static/js/main.js", {}, 200),
        ("static/app.css", {}, 200),
        ("api/runs", {}, 200),
        (f"api/episode?run={RUN}&task={quote(TASK)}", {}, 200),
        ("api/runs/nope", {}, 404),
        ("api/runs/x/episodes?page=-1", {}, 400),
        ("static/nope.js", {}, 404),
        ("nope", {}, 404),
        ("api/runs", {"Host": "evil.example"}, 400),
    ],
)
def test_every_response_carries_the_security_headers(hostile, path, headers, status):
    r = httpx.get(hostile + path, headers=headers)
    assert r.status_code == status
    policy = r.headers.get("content-security-policy", "")
    assert "default-src 'none'" in policy and "script-src 'self';" in policy, policy
    assert "unsafe-inline" not in policy and "frame-ancestors 'none'" in policy
    assert r.headers.get("x-content-type-options") == "nosniff"


# ------------------------------------------------------------------------------- a real browser
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium()


def _pages() -> list[tuple[str, str]]:
    """(hash, text that shows the page drew the payload) for every page that shows one."""
    task = quote(TASK, safe="")
    return [
        ("#/", "run <script>"),
        (f"#/run/{RUN}", TASK),
        (f"#/run/{RUN}?q={quote(PAYLOADS['img'], safe='')}", TASK),
        (f"#/episode/{RUN}?task={task}&sample=0", PAYLOADS["iframe"]),
        (f"#/episode/{OTHER}?task={task}&sample=0", "Error"),
        (f"#/compare?a={RUN}&b={OTHER}", TASK),
        (f"#/run/{quote(PAYLOADS['img'], safe='')}", "no run"),
        (f"#/{quote(PAYLOADS['svg'], safe='')}", "unknown page"),
    ]


def _not_run(driver: Any) -> None:
    assert driver.execute_script("return window.__pwned === undefined"), driver.execute_script(
        "return window.__pwned"
    )
    assert "pwned" not in driver.title
    links = driver.execute_script(
        "return [...document.querySelectorAll('[href],[src],[srcdoc]')]"
        ".map(e => e.getAttribute('href') || e.getAttribute('src') || 'srcdoc')"
    )
    assert not [x for x in links if x.strip().lower().startswith("javascript:") or x == "srcdoc"]
    markup = "return document.querySelectorAll('#view script, #view img, #view iframe').length"
    assert not driver.execute_script(markup)


def test_no_payload_runs_on_any_page(browser, hostile):
    for where, shown in _pages():
        browser.get(hostile + "?poll=300" + where)
        wait_for(browser, lambda shown=shown: shown in browser.find_element("id", "view").text,
                 f"{where} drawn with its payload text")  # fmt: skip
        time.sleep(0.3)  # an onerror or onload fires as the page settles; give it the chance
        _not_run(browser)
        if where.startswith(f"#/episode/{RUN}"):
            body = browser.find_element("id", "view").text
            assert PAYLOADS["script"] in body and PAYLOADS["js-url"] in body  # shown as text
            for details in browser.find_elements("css selector", "details"):
                details.click()  # the info tables too
            time.sleep(0.3)
            _not_run(browser)


def test_markup_that_reached_the_page_still_runs_nothing(browser, hostile):
    """The policy itself, enforced by the browser: an inline handler and an inline script added
    to the page as markup (as an escaping bug would) are refused."""
    browser.get(hostile + "#/")
    wait_for(browser, lambda: "run <script>" in browser.find_element("id", "view").text, "runs")
    browser.execute_script(
        "document.getElementById('view').insertAdjacentHTML('beforeend', arguments[0]);"
        "const s = document.createElement('script'); s.textContent = arguments[1];"
        "document.body.append(s);",
        f'<img id=probe src=/static/none.png onerror="{RAN.format("inline-handler")}">',
        RAN.format("inline-script"),
    )
    wait_for(
        browser,
        lambda: browser.execute_script("return document.getElementById('probe').complete"),
        "the probe image to fail",
    )
    time.sleep(0.3)
    assert browser.execute_script("return window.__pwned === undefined"), browser.execute_script(
        "return window.__pwned"
    )
    logs = browser.get_log("browser")
    refused = [e["message"] for e in logs if "Content Security" in e["message"]]
    assert refused, "the browser reported no refusal"
