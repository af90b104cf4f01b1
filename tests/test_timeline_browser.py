"""The timeline page in a real headless browser (Debian's Chromium through chromedriver, driven
by selenium): it loads without console errors, shows the states ``inputs --json`` gives, opens
a checkpoint's capsule, moves by keyboard, keeps its text readable (WCAG AA contrast), refreshes
live, and leaves screenshots in the artifacts folder (tests/artifacts, or
$CONTINUATION_TEST_ARTIFACTS). Skipped, with the reason, where no browser can be had."""
from __future__ import annotations

import json
import threading
import time

import pytest

from timeline_helpers import (
    ARTIFACTS,
    browser_unavailable,
    cli,
    every_state_thread,
    inputs_json,
    long_turn_thread,
    start_browser,
)

pytestmark = pytest.mark.skipif(browser_unavailable() is not None,
                                reason=browser_unavailable() or "")


@pytest.fixture(scope="module")
def browser():
    driver = start_browser()
    yield driver
    driver.quit()


def _open(browser, url: str) -> float:
    """Load the page; the milliseconds until its first screen was rendered."""
    browser.get("about:blank")
    browser.get_log("browser")  # drop what came before
    browser.get(url)
    deadline = time.time() + 30
    while time.time() < deadline:
        if browser.execute_script("return document.body && document.body.dataset.ready") == "1":
            return browser.execute_script("return window.__timelineReady")
        time.sleep(0.05)
    raise AssertionError(f"the page never finished rendering; console: {browser.get_log('browser')}")


def _console_problems(browser) -> list:
    return [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]


def _shot(browser, name: str) -> str:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    browser.save_screenshot(str(path))
    assert path.stat().st_size > 10_000
    return str(path)


def _shown_states(browser) -> dict[str, str]:
    """Every input on every page with the state its current badge shows (the page is walked
    with its own pager)."""
    shown: dict[str, str] = {}
    pages = browser.execute_script("return document.getElementById('page-label').textContent")
    total = int(pages.split(" of ")[1].split(" ")[0].replace(",", ""))
    for page in range(total):
        if page:
            browser.execute_script("document.getElementById('older').click()")
            _wait(browser, lambda: browser.execute_script(
                "return document.body.dataset.page") == str(total - 1 - page))
        for input_id, state in browser.execute_script(
                "return Array.from(document.querySelectorAll('#timeline .input')).map("
                "e => [e.dataset.inputId, e.querySelector('.current .state').dataset.state])"):
            assert input_id not in shown
            shown[input_id] = state
    return shown


