"""Take the documentation's screenshot of ``kmc explore`` again (``docs/images/explorer.png``, shown
by README and the explorer tutorial): ``python3 -m traces.explore.screenshot [OUT.png]``.

It serves the explorer on a loopback port, opens it in headless Chromium (Playwright, with the
system's browser: ``KMC_CHROMIUM`` or ``chromium`` on the PATH; it never downloads one), loads the
KAFKA-7786 scenario (the page opens the broker the last step changed), replays the path under every
release (compare) and saves the whole page. Run it after the model or the page changes, so the
picture shows what the program shows today."""

from __future__ import annotations

import os
import shutil
import sys
import threading
from pathlib import Path

from traces.explore.server import ExplorerServer

SCENARIO = "kafka-7786-fenced-answer-stalls-the-follower.json"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run"]
#: the picture README and docs/tutorials/explorer.md show, in the documentation's images
DEFAULT_OUT = Path(__file__).resolve().parents[2] / "docs" / "images" / "explorer.png"


def take(out: Path) -> None:
    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    from playwright.sync_api import expect, sync_playwright

    chromium = os.environ.get("KMC_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    srv = ExplorerServer(("127.0.0.1", 0), max_states=50_000)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=FLAGS)
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.set_default_timeout(60_000)
            expect.set_options(timeout=60_000)  # its assertions' own default is 5 s
            page.goto(srv.url)
            page.select_option("#scenario-select", SCENARIO)
            page.click("#load-scenario")
            expect(page.locator("#banner")).to_contain_text("is violated at step")
            page.click("#compare-btn")
            expect(page.locator("#compare-table tr.current-protocol")).to_have_count(1)
            page.screenshot(path=str(out), full_page=True)
            browser.close()
    finally:
        srv.stop_run()
        srv.shutdown()
        srv.server_close()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0]) if args else DEFAULT_OUT
    take(out)
    print(f"saved {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
