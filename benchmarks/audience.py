"""A talk's audience at once: N viewers open the shared link against a real ``streamlit run app.py``.

Each simulated viewer does what a phone in the room does:

1. fetches the page's HTML and the static files a real Chromium fetched for that page (recorded at
   the start, gzip asked for, as a browser asks), while
2. it opens Streamlit's websocket (``/_stcore/stream``) and sends the browser's first message, a
   ``rerun_script`` ``BackMsg`` with the page's name and the link's query string, then reads every
   ``ForwardMsg`` until ``script_finished``: that moment is "a finished page";
3. changes two or three widgets as a listener would (the walkthrough's Next, a slider, the model
   page's sentence, else a choice), each a ``rerun_script`` with the new widget state, waiting for
   each run to finish;
4. stays on the page until everyone has finished, then leaves (closes its websocket).

Errors: an exception element or an ``st.error`` box in any run, a run that did not finish within
``--timeout``, a websocket the server closed, or the server itself gone. Every page of ``app.py``'s
navigation is visited (read from app.py, so new pages are included); viewer i opens page i + 1 mod pages
(a lone viewer opens the walkthrough, the home page comes last).

Before the viewers arrive the presenter opens every page once in headless Chromium (the app warm, as
before a talk); that visit also records which static files each page loads. Without Playwright or
Chromium a simulated presenter does it and only the files named in the HTML are fetched. ``--cold``
leaves the warm-up out.

Printed, one row per audience size, side by side in one run: viewers, errors, time to a finished page
(median, p95, max), time of a widget change (median, p95), server RSS before / peak / with everyone on
their page / after all left, the cost per viewer ((RSS with everyone − before) ÷ N) and the CPU time
this simulator itself took (it shares the machine with the server; a real audience's phones do not).

    python benchmarks/audience.py                          # 1, 10, 50, 100 viewers arriving within 30 s
    python benchmarks/audience.py --viewers 50 --arrive 30
    python benchmarks/audience.py --memory-limit 2.7G      # the server in a memory cgroup, as on the Cloud
    python benchmarks/audience.py --both                   # every size without, then with, the 2.7G limit
    python benchmarks/audience.py --validate               # beside real Chromium pages, quiet and in a crowd
    python benchmarks/audience.py --heavy                  # heavy buttons pressed while viewers arrive

Disconnected sessions are dropped after ``--session-ttl`` seconds (10 here; Streamlit's default is 120 s,
which would only make the run longer): "after" is read once they are gone.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import os
import random
import re
import statistics
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support import browser  # noqa: E402
from tests.support.widgets import discover_pages  # noqa: E402

# The link a presenter shares for a page, beyond its path (a page not named here is opened plain).
LINKS = {"walkthrough": "preset=sentence&mask=causal"}
SENTENCES = [
    "The cat sat on the mat because it was tired.",
    "A river bank is not a savings bank.",
    "She gave him the book that he had lent her.",
    "The trophy did not fit in the case because it was too big.",
]
# Buttons a listener presses; every other button (Run, Measure again, Forget...) starts work, see --heavy.
LISTENER_BUTTONS = re.compile(r"next|previous|◀|▶", re.IGNORECASE)
# page → (its link's query, the key of the button that starts heavy work); None: a listener's change of a
# setting starts it (the √d_k explorer's Training tab trains two toy models for every new setting).
HEAVY = {
    "benchmark": ("", "bm_run"), "efficient": ("ef_tab=Cost", "ef_run"), "heads": ("hd_tab=Decode", "hd_measure"),
    "scaling": ("sc_tab=Training", None),
}  # fmt: skip
QUEUED = re.compile(r"busy, queued", re.IGNORECASE)


# --------------------------------------------------------------------------------------------
# The pages


@dataclass(frozen=True)
class Link:
    page: str  # the script's stem ("walkthrough"): the name viewers are counted under
    url_path: str  # "" for the default page
    query: str

    @property
    def path(self) -> str:
        return "/" + self.url_path + ("?" + self.query if self.query else "")


def links() -> list[Link]:
    """One shared link per page of app.py's navigation, in its order."""
    out = []
    for name, (_script, url) in discover_pages().items():
        out.append(Link(name, url.strip("/"), LINKS.get(name, "")))
    return out


# --------------------------------------------------------------------------------------------
# One viewer, speaking Streamlit's protocol