def _wait(browser, ok, timeout: float = 15.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if ok():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out; console: {browser.get_log('browser')}")


def _file(home, tmp_path, thread: str, name: str) -> str:
    out = tmp_path / name
    cli(home, "show", "--thread", thread, "--html", "-o", str(out))
    return out.as_uri()


# -- a real session ------------------------------------------------------------------------------
@pytest.mark.parametrize("runtime,name", [
    ("codex", "rollout-2026-11-29T09-44-16-01a226b0-e445-74a1-b671-074faf6bd457.jsonl"),
    ("claude", "69f7cc13-8194-4e19-9222-92d4ebe52422.jsonl"),
])
def test_a_real_imported_session_loads_clean_and_shows_the_cli_states(
        browser, home, tmp_path, shared_fixtures, runtime, name):
    folder = "codex" if runtime == "codex" else "claude-real"
    cli(home, "import", runtime, str(shared_fixtures / folder / name))
    thread = json.loads(cli(home, "status", "--json").stdout)["threads"][0]["thread"]["thread_key"]
    cli(home, "checkpoint", "--thread", thread, "--no-snapshot")
    _open(browser, _file(home, tmp_path, thread, "real.html"))
    assert _console_problems(browser) == []
    assert _shown_states(browser) == inputs_json(home, thread)
    _shot(browser, f"real-{runtime}-session.png")
    browser.execute_script("document.querySelector('button.checkpoint').click()")
    _wait(browser, lambda: browser.execute_script(
        "return !!document.querySelector('#detail:not([hidden]) #capsule')"))
    _shot(browser, f"real-{runtime}-session-checkpoint.png")
    assert _console_problems(browser) == []


# -- every state, checkpoints, keyboard ---------------------------------------------------------
@pytest.fixture
def every(engine, home, tmp_path):
    made = every_state_thread(engine)
    made["url"] = _file(home, tmp_path, made["thread"], "every.html")
    return made


def test_every_state_is_shown_as_inputs_json_says_and_recorded_text_stays_text(browser, home, every):
    _open(browser, every["url"])
    assert _console_problems(browser) == []
    states = _shown_states(browser)
    assert states == inputs_json(home, every["thread"])
    assert len(set(states.values())) == 7
    assert browser.execute_script("return window.__pwned") is None
    assert "</script><script>" in browser.find_element("css selector", "[data-input-id='in-handled']").text
    rolled = browser.find_element("css selector", "li.turn[data-turn-id='t5']")
    assert "discarded" in rolled.get_attribute("class") and "rolled back by event" in rolled.text
    _shot(browser, "every-state.png")


def test_clicking_a_checkpoint_shows_its_capsule_and_the_rewind_command(browser, home, every):
    _open(browser, every["url"])
    cp = every["checkpoints"][1]
    browser.find_element("css selector", f"button.checkpoint[data-checkpoint='{cp}']").click()
    _wait(browser, lambda: browser.execute_script(
        "return document.querySelector('#detail').dataset.checkpoint") == cp)
    capsule = browser.execute_script("return document.getElementById('capsule').textContent")
    expected = cli(home, "capsule", "show", "--thread", every["thread"], "--generation", "2").stdout
    assert capsule.rstrip("\n") == expected.rstrip("\n")
    commands = browser.execute_script(
        "return Array.from(document.querySelectorAll('#detail code.rewind-command')).map(e => e.textContent)")
    command = f"continuation rewind {cp} --thread {every['thread']} --conversation"
    assert command in commands
    plan = json.loads(cli(home, *command.split()[1:], "--dry-run", "--json").stdout)["plan"]
    preview = browser.find_element("id", "rewind-preview").text
    n = len(plan["inputs"])
    assert f"{n} input{'' if n == 1 else 's'} become rolled back" in preview
    _shot(browser, "every-state-checkpoint.png")
    assert _console_problems(browser) == []


def test_keyboard_moves_opens_closes_and_searches(browser, every):
    from selenium.webdriver.common.keys import Keys

    _open(browser, every["url"])
    body = browser.find_element("tag name", "body")
    active = lambda: browser.switch_to.active_element  # noqa: E731
    body.send_keys("j")
    first = active().get_attribute("data-seq")
    assert active().get_attribute("class").startswith("item")
    active().send_keys("j")
    assert int(active().get_attribute("data-seq")) > int(first)
    active().send_keys("k")
    assert active().get_attribute("data-seq") == first
    active().send_keys("c")
    assert active().get_attribute("data-checkpoint") == every["checkpoints"][0]
    active().send_keys(Keys.ENTER)
    _wait(browser, lambda: browser.execute_script(
        "return !document.getElementById('detail').hidden && document.activeElement.id === 'detail'"))
    active().send_keys(Keys.ESCAPE)
    _wait(browser, lambda: browser.execute_script("return document.getElementById('detail').hidden"))
    assert active().get_attribute("data-checkpoint") == every["checkpoints"][0]
    active().send_keys("/")
    assert active().get_attribute("id") == "search"
    active().send_keys("migration", Keys.ENTER)
    _wait(browser, lambda: browser.execute_script(
        "return !!document.querySelector('#timeline .hit[data-input-id=\"in-reconciling\"]')"))
    assert browser.find_element("id", "search-count").text == "1 of 1"
    assert active().find_elements("css selector", "[data-input-id='in-reconciling']")
    assert _console_problems(browser) == []


#: WCAG 2 contrast of every text node's color against the background behind it
_CONTRAST = """
function lum(c) {
  const [r, g, b] = c.match(/[\\d.]+/g).slice(0, 3).map(Number).map(v => {
    v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
function bg(el) {
  for (; el; el = el.parentElement) {
    const c = getComputedStyle(el).backgroundColor;
    const a = c.match(/[\\d.]+/g);
    if (a && (a.length < 4 || Number(a[3]) > 0.5)) return c;
  }
  return 'rgb(255, 255, 255)';
}
const bad = [], seen = new Set();
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
let checked = 0;
for (let n = walker.nextNode(); n; n = walker.nextNode()) {
  const el = n.parentElement;
  if (!n.textContent.trim() || !el || seen.has(el) || !el.getClientRects().length) continue;
  if (el.closest('script,style,[hidden],.skip')) continue;
  seen.add(el);
  const s = getComputedStyle(el);
  if (s.visibility === 'hidden' || s.display === 'none') continue;
  const a = lum(s.color), b = lum(bg(el));
  const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  const large = parseFloat(s.fontSize) >= 24 || (parseFloat(s.fontSize) >= 18.66 && Number(s.fontWeight) >= 700);
  checked++;
  if (ratio < (large ? 3 : 4.5)) bad.push([n.textContent.trim().slice(0, 40), s.color, bg(el), ratio.toFixed(2)]);
}
return [checked, bad];
"""


def test_text_keeps_wcag_aa_contrast(browser, every):
    _open(browser, every["url"])
    browser.execute_script("document.querySelectorAll('details').forEach(d => d.open = true)")
    browser.execute_script("document.querySelector('button.checkpoint').click()")
    _wait(browser, lambda: browser.execute_script("return !!document.getElementById('capsule')"))
    checked, bad = browser.execute_script(_CONTRAST)
    assert checked > 50
    assert bad == []


# -- a 1,000-call turn -------------------------------------------------------------------------------
def test_a_thousand_call_turn_is_readable(browser, engine, home, tmp_path):
    key = long_turn_thread(engine)
    rendered_ms = _open(browser, _file(home, tmp_path, key, "long.html"))
    assert _console_problems(browser) == []
    summary = browser.find_element("css selector", "li.turn .calls > div").text
    assert summary.startswith("1,000 tool calls: 10 error, 3 unknown, 987 ok")
    runs = browser.find_elements("css selector", "li.turn .callstrip .run")
    assert 1 < len(runs) <= 120
    browser.execute_script("document.querySelector('details.calllist').open = true")
    rows = browser.find_elements("css selector", ".calltable tbody tr")
    assert len(rows) == 50
    error = next(b for b in browser.find_elements("css selector", ".filters button")
                 if b.text.startswith("error"))
    error.click()
    statuses = browser.execute_script(
        "return Array.from(document.querySelectorAll('.calltable tbody tr')).map(r => r.dataset.status)")
    assert statuses == ["error"] * 10
    browser.execute_script("document.querySelector('.filters button').click()")
    _shot(browser, "thousand-call-turn.png")
    print(f"1,000-call turn: first screen rendered {rendered_ms:.0f} ms after navigation")


# -- live ---------------------------------------------------------------------------------------------
def test_serve_refreshes_as_facts_are_recorded(browser, engine, home, every):
    from continuation.commands.timeline.server import TimelineServer

    server = TimelineServer(str(home), thread=every["thread"], poll_ms=300)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        _open(browser, server.url)
        assert _shown_states(browser) == inputs_json(home, every["thread"])
        thread = engine.get_thread(every["thread"])
        thread.admit("a prompt typed while the page is open", input_id="in-live", turn_id="t7")
        _wait(browser, lambda: browser.execute_script(
            "return !!document.querySelector('[data-input-id=\"in-live\"]')"))
        # a checkpoint opened through the server
        browser.execute_script(f"document.querySelector(\"button.checkpoint[data-checkpoint='{every['checkpoints'][0]}']\").click()")
        _wait(browser, lambda: "CONTINUATION-CHECKPOINT" in (browser.execute_script(
            "const c = document.getElementById('capsule'); return c ? c.textContent : ''") or ""))
        _shot(browser, "live.png")
        assert _console_problems(browser) == []
    finally:
        server.shutdown()
        server.server_close()
