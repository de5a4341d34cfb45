"""The app in a real browser: `streamlit run` on a free localhost port, driven by headless Chromium.

Used by the browser tests (their fixtures are in ``tests/conftest.py``) and by the scripts that time
or rehearse the app (``latency.py``, ``rehearsal.py``, ``memory.py``). Also what a presenter sees,
read from the layout: :func:`heatmap_text_problems` (no two cell numbers of a heatmap overlap, none
runs past its plot) and :func:`cut_off` (an element past the window's edge).

``CHROMIUM_PATH`` names the Chromium binary (default: Debian's ``/usr/bin/chromium``).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # Playwright is imported lazily, so the rest of the suite runs without it.
    from playwright.sync_api import Browser, Locator, Page, Playwright

ROOT = Path(__file__).resolve().parents[2]

DEFAULT_CHROMIUM = "/usr/bin/chromium"  # Debian's package; override with CHROMIUM_PATH
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]

# Streamlit's frontend marks the app root with the script's run state ("initial", "running",
# "rerunRequested", "notRunning", ...); "notRunning" means the last run has finished.
APP = "[data-testid='stApp']"
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
SPINNER = "[data-testid='stSpinner']"
EXCEPTION = "[data-testid='stException']"
ALERT = "[data-testid='stAlert']"

VIEWPORT = {"width": 1400, "height": 1000}
TALK_VIEWPORT = {"width": 1280, "height": 720}
PHONE_VIEWPORT = {"width": 390, "height": 844}
TABLET_VIEWPORT = {"width": 768, "height": 1024}

# Lines the server logs when a page raised (Streamlit logs every uncaught script exception).
_LOGGED_ERROR = re.compile(r"Uncaught app (exception|execution)|Traceback \(most recent call last\)")
# A traceback (its indented frames) that ends in starlette's WebSocketDisconnected.
_WEBSOCKET_CLOSED = re.compile(
    r"^Traceback \(most recent call last\):\n(?:[ \t].*\n)+starlette\.websockets\.WebSocketDisconnected: .*$",
    re.MULTILINE,
)


# --------------------------------------------------------------------------------------------
# The server


def free_port() -> int:
    """A port the OS reports free right now (bind to port 0, read it back, release it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class StreamlitServer:
    """A running ``streamlit run app.py``; its output goes to ``log_path``."""

    process: subprocess.Popen[bytes]
    port: int
    log_path: Path
    _log_file: Any = field(repr=False)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "/") -> str:
        return self.base_url + (path if path.startswith("/") else "/" + path)

    def healthy(self, timeout: float = 2.0) -> bool:
        """Whether ``/_stcore/health`` answers "ok"."""
        try:
            with urllib.request.urlopen(self.url("/_stcore/health"), timeout=timeout) as r:
                return r.status == 200 and r.read().strip() == b"ok"
        except (urllib.error.URLError, OSError):
            return False

    def log_mark(self) -> int:
        """The log's current length, to read only what a test added with :meth:`log_since`."""
        self._log_file.flush()
        return self.log_path.stat().st_size

    def log_since(self, mark: int) -> str:
        self._log_file.flush()
        with self.log_path.open("rb") as f:
            f.seek(mark)
            return f.read().decode("utf-8", "replace")

    def logged_errors(self, mark: int) -> list[str]:
        """Lines since ``mark`` saying a page raised an uncaught exception.

        One traceback is not the app's: when a browser context closes while its websocket is still
        opening, Streamlit's own websocket endpoint logs starlette's ``WebSocketDisconnected``. Those
        tracebacks (and only those) are left out; every other one counts.
        """
        text = _WEBSOCKET_CLOSED.sub("", self.log_since(mark))
        return [line for line in text.splitlines() if _LOGGED_ERROR.search(line)]

    def stop(self) -> None:
        """Terminate, give it a few seconds to exit, then kill."""
        try:
            if self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(timeout=10)
        finally:
            self._log_file.close()


def start_server(
    log_path: Path, *, timeout: float = 90.0, env: dict[str, str] | None = None,
    preexec: Callable[[], None] | None = None,
) -> StreamlitServer:
    """Start ``streamlit run app.py`` from the repo root on a free port; return once it is healthy.

    ``preexec`` runs in the child before streamlit starts (``audience.py`` moves it into a memory cgroup).
    """  # fmt: skip
    port = free_port()
    cmd = [
        sys.executable, "-m", "streamlit", "run", "app.py",
        "--server.port", str(port),
        "--server.headless", "true",
        "--server.address", "127.0.0.1",
        "--browser.gatherUsageStats", "false",
        "--server.fileWatcherType", "none",  # CI's clone holds .venv: watching it overflows inotify
    ]  # fmt: skip
    log_file = log_path.open("ab")
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})}, preexec_fn=preexec,
    )  # fmt: skip
    server = StreamlitServer(proc, port, log_path, log_file)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            server.stop()
            tail = log_path.read_text("utf-8", "replace")[-2000:]
            raise RuntimeError(f"streamlit exited with code {proc.returncode} before it was healthy:\n{tail}")
        if server.healthy(timeout=1.0):
            return server
        time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"streamlit did not answer /_stcore/health within {timeout:.0f} s (log: {log_path})")