@dataclass
class Widget:
    id: str
    kind: str
    proto: Any
    sidebar: bool

    @property
    def key(self) -> str:
        return self.id.rsplit("-", 1)[-1]

    @property
    def label(self) -> str:
        return str(getattr(self.proto, "label", ""))


@dataclass
class Run:
    seconds: float
    finished: bool
    errors: list[str]
    widgets: dict[str, Widget]
    texts: list[str]


@dataclass
class Viewer:
    index: int
    link: Link
    arrive_s: float
    page_s: float | None = None
    change_s: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    assets_s: float | None = None
    queued_seen: bool = False
    done: bool = False
    changed: list[str] = field(default_factory=list)


def _element_errors(el: Any, kind: str) -> list[str]:
    if kind == "exception":
        return [f"exception: {el.type}: {el.message[:200]}"]
    if kind == "alert" and el.format == el.ERROR:
        return [f"error box: {el.body[:200]}"]
    return []


def _texts(el: Any, kind: str) -> list[str]:
    if kind in ("markdown", "alert"):
        return [el.body]
    return []


class Session:
    """One websocket session: send a run, read the ForwardMsgs until the script finishes."""

    def __init__(self, ws: Any, link: Link) -> None:
        self.ws = ws
        self.link = link
        self.page_hash = ""
        self.query = link.query  # the address bar's query string: the server rewrites it as bound widgets change

    async def run(self, states: list[Any], timeout: float) -> Run:
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        msg = BackMsg()
        cs = msg.rerun_script
        cs.query_string = self.query
        cs.page_script_hash = self.page_hash
        cs.page_name = "" if self.page_hash else self.link.url_path
        for s in states:
            cs.widget_states.widgets.append(s)
        start = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        errors: list[str] = []
        widgets: dict[str, Widget] = {}
        texts: list[str] = []
        deadline = start + timeout
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                return Run(time.perf_counter() - start, False, [*errors, f"no finished page within {timeout:.0f} s"],
                           widgets, texts)  # fmt: skip
            try:
                data = await asyncio.wait_for(self.ws.recv(), left)
            except TimeoutError:
                continue
            fwd = ForwardMsg()
            fwd.ParseFromString(data)
            kind = fwd.WhichOneof("type")
            if kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                el_kind = fwd.delta.new_element.WhichOneof("type")
                el = getattr(fwd.delta.new_element, el_kind)
                errors += _element_errors(el, el_kind)
                texts += _texts(el, el_kind)
                wid = getattr(el, "id", "")
                if isinstance(wid, str) and wid.startswith("$$ID-"):
                    widgets[wid] = Widget(wid, el_kind, el, fwd.metadata.delta_path[0] == 1)
            elif kind == "delta" and fwd.delta.WhichOneof("type") == "add_block":
                block = fwd.delta.add_block
                if block.WhichOneof("type") == "expandable":
                    texts.append(block.expandable.label)
            elif kind == "page_info_changed":
                self.query = fwd.page_info_changed.query_string
            elif kind == "navigation":
                self.page_hash = fwd.navigation.page_script_hash
            elif kind == "script_finished":
                if fwd.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    continue  # the page asked for a rerun (st.rerun, a tab's on_change): the next run follows
                ok = fwd.script_finished in (ForwardMsg.FINISHED_SUCCESSFULLY,)
                if not ok:
                    errors.append(f"script finished with status {fwd.script_finished}")
                return Run(time.perf_counter() - start, ok, errors, widgets, texts)


