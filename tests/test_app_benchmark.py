"""AppTest of the benchmark page: every widget, the Run button, the queue, the cache, bad and old links.

Sweeps here use n = 128 with tiny shapes, no matmul probe and no minimum timing time, so a
run takes a second or two. Nothing asserts a speed. The browser writes the URL when a control
changes, which AppTest does not show: tests/test_browser_benchmark.py checks that part.
"""

from __future__ import annotations

import pytest
from conftest import open_app_page
from streamlit.testing.v1 import AppTest

from attention_core import bench
from attention_core.bench import EXACT
from attention_core.bench import sweep as sweep_mod
from attention_core.device import default_device
from tests.support.shown import notice, text
from ui.runlock import RunLock

TINY = {"bm_nmax": "128", "bm_d": "16", "bm_heads": "1"}


@pytest.fixture(autouse=True)
def _fast(monkeypatch):
    monkeypatch.setattr(bench, "DEFAULT_MIN_RUN_TIME", 0.0)
    monkeypatch.setattr(sweep_mod, "matmul_peak_gflops", lambda device, dtype: 100.0)


def open_page(query: dict[str, str | list[str]] | None = None) -> AppTest:
    at = open_app_page("benchmark", query)
    assert not at.exception, at.exception
    return at


def results_frame(at: AppTest):
    frames = [df.value for df in at.dataframe if "status" in df.value.columns]
    assert frames, "no results table"
    return frames[0]


def forget(at: AppTest) -> AppTest:
    at.button(key="bm_forget").click().run()
    return at


def test_the_page_opens_with_the_theory_and_runs_nothing():
    at = open_page()
    assert "Press **Run** to measure" in text(at)
    tables = [df.value for df in at.dataframe]
    memory = next(t for t in tables if "score matrix" in t.columns)
    assert list(memory["n"]) == [2**p for p in range(9, 18)]
    expected = [bench.format_bytes(n * n * 4 * 8) for n in memory["n"]]  # float32, 8 heads by default
    assert list(memory["score matrix"]) == expected and expected[-1] == "512.0 GiB"
    flops = next(t for t in tables if "step" in t.columns)
    assert list(flops["step"]) == ["QKᵀ", "scale ÷√d", "softmax", "weights·V"]
    assert "threads" in text(at) and "Largest n whose score matrix fits" in text(at)


def test_every_widget_then_run_gives_a_table_a_csv_and_no_exception():
    at = forget(open_page())
    at.multiselect(key="bm_impl").set_value(list(EXACT)).run()
    at.select_slider(key="bm_nmin").set_value(128).run()
    at.select_slider(key="bm_nmax").set_value(128).run()
    at.select_slider(key="bm_d").set_value(16).run()
    at.slider(key="bm_heads").set_value(1).run()
    at.slider(key="bm_batch").set_value(2).run()
    at.selectbox(key="bm_dtype").set_value("bfloat16").run()
    at.selectbox(key="bm_device").set_value("cpu").run()
    at.toggle(key="bm_causal").set_value(True).run()
    at.slider(key="bm_budget").set_value(60).run()
    assert not at.exception, at.exception
    s = at.session_state
    assert (s["bm_dtype"], s["bm_causal"], s["bm_batch"], s["bm_budget"]) == ("bfloat16", True, 2, 60)

    at.button(key="bm_run").click().run()
    assert not at.exception, at.exception
    frame = results_frame(at)
    assert list(frame["impl"]) == list(EXACT)  # the routes that approximate live on Beyond n²
    by_impl = dict(zip(frame["impl"], frame["status"], strict=True))
    assert by_impl["textbook"] == by_impl["tiled"] == by_impl["sdpa"] == "ok"
    assert by_impl["sdpa-efficient"] == "n/a" and by_impl["numpy"] == "n/a"  # CUDA only; no bfloat16 in numpy
    assert len(at.get("download_button")) == 1
    assert "Results" in [h.value for h in at.subheader]


def test_the_same_sweep_again_comes_from_the_servers_cache():
    at = forget(open_page(TINY))
    at.button(key="bm_run").click().run()
    first = results_frame(at)
    second = open_page(TINY)  # another viewer, same server
    second.button(key="bm_run").click().run()
    assert "all measured earlier on this server" in text(second)
    assert list(results_frame(second)["median ms"]) == list(first["median ms"])


def test_a_busy_server_queues_the_run_and_gives_up_without_an_exception(monkeypatch):
    monkeypatch.setattr(RunLock, "try_acquire", lambda self, timeout=0.0, what="": False)
    monkeypatch.setattr(RunLock, "wait_s", 0.2)
    at = forget(open_page(TINY))
    at.button(key="bm_run").click().run()
    assert not at.exception, at.exception
    labels = [s.label for s in at.status]
    assert any("Still busy" in label for label in labels), labels
    assert "Press **Run** to measure" in text(at)


