"""Server-side rerun time of the √d_k explorer, tab by tab (AppTest, warm). Goal: median ≤ 100 ms.

``benchmarks/latency.py`` times every page in its default view. On /scaling only the open tab is
computed and only its widgets are on screen, so this script opens each tab in turn and, like
latency.py (whose neighbouring-value moves and timer it reuses), switches each enabled widget back
and forth between its current value and the next one. The times are wall time of ``at.run()``,
including AppTest's own parsing of the output (shown apart; a real server does not do it). The
first visits fill the caches (untimed warm-up); the timed reruns are what a viewer feels when
moving a slider back and forth. Also timed: switching to each tab once it has been seen.

    python benchmarks/latency_scaling.py                 # every tab, 10 timed reruns per widget
    python benchmarks/latency_scaling.py --reruns 20 --tabs Training
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.latency import RERUN_GOAL_MS, WARMUP, Timer, _count_parse_time, _pair  # noqa: E402
from benchmarks.widgets import apply, open_page, widgets  # noqa: E402

TABS = ("Variance", "Saturation", "Gradients", "Scaling strategies", "Initialisation", "Numerical stability",
        "Training")  # fmt: skip
SKIP = {"talk", "sc_tab"}


def tab_rows(tab: str, reruns: int) -> list[tuple[str, str, list[float], list[float]]]:
    at = open_page("scaling", {"sc_tab": tab})
    if at.exception:
        raise RuntimeError(f"{tab}: {[e.value for e in at.exception]}")
    for _ in range(WARMUP):
        at.run()
    timer = Timer()
    for _ in range(reruns):
        timer.run(at)
    rows = [("(none)", "no change", timer.wall, timer.parse)]
    for name in list(widgets(at)):
        w = widgets(at).get(name)
        if name in SKIP or w is None or getattr(w.proto, "disabled", False):
            continue
        pair = _pair(w)
        if pair is None:
            continue
        there, back, change = pair
        timer = Timer()
        for i in range(2 * (WARMUP + reruns)):
            if not apply(at, there if i % 2 == 0 else back):
                break
            timer.run(at, keep=i >= 2 * WARMUP)
            if at.exception:
                raise RuntimeError(f"{tab}: {name} {change}: {[e.value for e in at.exception]}")
        if apply(at, back):
            at.run()
        rows.append((name, change, timer.wall, timer.parse))
    return rows


def tab_switch_times(reruns: int) -> list[float]:
    """Switching between tabs already seen (their numbers are cached)."""
    at = open_page("scaling")
    for tab in TABS:  # warm every tab's cache
        at.session_state["sc_tab"] = tab
        at.run()
    timer = Timer()
    for i in range(reruns * len(TABS)):
        at.session_state["sc_tab"] = TABS[i % len(TABS)]
        timer.run(at)
    return timer.wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reruns", type=int, default=10)
    ap.add_argument("--tabs", nargs="*", default=list(TABS), choices=TABS)
    args = ap.parse_args()
    _count_parse_time()
    every: list[float] = []
    print(f"Rerun after a widget change, warm (AppTest; {args.reruns} timed reruns per widget, ms). "
          f"Goal: median ≤ {RERUN_GOAL_MS:.0f} ms.")  # fmt: skip
    for tab in args.tabs:
        rows = tab_rows(tab, args.reruns)
        print(f"\n## {tab}\n")
        print(f"| {'widget':<10} | {'change':<24} | {'median':>6} | {'p90':>6} | {'of which AppTest parse':>22} |")
        print(f"|{'-' * 12}|{'-' * 26}|{'-' * 8}|{'-' * 8}|{'-' * 24}|")
        for name, change, times, parse in rows:
            p90 = statistics.quantiles(times, n=10, method="inclusive")[-1] if len(times) > 1 else times[0]
            print(f"| {name:<10} | {change[:24]:<24} | {statistics.median(times):6.1f} | {p90:6.1f} | "
                  f"{statistics.median(parse):22.1f} |")  # fmt: skip
            if name != "(none)":
                every += times
        sys.stdout.flush()
    switches = tab_switch_times(max(2, args.reruns // 3))
    print(f"\nSwitching between tabs already seen: median {statistics.median(switches):.1f} ms, "
          f"max {max(switches):.1f} ms ({len(switches)} switches).")  # fmt: skip
    med = statistics.median(every)
    print(f"All widget changes: median {med:.1f} ms over {len(every)} reruns "
          f"({'meets' if med <= RERUN_GOAL_MS else 'misses'} the {RERUN_GOAL_MS:.0f} ms goal).")  # fmt: skip


if __name__ == "__main__":
    main()