def _state_for_change(w: Widget, rng: random.Random) -> Any | None:
    """The WidgetState a listener's change of ``w`` sends, or None if it is not a widget a listener changes."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    s = WidgetState(id=w.id)
    p = w.proto
    if w.kind == "button":
        if not LISTENER_BUTTONS.search(w.label) or p.disabled:
            return None
        s.trigger_value = True
    elif w.kind == "slider":
        values = [int(x) for x in (p.value if p.set_value else p.default)]
        if p.disabled or not values:
            return None
        if len(p.options):  # a select_slider: its options' labels
            i = values[0] + 1 if values[0] + 1 < len(p.options) else values[0] - 1
            s.string_array_value.data[:] = [p.options[i], *(p.options[j] for j in values[1:])]
        else:
            now = list(p.value if p.set_value else p.default)
            v = now[0] + (p.step or 1)
            v = v if v <= p.max else now[0] - (p.step or 1)
            s.double_array_value.data[:] = [v, *now[1:]]
    elif w.kind == "checkbox":
        if p.disabled:
            return None
        s.bool_value = not (p.value if p.set_value else p.default)
    elif w.kind == "number_input":
        if p.disabled:
            return None
        now = p.value if p.set_value else p.default
        v = now + (p.step or 1)
        v = v if not p.has_max or v <= p.max else now - (p.step or 1)
        if p.data_type == p.INT:
            s.int_value = int(v)
        else:
            s.double_value = v
    elif w.kind == "button_group":
        opts = [o.content for o in p.options]
        if len(opts) < 2 or p.disabled:
            return None
        now = list(p.default)
        s.string_array_value.data[:] = [opts[(now[0] + 1) % len(opts) if now else 0]]
    elif w.kind == "text_input":
        s.string_value = rng.choice(SENTENCES) + f" ({rng.randrange(10**6)})"
    elif w.kind in ("selectbox", "radio"):
        opts = list(p.options)
        if len(opts) < 2 or p.disabled:
            return None
        now = p.default if p.HasField("default") else 0
        s.string_value = opts[(now + 1) % len(opts)]
    else:
        return None
    return s


def plan_changes(widgets: dict[str, Widget], rng: random.Random, count: int) -> list[Widget]:
    """Two or three widgets a listener would change: Next first, then a slider, the sentence, a choice, a switch."""
    mine = [w for w in widgets.values() if not w.sidebar and not getattr(w.proto, "disabled", False)]
    order = [
        [w for w in mine if w.kind == "button" and LISTENER_BUTTONS.search(w.label) and "next" in w.label.lower()],
        [w for w in mine if w.kind == "slider"],
        [w for w in mine if w.kind == "text_input"],
        [w for w in mine if w.kind in ("selectbox", "radio", "button_group")],
        [w for w in mine if w.kind in ("checkbox", "number_input")],
    ]
    picked: list[Widget] = []
    for group in order:
        if group and len(picked) < count:
            picked.append(rng.choice(group))
    return picked


def _fetch(url: str) -> int:
    req = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return len(r.read())


async def fetch_assets(base: str, paths: list[str]) -> None:
    """The page's HTML and static files, six at a time as a browser fetches from one host."""
    sem = asyncio.Semaphore(6)

    async def one(p: str) -> None:
        async with sem:
            await asyncio.to_thread(_fetch, base + p)

    await asyncio.gather(*(one(p) for p in paths))


async def visit(v: Viewer, server: browser.StreamlitServer, assets: list[str], changes: int, timeout: float,
                everyone_done: asyncio.Event, t0: float, seed: int, heavy: bool = False) -> None:  # fmt: skip
    import websockets

    rng = random.Random(seed * 7919 + v.index)
    await asyncio.sleep(max(0.0, t0 + v.arrive_s - time.perf_counter()))
    start = time.perf_counter()
    try:
        files = asyncio.create_task(fetch_assets(server.base_url, [v.link.path, *assets]))
        url = f"ws://127.0.0.1:{server.port}/_stcore/stream"
        async with websockets.connect(url, subprotocols=["streamlit"], max_size=None, open_timeout=timeout,
                                      ping_interval=None) as ws:  # fmt: skip
            session = Session(ws, v.link)
            first = await session.run([], timeout)
            await files
            v.assets_s = time.perf_counter() - start
            v.errors += first.errors
            if first.finished:
                v.page_s = time.perf_counter() - start
            widgets = first.widgets
            button = HEAVY[v.link.page][1] if heavy else None
            plan = [w for w in widgets.values() if w.key == button] if button else plan_changes(widgets, rng, changes)
            for w in plan:
                state = _trigger(w) if button else _state_for_change(w, rng)
                if state is None:
                    continue
                await asyncio.sleep(rng.uniform(0.5, 2.0))  # a listener reads before touching
                r = await session.run([state], timeout if not heavy else 15 * 60)
                v.errors += r.errors
                v.queued_seen |= any(QUEUED.search(t) for t in r.texts)
                v.changed.append(w.key)
                if r.finished:
                    v.change_s.append(r.seconds)
                widgets.update(r.widgets)
            v.done = True
            await everyone_done.wait()
    except Exception as exc:  # a refused or dropped connection: the viewer's session failed
        v.errors.append(f"session failed: {type(exc).__name__}: {str(exc)[:200]}")
    finally:
        v.done = True