def test_an_over_cap_configuration_is_reported_as_skipped(monkeypatch):
    monkeypatch.setenv("ATTENTION_BENCH_CAP_GB", "0.0001")  # 105 KiB: the textbook path at n = 128 needs more
    at = forget(open_page({**TINY, "bm_impl": "textbook"}))
    assert "will be skipped" in text(at)
    at.button(key="bm_run").click().run()
    frame = results_frame(at)
    assert list(frame["status"]) == ["skipped"] and "> cap" in frame["note"][0]


def test_the_page_names_both_materialising_baselines_and_says_why_explained_is_slower():
    at = open_page()
    assert {"textbook", "trace"} <= set(at.multiselect(key="bm_impl").value)
    page = text(at)
    assert "slower than textbook because it checks every n×n step" in page
    assert "textbook ≈ 3–4× the time of SDPA" in page  # what to expect, per baseline


def test_an_old_bookmark_with_impl_naive_still_opens_and_runs():
    """Links from before named the textbook code bm_impl=naive: it opens as today's textbook."""
    at = forget(open_page({**TINY, "bm_impl": "naive"}))
    assert at.multiselect(key="bm_impl").value == ["textbook"]
    assert not at.warning or all("ignored" not in w.value for w in at.warning)
    at.button(key="bm_run").click().run()
    frame = results_frame(at)
    assert list(frame["impl"]) == ["textbook"] and list(frame["status"]) == ["ok"]
    assert list(frame["samples"]) == [3] or frame["samples"][0] >= 3


def test_cancel_without_a_run_is_harmless():
    at = open_page(TINY)
    at.button(key="bm_cancel").click().run()
    assert not at.exception


def test_no_implementation_chosen_disables_run():
    at = open_page()
    at.multiselect(key="bm_impl").set_value([]).run()
    assert not at.exception
    assert at.button(key="bm_run").disabled
    assert "Choose at least one implementation" in text(at)


@pytest.mark.parametrize("raw", ["3000", "lots", "1000000"])
def test_a_bad_length_in_a_link_falls_back_to_the_default_with_a_notice(raw):
    """n runs over powers of two: anything else in a link is not taken, and the viewer is told."""
    at = open_page({"bm_nmax": raw, "bm_heads": "2"})
    assert at.select_slider(key="bm_nmax").value == bench.DEFAULT_SWEEP.ns[-1]
    assert "bm_nmax =" in notice(at) and "bm_heads" not in notice(at)  # the good value beside it is kept
    assert at.slider(key="bm_heads").value == 2


def test_float16_is_offered_on_cuda_only():
    at = open_page({"bm_dtype": "float16"})
    on_cuda = str(default_device()).startswith("cuda")
    assert at.selectbox(key="bm_dtype").value == ("float16" if on_cuda else "float32")
    assert ("bm_dtype =" in notice(at)) == (not on_cuda)


def test_a_link_in_todays_form_restores_the_view():
    """What the browser writes (tests/test_browser_benchmark.py checks the writing itself)."""
    link = {"bm_impl": ["sdpa", "textbook"], "bm_nmin": "256", "bm_nmax": "4096", "bm_d": "32", "bm_batch": "2",
            "bm_dtype": "bfloat16", "bm_causal": "true", "bm_budget": "30", "talk": "true"}  # fmt: skip
    at = open_page(link)
    s = at.session_state
    assert s["bm_impl"] == ["sdpa", "textbook"] and (s["bm_nmin"], s["bm_nmax"], s["bm_d"]) == (256, 4096, 32)
    assert (s["bm_batch"], s["bm_dtype"], s["bm_causal"], s["bm_budget"], s["talk"]) == (2, "bfloat16", True, 30, True)
    assert "10 configurations" in text(at) and not notice(at)


def test_a_bookmark_from_before_bound_widgets_opens_the_same_view():
    """Old links wrote lists with commas and on/off as 1/0; they are rewritten once and open as before."""
    at = open_page({"bm_impl": "naive,tiled", "bm_causal": "1", "bm_nmax": "4096", "bm_d": "32", "talk": "1"})
    s = at.session_state
    assert (s["bm_impl"], s["bm_causal"], s["bm_nmax"], s["bm_d"]) == (["textbook", "tiled"], True, 4096, 32)
    assert s["talk"]
    assert at.query_params["bm_impl"] == ["textbook", "tiled"] and at.query_params["bm_causal"] == "true"
    assert not notice(at)


def test_the_device_is_named_and_an_old_link_naming_it_opens_on_it():
    """The device shows as "CPU" or "CUDA (cuda:0)"; links from before bind wrote its value (bm_device=cpu)."""
    at = open_page({"bm_device": "cpu"})
    assert at.selectbox(key="bm_device").value == "cpu"
    assert at.selectbox(key="bm_device").options[0] == "CPU"


def test_talk_mode_shows_less_prose():
    normal = open_page()
    talk = open_page({"talk": "true"})
    assert not talk.exception
    assert "Attention compares every query" in text(normal)
    assert "Attention compares every query" not in text(talk)