# --------------------------------------------------------------------------------------------
# The browser


def chromium_path() -> str:
    return os.environ.get("CHROMIUM_PATH", DEFAULT_CHROMIUM)


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None when Playwright and Chromium are present."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install -r requirements-dev.txt)"
    path = chromium_path()
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        return f"no Chromium at {path} (install Debian's chromium, or set CHROMIUM_PATH)"
    return None


def launch_chromium(playwright: Playwright) -> Browser:
    return playwright.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)


def _idle_now(page: Page) -> bool:
    return bool(
        page.evaluate(
            """([idle, spinner]) => document.querySelector(idle) !== null
                                    && document.querySelector(spinner) === null""",
            [IDLE, SPINNER],
        )
    )


def wait_idle(page: Page, timeout: float = 60_000, settle_ms: int = 150) -> None:
    """Wait until the script has finished its run and no spinner is left.

    The state must hold for ``settle_ms`` too, so a rerun that a widget has just requested (and
    that has not reached the frontend yet) is not mistaken for the end of the previous one.
    """
    deadline = time.monotonic() + timeout / 1000
    while True:
        left = max(1.0, (deadline - time.monotonic()) * 1000)
        page.wait_for_selector(IDLE, state="attached", timeout=left)
        page.wait_for_function("sel => document.querySelector(sel) === null", arg=SPINNER, timeout=left, polling=50)
        page.wait_for_timeout(settle_ms)
        if _idle_now(page):
            return
        if time.monotonic() > deadline:
            raise TimeoutError("the app did not settle into an idle state")


_WATCH_RUNS = """sel => {
    const app = document.querySelector(sel);
    window.__stRunSeen = false;
    if (window.__stRunObserver) window.__stRunObserver.disconnect();
    window.__stRunObserver = new MutationObserver(() => {
        if (app.getAttribute('data-test-script-state') !== 'notRunning') window.__stRunSeen = true;
    });
    window.__stRunObserver.observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
}"""


def rerun(page: Page, action: Callable[[], object], timeout: float = 60_000) -> None:
    """Do ``action`` (a click, a key press) and wait for the rerun it triggers to finish.

    A MutationObserver records that the run state left "notRunning", so a fast rerun is not missed;
    if none is seen within 3 s the action did not rerun the script and we only wait for idle.
    """
    page.evaluate(_WATCH_RUNS, APP)
    action()
    try:
        page.wait_for_function("() => window.__stRunSeen === true", timeout=3_000, polling=20)
    except Exception as exc:  # Playwright's TimeoutError: no rerun was triggered
        if "Timeout" not in type(exc).__name__:
            raise
    wait_idle(page, timeout=timeout)


def goto(page: Page, server: StreamlitServer, path: str, timeout: float = 60_000) -> None:
    """Open ``path`` (e.g. "/walkthrough?step=2") and wait until the page is idle."""
    page.goto(server.url(path), wait_until="domcontentloaded", timeout=timeout)
    wait_idle(page, timeout=timeout)


def exception_texts(page: Page) -> list[str]:
    """The text of every exception box on the page (none is the only good answer)."""
    return [t.strip()[:500] for t in page.locator(EXCEPTION).all_inner_texts()]


def screenshot(page: Page, folder: Path, name: str) -> Path:
    """Save the viewport as ``folder/name.png``, after charts have had a moment to draw."""
    page.wait_for_timeout(400)
    path = folder / f"{name}.png"
    page.screenshot(path=str(path))
    return path


# --------------------------------------------------------------------------------------------
# What a presenter sees

# Boxes are compared with this much slack (px): anti-aliasing makes touching glyph boxes overlap by a hair.
SLACK = 0.5