def _trigger(w: Widget) -> Any:
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    return WidgetState(id=w.id, trigger_value=True)


# --------------------------------------------------------------------------------------------
# The server's memory


def rss_mb(pid: int) -> tuple[float, float]:
    """VmRSS and VmHWM (the peak since start, or since :func:`reset_peak`) of ``pid``, in MB; 0 once it ended."""
    out = {"VmRSS": 0.0, "VmHWM": 0.0}
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:  # the process has ended (killed, in --memory-limit runs)
        text = ""
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(rest.split()[0]) / 1024
    return out["VmRSS"], out["VmHWM"]


PEAK_RESETS: list[bool] = []


def reset_peak(pid: int) -> None:
    """Start VmHWM afresh (Linux: "5" to clear_refs), so the peak read later is the audience's alone."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        PEAK_RESETS[:] = [True]
    except OSError:  # not permitted: the peak is the largest of the samples taken every 0.2 s
        PEAK_RESETS[:] = []


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*([\d.]+)\s*([KMGT]?)i?B?\s*", text, re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError(f"a size such as 2.7G, not {text!r}")
    return int(float(m[1]) * 1024 ** " KMGT".index((m[2] or " ").upper()))


class MemoryCgroup:
    """A child memory cgroup (v1 controller, else v2) with a hard limit, for the server to run in."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.path: Path | None = None
        self.v2 = False

    def create(self) -> str | None:
        """Make the group; None when it worked, else one sentence saying why it could not."""
        name = f"audience-{os.getpid()}"
        v1 = Path("/sys/fs/cgroup/memory")
        try:
            if (v1 / "memory.limit_in_bytes").exists():
                own = next(line.split(":", 2)[2] for line in Path("/proc/self/cgroup").read_text().splitlines()
                           if line.split(":")[1] == "memory")  # fmt: skip
                self.path = v1 / own.lstrip("/") / name
                self.path.mkdir()
                (self.path / "memory.limit_in_bytes").write_text(str(self.limit))
                swap = self.path / "memory.memsw.limit_in_bytes"
                if swap.exists():  # no swapping past the limit either, as on the Cloud
                    swap.write_text(str(self.limit))
                return None
            v2 = Path("/sys/fs/cgroup")
            if (v2 / "cgroup.controllers").exists():
                own = next(line.split(":", 2)[2] for line in Path("/proc/self/cgroup").read_text().splitlines()
                           if line.startswith("0::"))  # fmt: skip
                self.path = v2 / own.lstrip("/") / name
                self.path.mkdir()
                self.v2 = True
                (self.path / "memory.max").write_text(str(self.limit))
                (self.path / "memory.swap.max").write_text("0")
                return None
            return "no memory cgroup controller is mounted under /sys/fs/cgroup"
        except (OSError, StopIteration) as exc:
            self.path = None
            return f"the memory cgroup could not be written ({type(exc).__name__}: {exc})"

    def enter(self) -> None:
        """Run in the child before exec: move this process into the group."""
        assert self.path is not None
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def peak_mb(self) -> float:
        assert self.path is not None
        f = "memory.peak" if self.v2 else "memory.max_usage_in_bytes"
        p = self.path / f
        return int(p.read_text()) / 2**20 if p.exists() else float("nan")

    def reset_peak(self) -> None:
        assert self.path is not None
        with contextlib.suppress(OSError):
            (self.path / ("memory.peak" if self.v2 else "memory.max_usage_in_bytes")).write_text("0")

    def oom_kills(self) -> int:
        assert self.path is not None
        p = self.path / ("memory.events" if self.v2 else "memory.oom_control")
        for line in p.read_text().splitlines():
            k, _, v = line.partition(" ")
            if k == "oom_kill":
                return int(v)
        return 0

    def remove(self) -> None:
        if self.path is not None:
            with contextlib.suppress(OSError):
                self.path.rmdir()


# --------------------------------------------------------------------------------------------
# The presenter's warm-up, which also records each page's static files


