"""Rehearse a talk in Chromium, in talk mode, at a projector's 1280×720 and at 1920×1080.

The route a presenter takes: home → the walkthrough (the sentence, causal mask) from step 0 to
step 5 with the → key → every tab of the √d_k explorer → a benchmark run with the default
settings. Each transition is timed (from the click or key press until the app is idle), each
screen is saved as a PNG, and a screen is flagged when:

- a walkthrough step's heading, formula or main figure is not wholly in the window without
  scrolling, or a tab's first figure is not;
- after the benchmark run, the result chart does not fit the window when scrolled to;
- two numbers of a heatmap overlap, or one runs past its plot (tests/layout_checks.py);
- the page shows an exception.

    python benchmarks/rehearsal.py                    # both sizes, screenshots in ./rehearsal
    python benchmarks/rehearsal.py --out /tmp/talk --sizes 1280x720 --skip-benchmark

Exit status 1 when anything was flagged. Times taken on a busy machine are slower than a talk's.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support import browser  # noqa: E402

WALKTHROUGH = "/walkthrough?talk=true&preset=Sentence&mask=Causal"
BENCH_TIMEOUT_MS = 15 * 60 * 1000


@dataclass
class Screen:
    size: str
    name: str
    seconds: float
    flags: list[str] = field(default_factory=list)


def _main(page: object) -> object:
    return page.locator("[data-testid='stMain']")


def _shot(page: object, out: Path, size: str, name: str) -> None:
    page.wait_for_timeout(500)  # let plotly finish drawing
    page.screenshot(path=str(out / f"{size}-{name}.png"))


def _common_flags(page: object) -> list[str]:
    flags = [f"exception: {t[:200]}" for t in browser.exception_texts(page)]
    flags += browser.heatmap_text_problems(page)
    return flags


def _wait_charts(page: object, timeout: float = 30_000) -> None:
    """Wait until every chart on the page has drawn its SVG (plotly draws after the script is idle)."""
    page.wait_for_function(
        """() => Array.from(document.querySelectorAll("[data-testid='stPlotlyChart']"))
                 .every(c => c.querySelector('.main-svg') !== null)""",
        timeout=timeout,
    )


def _step_flags(page: object, step: int) -> list[str]:
    flags = []
    if page.evaluate("window.scrollY") > 1:
        flags.append("the page is scrolled")
    main = _main(page)
    try:  # idle comes before a chart's code has loaded on a page's first figure: give the chart its moment
        main.locator("[data-testid='stPlotlyChart'] .main-svg").first.wait_for(timeout=15_000)
    except Exception as exc:  # Playwright's TimeoutError: flagged below as "no figure"
        if "Timeout" not in type(exc).__name__:
            raise
    heading = main.locator("[data-testid='stHeading']").filter(has_text=re.compile(rf"^\s*{step}\.")).first
    formula = main.locator(".katex-display").first
    figure = main.locator("[data-testid='stPlotlyChart']").first
    for what, loc in (("heading", heading), ("formula", formula), ("figure", figure)):
        if loc.count() == 0:
            flags.append(f"no {what}")
            continue
        why = browser.cut_off(page, loc)
        if why:
            flags.append(f"{what} cut off: {why}")
    return flags


def _first_figure_flags(page: object) -> list[str]:
    panel = page.get_by_role("tabpanel").filter(visible=True)
    figure = panel.locator("[data-testid='stPlotlyChart']").first
    if figure.count() == 0:
        return ["no figure in this tab"]
    why = browser.cut_off(page, figure)
    return [f"first figure cut off: {why}"] if why else []


def rehearse(base_url: str, width: int, height: int, out: Path, chromium: object, bench: bool) -> list[Screen]:
    size = f"{width}x{height}"
    screens: list[Screen] = []
    context = chromium.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(60_000)
    page = context.new_page()

    def timed(name: str, action: object, check: object = None, timeout: float = 180_000) -> Screen:
        t0 = time.perf_counter()
        action()
        _wait_charts(page, timeout)
        seconds = time.perf_counter() - t0
        flags = _common_flags(page) + (check() if check else [])
        _shot(page, out, size, name)
        s = Screen(size, name, seconds, flags)
        screens.append(s)
        print(f"{size:>9}  {name:28} {seconds:6.2f} s  {'; '.join(flags) if flags else 'ok'}", flush=True)
        return s

    def goto(path: str) -> None:
        page.goto(base_url + path, wait_until="domcontentloaded")
        browser.wait_idle(page, timeout=180_000)

    try:
        timed("home", lambda: goto("/?talk=true"))
        timed("walkthrough-step0", lambda: goto(WALKTHROUGH), lambda: _step_flags(page, 0))
        for step in range(1, 6):

            def press() -> None:
                page.evaluate("document.activeElement && document.activeElement.blur()")  # keys go to the page
                browser.rerun(page, lambda: page.keyboard.press("ArrowRight"))

            timed(f"walkthrough-step{step}", press, lambda step=step: _step_flags(page, step))

        def open_explorer() -> None:
            goto("/scaling?talk=true")

        timed("explorer-tab0", open_explorer, lambda: _first_figure_flags(page))
        labels = [t.strip() for t in page.get_by_role("tab").all_inner_texts()]
        for i, label in enumerate(labels[1:], start=1):
            tab = page.get_by_role("tab", name=label, exact=True)
            timed(f"explorer-tab{i}", lambda tab=tab: browser.rerun(page, tab.click, timeout=180_000),
                  lambda: _first_figure_flags(page))  # fmt: skip

        if bench:
            timed("benchmark", lambda: goto("/benchmark?talk=true"))

            def run_bench() -> None:
                browser.rerun(page, page.locator(".st-key-bm_run button").click, timeout=BENCH_TIMEOUT_MS)

            def chart_flags() -> list[str]:
                tabs = _main(page).locator("[data-testid='stTabs']").first
                if tabs.count() == 0:
                    return ["no result tabs after the run"]
                tabs.scroll_into_view_if_needed()
                chart = tabs.locator("[data-testid='stPlotlyChart']").first
                if chart.count() == 0:
                    return ["no result chart after the run"]
                page.evaluate("el => el.scrollIntoView({block: 'start'})", tabs.element_handle())
                why = browser.cut_off(page, chart)
                return [f"result chart cut off: {why}"] if why else []

            timed("benchmark-run", run_bench, chart_flags, timeout=BENCH_TIMEOUT_MS)
    finally:
        context.close()
    return screens


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("rehearsal"), help="folder for the screenshots")
    ap.add_argument("--sizes", nargs="+", default=["1280x720", "1920x1080"], help="viewports, WIDTHxHEIGHT")
    ap.add_argument("--skip-benchmark", action="store_true", help="leave out the benchmark run")
    ap.add_argument("--url", help="rehearse against this running app instead of starting one")
    args = ap.parse_args(argv)
    sizes = []
    for s in args.sizes:
        m = re.fullmatch(r"(\d{3,5})x(\d{3,5})", s)
        if not m:
            ap.error(f"a size is WIDTHxHEIGHT, like 1280x720; got {s!r}")
        sizes.append((int(m.group(1)), int(m.group(2))))
    args.out.mkdir(parents=True, exist_ok=True)

    from playwright.sync_api import sync_playwright

    screens: list[Screen] = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        server = None if args.url else browser.start_server(Path(tmp) / "rehearsal.log")
        base = args.url.rstrip("/") if args.url else server.base_url
        chromium = browser.launch_chromium(p)
        try:
            print(f"{'size':>9}  {'screen':28} {'time':>8}  flags")
            for w, h in sizes:
                screens += rehearse(base, w, h, args.out, chromium, not args.skip_benchmark)
        finally:
            chromium.close()
            if server is not None:
                server.stop()
    flagged = [s for s in screens if s.flags]
    print(f"\n{len(screens)} screens, {len(flagged)} flagged; screenshots in {args.out}/")
    for s in flagged:
        print(f"  {s.size} {s.name}: {'; '.join(s.flags)}")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