def test_the_timed_pass_control_runs_the_backward_and_shows_its_gradients_and_flops():
    at = forget(open_page({**TINY, "bm_impl": ["textbook", "tiled", "numpy"]}))
    assert at.button_group(key="bm_mode").value == "fwd" and not notice(at)  # the forward by default
    flops = next(t for t in (df.value for df in at.dataframe) if "step" in t.columns)
    assert "dV = Pᵀ·dO" not in set(flops["step"])
    at.button_group(key="bm_mode").set_value("bwd").run()
    assert not at.exception, at.exception
    flops = next(t for t in (df.value for df in at.dataframe) if "step" in t.columns)
    assert "dV = Pᵀ·dO" in set(flops["step"]) and "weights·V" not in set(flops["step"])
    assert "What the backward keeps" in text(at) and "recomputes each tile's scores" in text(at)
    at.button(key="bm_run").click().run()
    frame = results_frame(at)
    assert set(frame["mode"]) == {"bwd"}
    rows = {impl: row for impl, row in zip(frame["impl"], frame.to_dict("records"), strict=True)}
    assert rows["tiled"]["status"] == "ok" and 0 < rows["tiled"]["err dK"] < 1e-4
    assert rows["numpy"]["status"] == "n/a" and rows["numpy"]["note"].startswith("no backward pass: numpy")
    assert "configurations, backward" in text(at)


def test_a_link_names_the_timed_pass_by_its_label():
    at = open_page({"bm_mode": "forward + backward"})
    assert at.button_group(key="bm_mode").value == "fwd+bwd" and not notice(at)
    assert "FLOPs per forward + backward call" in text(at)
    assert "In training the textbook code holds three" in text(at) or "Largest n" not in text(at)
    bad = open_page({"bm_mode": "training"})
    assert bad.button_group(key="bm_mode").value == "fwd" and "bm_mode =" in notice(bad)


# ---- the figure builders, called directly -------------------------------------------------


def _rows() -> list[dict]:
    def row(impl, n, ms, peak, status="ok"):
        return {
            "impl": impl, "n": n, "median_ms": ms, "iqr_ms": ms and ms / 10, "peak_bytes": peak,
            "predicted_bytes": peak or 2**20, "gflops": ms and 1e-6 * n * n / ms, "pct_of_peak": 10.0,
            "status": status, "samples": 3,
        }  # fmt: skip

    rows = [row("textbook", n, 1e-4 * n * n, 24 * n * n) for n in (512, 1024, 2048)]
    rows += [row("tiled", n, 1e-4 * n * n, 4096 * n) for n in (512, 1024)]
    rows += [row("tiled", 2048, None, None, status="oom")]
    return rows


def test_time_figure_draws_ok_rows_and_names_the_fitted_slope():
    from figures.benchmark import time_figure
    from figures.style import IMPL_COLORS

    fig = time_figure(_rows(), {"textbook": (2.0, -9.2, 512, 2048)})
    named = {t.name: t for t in fig.data if t.showlegend is not False}
    assert set(named) == {"textbook ∝ n^2.00", "tiled"}
    assert list(named["tiled"].x) == [512, 1024]  # the oom row is not drawn
    assert named["textbook ∝ n^2.00"].line.color == IMPL_COLORS["textbook"]
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"


def test_memory_figure_has_measured_points_and_predicted_lines():
    from figures.benchmark import memory_figure

    fig = memory_figure(_rows())
    kinds = {t.name: t.mode for t in fig.data}
    assert kinds["textbook measured"] == "markers" and kinds["textbook predicted"] == "lines"
    measured = next(t for t in fig.data if t.name == "textbook measured")
    assert list(measured.y) == [24 * n * n / 2**20 for n in (512, 1024, 2048)]


def test_rate_and_speedup_figures_and_empty_inputs():
    from figures.benchmark import memory_figure, rate_figure, speedup_figure, time_figure

    rate = rate_figure(_rows(), peak_gflops=50.0)
    assert any("matmul peak 50" in (a.text or "") for a in rate.layout.annotations)
    speed = speedup_figure([{"impl": "tiled", "n": 512, "speedup": 3.0}])
    assert list(speed.data[0].y) == [3.0]
    for fig in (time_figure([]), memory_figure([]), rate_figure([]), speedup_figure([])):
        assert len(fig.data) == 0 and fig.layout.annotations  # says why it is empty
    talk = time_figure(_rows(), talk=True)
    assert talk.layout.font.size > time_figure(_rows()).layout.font.size


def test_a_narrow_time_range_is_labelled_in_full_1_2_5_steps():
    """Plotly's "D2" ticks would write 0.5 ms as "5"; the figure writes every label in full."""
    from figures.benchmark import time_figure

    rows = [{"impl": "sdpa", "n": n, "median_ms": ms, "iqr_ms": 0.0, "status": "ok", "samples": 3}
            for n, ms in ((128, 0.3), (256, 0.9), (512, 2.4))]  # fmt: skip
    axis = time_figure(rows).layout.yaxis
    assert list(axis.ticktext) == ["0.1", "0.2", "0.5", "1", "2", "5", "10", "20", "50"]
    assert list(axis.tickvals) == pytest.approx([0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50])