def record_assets_and_warm(server: browser.StreamlitServer, pages: list[Link]) -> dict[str, list[str]]:
    """Open every page in headless Chromium; return the same-host static files each one fetched."""
    from playwright.sync_api import sync_playwright

    seen: dict[str, list[str]] = {}
    with sync_playwright() as pw:
        b = browser.launch_chromium(pw)
        for link in pages:
            ctx = b.new_context(viewport={"width": 390, "height": 844})  # a phone, with an empty cache
            page = ctx.new_page()
            got: list[str] = []
            page.on("request", lambda r, got=got: got.append(r.url))
            browser.goto(page, server, link.path, timeout=180_000)
            page.wait_for_timeout(500)
            ctx.close()
            paths = []
            for u in got:
                parts = urlsplit(u)
                if parts.port == server.port and parts.path.startswith("/static/"):
                    paths.append(parts.path)
            seen[link.page] = sorted(set(paths))
        b.close()
    return seen


def assets_from_html(server: browser.StreamlitServer) -> list[str]:
    """Without Chromium: the static files the HTML names (the lazy chunks a page loads later are missed)."""
    with urllib.request.urlopen(server.url("/"), timeout=60) as r:
        html = r.read()
        if r.headers.get("Content-Encoding") == "gzip":
            html = gzip.decompress(html)
    return sorted(set(re.findall(r'(?:src|href)="\.?(/?static/[^"]+)"', html.decode())))


async def simulated_warm_up(server: browser.StreamlitServer, pages: list[Link], timeout: float) -> None:
    for i, link in enumerate(pages):
        v = Viewer(i, link, 0.0)
        ev = asyncio.Event()
        ev.set()
        await visit(v, server, [], 0, timeout, ev, time.perf_counter(), 0)
        if v.errors:
            print(f"  warm-up, {link.path}: {v.errors[0]}")


# --------------------------------------------------------------------------------------------
# One audience


@dataclass
class Result:
    viewers: int
    limit: str
    viewers_list: list[Viewer]
    before: float
    peak: float
    held: float
    after: float
    cg_peak: float | None
    killed: bool
    client_cpu_s: float
    wall_s: float

    @property
    def errors(self) -> int:
        return sum(1 for v in self.viewers_list if v.errors) + (1 if self.killed else 0)


def _pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


def start(log: Path, ttl: int, cgroup: MemoryCgroup | None) -> browser.StreamlitServer:
    env = {"STREAMLIT_SERVER_DISCONNECTED_SESSION_TTL": str(ttl)}
    return browser.start_server(log, timeout=120, env=env, preexec=cgroup.enter if cgroup else None)


def audience(n: int, args: argparse.Namespace, pages: list[Link], tmp: Path, limit: str) -> Result:
    cgroup = None
    if args.memory_limit:
        cgroup = MemoryCgroup(args.memory_limit)
        why = cgroup.create()
        if why:
            print(f"Skipping the memory limit: {why}.")
            cgroup, limit = None, "none (skipped)"
    server = start(tmp / f"server-{n}-{limit}.log", args.session_ttl, cgroup)
    try:
        assets: dict[str, list[str]] = {}
        if not args.cold:
            if browser.browser_missing() is None:
                assets = record_assets_and_warm(server, pages)
            else:
                asyncio.run(simulated_warm_up(server, pages, args.timeout))
        if not assets:
            html = assets_from_html(server)
            assets = {p.page: html for p in pages}
        time.sleep(args.session_ttl + 3)  # the presenter's sessions are dropped
        reset_peak(server.process.pid)
        if cgroup:
            cgroup.reset_peak()
        before, _ = rss_mb(server.process.pid)
        mark = server.log_mark()
        rng = random.Random(args.seed + n)
        arrive = 0.0 if n == 1 else args.arrive
        viewers = [Viewer(i, pages[(i + 1) % len(pages)], rng.uniform(0, arrive)) for i in range(n)]
        peak = [before]
        held = [before]
        cpu0 = time.process_time()
        t_start = time.perf_counter()

        async def main() -> None:
            done = asyncio.Event()
            t0 = time.perf_counter()
            tasks = [asyncio.create_task(visit(v, server, assets.get(v.link.page, []), rng.choice((2, 3)),
                                               args.timeout, done, t0, args.seed)) for v in viewers]  # fmt: skip
            while not all(v.done for v in viewers):
                if server.process.poll() is not None:
                    break
                peak[0] = max(peak[0], rss_mb(server.process.pid)[0])
                await asyncio.sleep(0.2)
            if server.process.poll() is None:
                held[0] = rss_mb(server.process.pid)[0]
                peak[0] = max(peak[0], held[0])
            done.set()
            await asyncio.gather(*tasks)

        asyncio.run(main())
        wall = time.perf_counter() - t_start
        cpu = time.process_time() - cpu0
        killed = server.process.poll() is not None
        after = float("nan")
        if not killed:
            # Sessions of viewers who left are dropped after the TTL; the check for it runs when a session
            # connects, as the next visitor's would (a health check does not).
            time.sleep(args.session_ttl + 2)
            ev = asyncio.Event()
            ev.set()
            asyncio.run(visit(Viewer(-1, pages[0], 0.0), server, [], 0, args.timeout, ev, time.perf_counter(), 0))
            time.sleep(2)
            after = rss_mb(server.process.pid)[0]
            if PEAK_RESETS:  # VmHWM since the reset: no moment between two samples is missed
                peak[0] = max(peak[0], rss_mb(server.process.pid)[1])
        logged = server.logged_errors(mark)
        if logged:
            viewers[0].errors += [f"server log: {line}" for line in logged[:5]]
        return Result(n, limit, viewers, before, peak[0], held[0], after,
                      cgroup.peak_mb() if cgroup else None,
                      killed or (cgroup is not None and cgroup.oom_kills() > 0), cpu, wall)  # fmt: skip
    finally:
        server.stop()
        if cgroup:
            cgroup.remove()


