"""``kmc explore`` in a real headless Chromium (Playwright): open a release, take five actions by
clicking, check the state shown against the model, go back, reload from the URL, load a shipped
scenario and see the violation at its step, export the path and replay it with ``kmc trace replay``,
and run to completion from a step of a story.

Chromium is the system's (``/usr/bin/chromium``, or ``KMC_CHROMIUM``); Playwright never downloads a
browser here. Without Playwright or Chromium the tests skip, saying which is missing (``.ci/run``
installs both).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

from spec.registry import build_model
from traces.diagram import _message_label
from traces.explore import session
from traces.render import flat_state, fmt
from traces.scenario import load_scenario
from traces.views import broker_views

os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("KMC_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
STALL = "kafka-7786-fenced-answer-stalls-the-follower.json"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run"]

sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed: pip "
                                                             "install -e '.[test]'")
if not os.path.exists(CHROMIUM):
    pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install chromium (or set KMC_CHROMIUM)",
                allow_module_level=True)


@pytest.fixture(scope="module")
def server(explorer_server):
    return explorer_server  # tests/conftest.py


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.set_default_timeout(20_000)
    # the assertions' wait too (Playwright's expect has its own 5 s default: too short for a loaded
    # machine, where the README suite runs three processes on two cores)
    sync_api.expect.set_options(timeout=20_000)
    yield pg
    context.close()
    assert not errors, errors


def fragment(pg) -> str:
    return unquote(pg.evaluate("location.hash").lstrip("#"))


def wait_step(pg, at: int, total: int) -> None:
    sync_api.expect(pg.locator("#step-count")).to_have_text(f"step {at} of {total}")


def shown_fields(pg) -> dict[str, str]:
    return pg.eval_on_selector_all("tr.field", "rows => Object.fromEntries(rows.map(r => "
                                               "[r.dataset.key, "
                                               "r.querySelector('td.value').textContent]))")


def check_state_against_model(pg, model, position) -> None:
    """Every variable the page shows is the model's, in the state the path leads to; the broker
    table too."""
    current = model.init_states()[position.init]
    for index in position.path[: position.at]:  # the model's own order, not the explorer's walk
        current = list(model.successors(current))[index][1]
    flat = flat_state(current)
    network = flat.pop("network")  # drawn as the requests in flight, one line each
    assert shown_fields(pg) == {k: fmt(v, show_hidden=True) for k, v in flat.items()}
    shown = pg.eval_on_selector_all("li.message", "items => items.map(i => i.dataset.message)")
    assert shown == [_message_label(m) for m in network]
    for view in broker_views(current):
        row = pg.locator(f'#broker-table tr[data-broker="{view.broker}"]')
        assert row.locator('td[data-col="leo"]').inner_text() == str(view.leo)
        assert row.locator('td[data-col="hw"]').inner_text() == str(view.hw)
        assert row.locator(".cell").all_inner_texts() == [e.label() for e in view.log]
    expected_actions = [str(a) for a, _ in model.successors(current)]
    assert pg.locator("button.action").all_inner_texts() == expected_actions


# Chromium: about 3 s of CPU with its start; the page's API is tested in
# tests/test_explore_server.py
@pytest.mark.slow
def test_click_five_actions_back_and_reload(server, page):
    model = build_model("kafka", [], "2.1.0")
    page.goto(server.url + "#model=kafka&protocol=2.1.0")
    wait_step(page, 0, 0)
    clicks = []
    # positions in the list, bounded by what is enabled
    for n, wanted in enumerate((1, 4, 0, 2, 1), start=1):
        buttons = page.locator("button.action")
        choice = min(wanted, buttons.count() - 1)
        clicks.append(int(buttons.nth(choice).get_attribute("data-index")))
        buttons.nth(choice).click()
        wait_step(page, n, n)
    position = session.parse_position(fragment(page))
    assert position.path == tuple(clicks) and position.at == 5
    check_state_against_model(page, model, position)
    assert page.locator("#diagram svg").count() == 1
    # ghost variables and bound counters: there, hidden until the toggle; the last step's changes
    # marked
    hidden = page.locator("tr.field.hidden")
    assert hidden.count() > 0 and not any(hidden.nth(i).is_visible() for i in range(hidden.count()))
    page.check("#show-hidden")
    page.locator("details.broker").evaluate_all("ds => ds.forEach(d => d.open = true)")
    assert all(hidden.nth(i).is_visible() for i in range(hidden.count()))
    page.uncheck("#show-hidden")
    assert page.locator("tr.field.changed").count() > 0
    # back: the state of step 4, the fifth step kept as forward history
    page.click("#back")
    wait_step(page, 4, 5)
    back = session.parse_position(fragment(page))
    assert back.path == position.path and back.at == 4
    check_state_against_model(page, model, back)
    assert page.locator("#forward").is_enabled()
    # reload from the URL: the same position
    page.reload()
    wait_step(page, 4, 5)
    check_state_against_model(page, model, back)
    # forward again, then a shared link in a fresh page
    page.click("#forward")
    wait_step(page, 5, 5)
    link = page.url
    other = page.context.new_page()
    other.goto(link)
    wait_step(other, 5, 5)
    check_state_against_model(other, model, position)


# the browser's CPU; the fast tier drives the page in test_readme_screenshot_is_taken_again
@pytest.mark.slow
def test_scenario_shows_its_violation_and_export_replays(server, page, tmp_path):
    scenario = load_scenario(str(ROOT / "traces" / "scenarios" / STALL))
    page.goto(server.url)
    page.wait_for_selector("button.action")
    page.select_option("#scenario-select", STALL)
    page.click("#load-scenario")
    expected = scenario.expectation(scenario.protocol)
    assert expected is not None and expected.outcome == "violated"
    wait_step(page, expected.step, expected.step)
    row = page.locator(f'tr.prop[data-name="{expected.invariant}"]')
    assert row.get_attribute("data-status") == "violated"
    assert row.get_attribute("data-first") == str(expected.step)
    assert page.locator("nav .crumb.broken").get_attribute("data-step") == str(expected.step)
    banner = page.locator("#banner").inner_text()
    assert (f"{expected.invariant} is violated at step {expected.step}" in banner and scenario.name
            in banner)
    assert (f"step {expected.step}: {expected.invariant} violated"
            in page.locator("#diagram svg").text_content())
    # one step before: the action that breaks it is marked, with the rule 2.1.0 lacks (KAFKA-7786's
    # fix)
    page.click(f'nav .crumb[data-step="{expected.step - 1}"]')
    wait_step(page, expected.step - 1, expected.step)
    last = session.load_scenario_file(session.scenario_file(STALL))
    config = last.position.config
    model = build_model(config.model, list(config.consts), config.protocol, list(config.features))
    breaking = str(session.walk(model, last.position).actions[-1])
    item = page.locator("li.action", has=page.locator(f'button[data-label="{breaking}"]'))
    assert f"breaks {expected.invariant}" in item.inner_text()
    item.locator("summary").click()
    rules = item.locator("details.rules").inner_text()
    assert "KAFKA-7786" in rules and "NOT in this release" in rules
    page.click("#forward")
    wait_step(page, expected.step, expected.step)
    # export the path and replay it with kmc trace replay
    with page.expect_download() as download:
        page.click("#export-json")
    exported = tmp_path / "exported.json"
    download.value.save_as(exported)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "kmc", "trace", "replay", str(exported), "--json"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    result = json.loads(done.stdout)
    assert done.returncode == 12, done.stderr
    assert ((result["outcome"], result["step"], result["invariant"])
            == ("violated", expected.step, expected.invariant))
    # compare releases: the replay table of every protocol, 2.1.0 breaking where it did here
    page.click("#compare-btn")
    current = page.locator("#compare-table tr.current-protocol")
    sync_api.expect(current).to_have_attribute("data-outcome", "violated")
    assert (page.locator('#compare-table tr[data-protocol="2.1.1"]').get_attribute("data-outcome")
            ==
         scenario.expectation("2.1.1").outcome)


# the browser's CPU; the run itself is tested through the API (tests/test_explore_server.py)
@pytest.mark.slow
def test_run_to_completion_from_a_step_of_the_story(server, page):
    loaded = session.load_scenario_file(session.scenario_file(STALL))
    prefix = session.Position(loaded.position.config, 0, loaded.position.path[:9], 9)
    page.goto(server.url + "#" + prefix.query())
    wait_step(page, 9, 9)
    page.fill("#max-states", "20000")
    page.click("#run-btn")
    sync_api.expect(page.locator("#run-status")).to_contain_text("no-fence-stall "
                                                                 "violated", timeout=30_000)
    sync_api.expect(page.locator('tr.prop[data-name="no-fence-stall"]')).to_have_attribute(
        "data-status", "violated")
    found = session.parse_position(fragment(page))
    assert found.path[:9] == prefix.path and found.at == len(found.path) > 9
    wait_step(page, found.at, found.at)


def test_readme_screenshot_is_taken_again(tmp_path):
    """``python3 -m traces.explore.screenshot`` (the documentation's picture) loads the story,
    compares releases and saves a PNG of the whole page."""
    from traces.explore import screenshot

    # the picture README and the docs show
    assert screenshot.DEFAULT_OUT == ROOT / "docs" / "images" / "explorer.png"
    out = tmp_path / "shot.png"
    # in a process of its own: Playwright's sync API cannot start inside this module's running
    # browser session
    done = subprocess.run([sys.executable, "-m", "traces.explore.screenshot", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "KMC_CHROMIUM": CHROMIUM})
    assert done.returncode == 0 and "saved" in done.stdout, done.stderr
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width == 1280 and height > 2000  # the whole page: state, diagram and the compare table