_TEXT_BOXES = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map((plot, i) => {
    const r = e => { const b = e.getBoundingClientRect(); return {x: b.left, y: b.top, w: b.width, h: b.height}; };
    const texts = Array.from(plot.querySelectorAll('g.heatmap-label text'))
        .filter(t => (t.textContent || '').trim() !== '')
        .map(t => ({text: t.textContent, ...r(t)}));
    const areas = Array.from(plot.querySelectorAll('.draglayer .nsewdrag')).map(r);
    return {index: i, texts, areas};
})"""


def _intersect(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["x"] + SLACK < b["x"] + b["w"]
        and b["x"] + SLACK < a["x"] + a["w"]
        and a["y"] + SLACK < b["y"] + b["h"]
        and b["y"] + SLACK < a["y"] + a["h"]
    )


def _inside(t: dict[str, float], area: dict[str, float]) -> bool:
    return (
        t["x"] >= area["x"] - SLACK
        and t["y"] >= area["y"] - SLACK
        and t["x"] + t["w"] <= area["x"] + area["w"] + SLACK
        and t["y"] + t["h"] <= area["y"] + area["h"] + SLACK
    )


def heatmap_boxes(page: Page) -> list[dict[str, Any]]:
    """Per plotly figure on the page: its cell numbers' boxes and its plot areas (viewport px)."""
    return page.evaluate(_TEXT_BOXES)


def heatmap_text_problems(page: Page) -> list[str]:
    """Sentences describing every overlapping or clipped cell number; empty when all is well."""
    problems: list[str] = []
    for fig in heatmap_boxes(page):
        texts, areas = fig["texts"], fig["areas"]
        for i, a in enumerate(texts):
            for b in texts[i + 1 :]:
                if _intersect(a, b):
                    problems.append(f"figure {fig['index']}: “{a['text']}” overlaps “{b['text']}”")
            if areas and not any(_inside(a, area) for area in areas):
                problems.append(f"figure {fig['index']}: “{a['text']}” runs past the plot area")
    return problems


def cut_off(page: Page, element: Locator) -> str | None:
    """Why ``element`` is not wholly inside the window as it is scrolled now, or None if it is."""
    box = element.bounding_box()
    if box is None:
        return "not on the page"
    height = page.viewport_size["height"] if page.viewport_size else page.evaluate("window.innerHeight")
    if box["y"] < -1:
        return f"its top is {-box['y']:.0f} px above the window"
    bottom = box["y"] + box["height"]
    if bottom > height + 1:
        return f"its bottom is {bottom - height:.0f} px below the window ({bottom:.0f} > {height})"
    return None


_TOO_WIDE = """() => {
    const W = document.documentElement.clientWidth, out = [];
    const name = e => { const t = e.closest('[data-testid]'); return t ? t.getAttribute('data-testid') : e.tagName; };
    const scrolls = e => { for (let a = e.parentElement; a; a = a.parentElement) {
        const o = getComputedStyle(a).overflowX;
        if ((o === 'auto' || o === 'scroll') && a.getBoundingClientRect().right <= W + 1) return true;
    } return false; };
    const main = document.querySelector("[data-testid='stMain']");
    for (const e of main.querySelectorAll('*')) {
        const r = e.getBoundingClientRect();
        if (r.width === 0 || r.height === 0 || e.closest('.js-plotly-plot svg, .katex-html')) continue;
        if ((r.right > W + 1 || r.left < -1) && !scrolls(e))
            out.push(`${name(e)} spans ${r.left.toFixed(0)}…${r.right.toFixed(0)} px`);
    }
    const ctx = document.createElement('canvas').getContext('2d');
    const width = (e, text) => {
        const cs = getComputedStyle(e);
        ctx.font = `${cs.fontStyle} ${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
        return ctx.measureText(text).width;
    };
    for (const l of main.querySelectorAll("[data-testid='stMarkdownContainer']")) {
        if (l.clientWidth === 0) continue;  // a collapsed (hidden) label
        const text = l.innerText.trim(), p = l.querySelector('p') || l;
        if (getComputedStyle(l).textOverflow === 'ellipsis' && width(p, text) > l.clientWidth + 1)
            out.push(`“${text}” is cut off`);
        if (l.closest("[data-testid='stWidgetLabel']")
            && Math.max(0, ...text.split(/\\s+/).map(w => width(p, w))) > l.clientWidth + 1)
            out.push(`label “${text}” breaks inside a word`);
    }
    for (const k of main.querySelectorAll('.katex-display')) {
        const o = getComputedStyle(k).overflowX;
        if (k.scrollWidth > k.clientWidth + 1 && o !== 'auto' && o !== 'scroll')
            out.push(`a formula is ${k.scrollWidth - k.clientWidth} px wider than its box`);
    }
    return [...new Set(out)];
}"""


def too_wide(page: Page) -> list[str]:
    """What does not fit the window's width: an element past its edge (one in a box that scrolls sideways
    is fine), a widget label cut off or broken inside a word, a formula wider than its box. Empty is good."""
    return page.evaluate(_TOO_WIDE)