def print_viewers(r: Result) -> None:
    for v in r.viewers_list:
        page = f"{v.page_s:.2f}" if v.page_s is not None else "–"
        changes = ", ".join(f"{k} {s:.2f}" for k, s in zip(v.changed, v.change_s, strict=False))
        print(f"    viewer {v.index:>3} at {v.arrive_s:5.1f} s  {v.link.path:<42} page {page:>6} s  changed: {changes}")


def print_table(results: list[Result]) -> None:
    head = (f"{'viewers':>7} {'limit':>6} {'errors':>6} {'page med':>8} {'p95':>6} {'max':>6} {'change med':>10} "
            f"{'p95':>6} {'RSS before':>10} {'peak':>6} {'all on':>6} {'after':>6} {'MB/viewer':>9} "
            f"{'cgroup peak':>11} {'sim CPU':>7}")  # fmt: skip
    print(head)
    for r in results:
        pages = [v.page_s for v in r.viewers_list if v.page_s is not None]
        changes = [c for v in r.viewers_list for c in v.change_s]
        per = (r.held - r.before) / r.viewers
        cg = f"{r.cg_peak:.0f}" if r.cg_peak is not None else "–"
        print(f"{r.viewers:>7} {r.limit:>6} {r.errors:>6} {statistics.median(pages) if pages else float('nan'):>8.2f} "
              f"{_pct(pages, 0.95):>6.2f} {max(pages, default=float('nan')):>6.2f} "
              f"{statistics.median(changes) if changes else float('nan'):>10.2f} {_pct(changes, 0.95):>6.2f} "
              f"{r.before:>10.0f} {r.peak:>6.0f} {r.held:>6.0f} {r.after:>6.0f} {per:>9.1f} {cg:>11} "
              f"{r.client_cpu_s:>6.0f}s" + ("  SERVER KILLED" if r.killed else ""))  # fmt: skip
    print("times in s (a finished page: from arrival to script_finished, its static files fetched); RSS in MB; "
          "MB/viewer = (RSS with everyone on their page − before) ÷ viewers")
    for r in results:
        for v in r.viewers_list:
            for e in v.errors[:2]:
                print(f"  {r.viewers} viewers, viewer {v.index} on {v.link.path}: {e}")


# --------------------------------------------------------------------------------------------
# Validation against real Chromium pages


def in_thread(coro: Any) -> Any:
    """``asyncio.run(coro)`` in a thread of its own (Playwright's sync API holds an event loop in this one)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def validate(args: argparse.Namespace, pages: list[Link], tmp: Path) -> None:
    """Chromium beside the simulator, on a quiet warm server and then while an audience arrives.

    Quiet: each page three times in Chromium (time to idle) and three times simulated (time to a finished
    page); the difference is the browser's own work, which a phone does for itself. Busy: ``--viewers``
    simulated viewers (30 by default) arrive within ``--arrive`` s while Chromium opens the pages again;
    what the crowd adds to Chromium's time is the server's share, and it should match what it adds to the
    simulated viewers' time.
    """
    from playwright.sync_api import sync_playwright

    server = start(tmp / "validate.log", args.session_ttl, None)
    try:
        record_assets_and_warm(server, pages)  # warm, as in every run
        assets = record_assets_and_warm(server, pages)
        quiet_real: dict[str, float] = {}
        quiet_sim: dict[str, float] = {}
        with sync_playwright() as pw:
            b = browser.launch_chromium(pw)

            def chromium(link: Link) -> float:
                ctx = b.new_context(viewport={"width": 390, "height": 844})
                t = time.perf_counter()
                browser.goto(ctx.new_page(), server, link.path, timeout=180_000)
                ctx.close()
                return time.perf_counter() - t

            for link in pages:
                real, sim = [], []
                for _ in range(3):
                    real.append(chromium(link))
                    v = Viewer(0, link, 0.0)
                    ev = asyncio.Event()
                    ev.set()
                    in_thread(visit(v, server, assets[link.page], 0, args.timeout, ev, time.perf_counter(), 0))
                    sim.append(v.page_s or float("nan"))
                quiet_real[link.page], quiet_sim[link.page] = statistics.median(real), statistics.median(sim)
            time.sleep(args.session_ttl + 2)
            n = args.viewers[0] if args.viewers != [1, 10, 50, 100] else 30
            rng = random.Random(args.seed)
            crowd = [Viewer(i, pages[i % len(pages)], rng.uniform(0, args.arrive)) for i in range(n)]

            async def play() -> None:
                done = asyncio.Event()
                t0 = time.perf_counter()
                tasks = [asyncio.create_task(visit(v, server, assets[v.link.page], 2, args.timeout, done, t0,
                                                   args.seed)) for v in crowd]  # fmt: skip
                while not all(v.done for v in crowd):
                    await asyncio.sleep(0.2)
                done.set()
                await asyncio.gather(*tasks)

            with ThreadPoolExecutor(1) as pool:
                running = pool.submit(asyncio.run, play())
                busy_real: dict[str, list[float]] = {p.page: [] for p in pages}
                start_t = time.perf_counter()
                i = 0
                while time.perf_counter() - start_t < args.arrive:  # Chromium arrives among the crowd
                    link = pages[i % len(pages)]
                    busy_real[link.page].append(chromium(link))
                    i += 1
                running.result()
            b.close()
    finally:
        server.stop()
    print(f"{'page':<42} {'Chromium':>8} {'simulated':>9} {'browser':>7}   with {n} simulated viewers arriving:")
    print(f"{'':<42} {'quiet':>8} {'quiet':>9} {'share':>7}   {'Chromium':>8} {'+':>6} {'simulated':>9} {'+':>6}")
    for link in pages:
        busy = busy_real[link.page]
        sims = [v.page_s for v in crowd if v.link.page == link.page and v.page_s is not None]
        cr = statistics.median(busy) if busy else float("nan")
        sm = statistics.median(sims) if sims else float("nan")
        qr, qs = quiet_real[link.page], quiet_sim[link.page]
        print(f"{link.path:<42} {qr:>7.2f}s {qs:>8.2f}s {qr - qs:>6.2f}s   {cr:>7.2f}s {cr - qr:>+5.2f}s {sm:>8.2f}s "
              f"{sm - qs:>+5.2f}s")  # fmt: skip
    print("quiet: median of 3, one at a time; busy: medians over the crowd's viewers of that page and Chromium's "
          "visits during the arrivals (Chromium shares the 2 cores with the server, as the simulator does)")
    errors = [e for v in crowd for e in v.errors]
    first = f" ({errors[0]})" if errors else ""
    print(f"the crowd: {sum(1 for v in crowd if v.errors)} of {n} viewers with errors{first}")


def heavy_check(args: argparse.Namespace, pages: list[Link], tmp: Path) -> int:
    """Heavy buttons pressed by several viewers at once while others arrive: one run at a time, pages still drawn."""
    server = start(tmp / "heavy.log", args.session_ttl, None)
    try:
        heavy_links = [Link(p.page, p.url_path, HEAVY[p.page][0]) for p in pages if p.page in HEAVY]
        pressers = [Viewer(i, heavy_links[i % len(heavy_links)], 0.2 * i) for i in range(2 * len(heavy_links))]
        rng = random.Random(args.seed)
        arriving = [Viewer(100 + i, pages[i % len(pages)], 3 + rng.uniform(0, 20)) for i in range(args.viewers)]
        mark = server.log_mark()

        async def main() -> None:
            done = asyncio.Event()
            t0 = time.perf_counter()
            tasks = [asyncio.create_task(visit(v, server, [], 1, args.timeout, done, t0, args.seed, heavy=True))
                     for v in pressers]  # fmt: skip
            tasks += [asyncio.create_task(visit(v, server, [], 2, args.timeout, done, t0, args.seed))
                      for v in arriving]  # fmt: skip
            while not all(v.done for v in [*pressers, *arriving]):
                await asyncio.sleep(0.2)
            done.set()
            await asyncio.gather(*tasks)

        asyncio.run(main())
        logged = server.logged_errors(mark)
    finally:
        server.stop()
    print(f"{'who':<44} {'page s':>7} {'run s':>7} {'queued':>7} errors")
    for v in pressers:
        run = f"{v.change_s[0]:.1f}" if v.change_s else "–"
        page = f"{v.page_s:.1f}" if v.page_s else "–"
        who = ("pressed Run on " if HEAVY[v.link.page][1] else "changed a setting on ") + v.link.path
        print(f"{who:<44} {page:>7} {run:>7} {v.queued_seen!s:>7} {'; '.join(v.errors)[:80]}")
    pages_s = [v.page_s for v in arriving if v.page_s is not None]
    bad = [v for v in arriving if v.errors or v.page_s is None]
    print(f"{len(arriving)} viewers arriving meanwhile: {len(bad)} with errors, finished page median "
          f"{statistics.median(pages_s):.2f} s, max {max(pages_s):.2f} s")  # fmt: skip
    queued = sum(v.queued_seen for v in pressers)
    print(f"viewers who pressed a heavy button and were queued behind another's run: {queued} of {len(pressers)}")
    for line in logged[:5]:
        print("  server log:", line)
    return 1 if bad or logged or any(v.errors for v in pressers) or queued == 0 else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--viewers", type=int, nargs="+", default=[1, 10, 50, 100])
    ap.add_argument("--arrive", type=float, default=30.0, help="viewers arrive at random within this many seconds")
    ap.add_argument("--memory-limit", type=parse_size, default=None, help="run the server in a memory cgroup (2.7G)")
    ap.add_argument("--both", action="store_true", help="every size without and then with --memory-limit")
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds a viewer waits for a run to finish")
    ap.add_argument("--session-ttl", type=int, default=10)
    ap.add_argument("--cold", action="store_true", help="no warm-up: the first viewers pay the server's start")
    ap.add_argument("--pages", nargs="*", help="only these pages (script stems)")
    ap.add_argument("--validate", action="store_true", help="simulated times beside real Chromium pages")
    ap.add_argument("--heavy", action="store_true", help="heavy buttons pressed while --viewers arrive")
    ap.add_argument("--seed", type=int, default=27)
    ap.add_argument("--verbose", action="store_true", help="a line per viewer")
    args = ap.parse_args(argv)
    pages = [p for p in links() if not args.pages or p.page in args.pages]
    print(f"pages: {', '.join(p.path for p in pages)}; {os.cpu_count()} CPU cores, load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        if args.validate:
            validate(args, pages, tmp)
            return 0
        if args.heavy:
            args.viewers = args.viewers[0] if args.viewers != [1, 10, 50, 100] else 10
            return heavy_check(args, pages, tmp)
        modes = [(None, "none"), (parse_size("2.7G"), "2.7G")] if args.both else \
            [(args.memory_limit, f"{args.memory_limit / 2**30:.1f}G" if args.memory_limit else "none")]  # fmt: skip
        results = []
        for limit, label in modes:
            for n in args.viewers:
                args.memory_limit = limit
                r = audience(n, args, pages, tmp, label)
                results.append(r)
                if args.verbose:
                    print_viewers(r)
                print(f"  {n} viewers ({label}): {r.errors} with errors, {r.wall_s:.0f} s, load "
                      f"{os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
        print()
        print_table(results)
        return 1 if any(r.errors for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
