"""The √d_k explorer: every claim about the scaling is measured live, next to its theory."""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from attention_core import (
    DEFAULT_LR,
    default_device,
    dot_product_histograms,
    gradient_table,
    init_effects,
    named_init_stds,
    overflow_limit,
    overflow_logits,
    overflow_sweep,
    row_entropy,
    sample_row,
    saturation_table,
    scaling_strategies,
    softmax_overflow,
    temperature_sweep,
    train_toy,
    training_summary,
    variance_table,
)
from figures.scaling import (
    gradient_figure,
    histogram_figure,
    init_figure,
    jacobian_figure,
    overflow_bars_figure,
    overflow_figure,
    row_bars_figure,
    saturation_figure,
    strategies_figure,
    temperature_bars_figure,
    temperature_figure,
    training_figure,
    variance_figure,
)
from figures.style import PLOTLY_CONFIG
from ui import urlstate, viewport
from ui.params import BoolParam, ChoiceParam, FloatParam, IntParam

TABS = ("Variance", "Saturation", "Gradients", "Scaling strategies", "Initialisation", "Numerical stability",
        "Training")  # fmt: skip
DIMS = tuple(2**i for i in range(13))  # 1 … 4096
DEVICE = str(default_device())  # the core uses torch's default device unless told: the app tells it
KEY_CHOICES = (2, 4, 8, 16, 32, 64, 128)
SAMPLE_CHOICES = (1_000, 2_000, 5_000, 10_000, 20_000)  # 20,000 × (1 + … + 4096) × 2 ≈ 330M draws, ≈ 2 s
# The variance tab first shows an estimate from this many samples (a tenth of the time), and
# refines it to the chosen count in the background: the page is up at once on a cold visit.
QUICK_SAMPLES = 2_000
TAU_CHOICES = tuple(float(f"{2 ** (k / 2):.3g}") for k in range(-4, 25))  # 0.25 … 4096, 3 significant digits
MAG_CHOICES = (1, 2, 5, 8, 10, 11, 12, 15, 20, 50, 80, 88, 89, 90, 100, 200, 500, 1000)
D_MODEL_CHOICES = (16, 32, 64, 128, 256, 512, 1024)
LR_CHOICES = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
STEP_CHOICES = (100, 200, 300, 500)
# The toy model's cost per step grows with batch × keys × d_k: batch × keys is held at 512 tokens
# and steps × d_k at 200 × 4096, so the slowest setting costs what 200 steps at d_k = 4096 cost
# (a few seconds for both runs on 2 cores, ≈ 10 MB of activations).
TOKENS_PER_STEP = 512
STEP_BUDGET = 200 * 4096
TRAIN_INITS = {"lecun": "1/√d_model", "xavier": "Xavier", "0.01": "0.01", "0.5": "0.5"}
DTYPE_CHOICES = ("float32", "float16")
VECTORS = 256 * 17  # query + key vectors per d_k: 256 rows of 16 keys; fewer rows when there are more keys
TOY_D_MODEL = 16
THRESHOLD = 0.1  # the training loss that counts as "learned"

PARAMS = [
    ChoiceParam("sc_tab", TABS[0], TABS, label="tab"),
    IntParam("sc_dk", 512, 1, 4096, label="d_k"),
    IntParam("sc_nk", 16, 2, 128, label="keys"),
    IntParam("sc_seed", 0, 0, 9999, label="seed"),
    IntParam("sc_ns", 20_000, 1_000, 20_000, label="samples"),
    FloatParam("sc_tau", 22.6, 0.25, 4096.0, label="temperature"),
    IntParam("sc_target", 50, 10, 90, label="entropy target"),
    IntParam("sc_dm", 512, 16, 1024, label="d_model"),
    BoolParam("sc_ln", False, label="LayerNorm"),
    FloatParam("sc_std", 0.1, 0.001, 2.0, label="custom std"),
    IntParam("sc_mag", 100, 1, 1000, label="logit size"),
    ChoiceParam("sc_dtype", "float16", DTYPE_CHOICES, label="dtype"),
    ChoiceParam("sc_opt", "adam", tuple(DEFAULT_LR), label="optimizer"),
    FloatParam("sc_lr", DEFAULT_LR["adam"], 0.001, 1.0, label="learning rate"),
    ChoiceParam("sc_init", "lecun", tuple(TRAIN_INITS), label="init"),
    IntParam("sc_steps", 200, 100, 500, label="steps"),
]
# Which tabs read the shared controls (the others disable them, so it is clear they do nothing there).
USES_DK = set(TABS) - {"Numerical stability"}
USES_KEYS = {"Saturation", "Gradients", "Scaling strategies", "Training"}
USES_SEED = set(TABS) - {"Numerical stability"}

NUMBER = st.column_config.NumberColumn


@dataclass(frozen=True)
class Shared:
    """The controls above the tabs, and talk mode."""

    d_k: int
    n_keys: int
    seed: int
    talk: bool


# ---------------------------------------------------------------------------------------------
# Cached computations: plain arguments in, plain tables out


def rows_for(n_keys: int) -> int:
    """Rows per d_k for saturation and gradients (the same rows for both): the cost stays flat in n."""
    return max(32, VECTORS // (n_keys + 1))


@st.cache_data(max_entries=16, show_spinner=False)
def variance_data(n_samples: int, seed: int) -> pd.DataFrame:
    return variance_table(DIMS, n_samples, seed, device=DEVICE)


@st.cache_data(max_entries=64, show_spinner=False)
def histogram_data(d_k: int, n_samples: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    return dot_product_histograms(d_k, n_samples, seed, device=DEVICE)


@st.cache_data(max_entries=32, show_spinner=False)
def saturation_data(n_keys: int, seed: int) -> pd.DataFrame:
    return saturation_table(DIMS, n_keys, seed, n_rows=rows_for(n_keys), device=DEVICE)


@st.cache_data(max_entries=32, show_spinner=False)
def sweep_data(d_k: int, n_keys: int, seed: int) -> pd.DataFrame:
    return temperature_sweep(d_k, n_keys, TAU_CHOICES, seed, n_rows=rows_for(n_keys), device=DEVICE)


@st.cache_data(max_entries=128, show_spinner=False)
def row_data(d_k: int, n_keys: int, seed: int) -> dict[str, Any]:
    r = sample_row(d_k, n_keys, seed, device=DEVICE)
    return {
        "scores": r.scores.cpu().numpy(),
        "unscaled": r.weights_unscaled.cpu().numpy(),
        "scaled": r.weights_scaled.cpu().numpy(),
        "jac_unscaled": r.jacobian_unscaled.cpu().numpy(),
        "jac_scaled": r.jacobian_scaled.cpu().numpy(),
        "entropy_pct_unscaled": float(100 * row_entropy(r.weights_unscaled) / math.log(n_keys)),
        "entropy_pct_scaled": float(100 * row_entropy(r.weights_scaled) / math.log(n_keys)),
    }


@st.cache_data(max_entries=256, show_spinner=False)
def tau_row_data(d_k: int, n_keys: int, seed: int, tau: float) -> tuple[np.ndarray, float]:
    w = sample_row(d_k, n_keys, seed, device=DEVICE).weights_at(tau)
    return w.cpu().numpy(), float(100 * row_entropy(w) / math.log(n_keys))


@st.cache_data(max_entries=32, show_spinner=False)
def gradient_data(n_keys: int, seed: int) -> pd.DataFrame:
    return gradient_table(DIMS, n_keys, rows_for(n_keys), seed, device=DEVICE)


@st.cache_data(max_entries=64, show_spinner=False)
def strategies_data(d_k: int, n_keys: int, seed: int, target: int) -> pd.DataFrame:
    return scaling_strategies(
        d_k, n_keys, seed, n_rows=2 * rows_for(n_keys), target_entropy_pct=float(target), device=DEVICE
    )


@st.cache_data(max_entries=64, show_spinner=False)
def init_data(d_model: int, d_k: int, layernorm: bool, seed: int, custom: float) -> pd.DataFrame:
    stds = {**named_init_stds(d_model, d_k), "custom": custom}
    return init_effects(d_model, d_k, stds, layernorm=layernorm, seed=seed, device=DEVICE)


@st.cache_data(max_entries=64, show_spinner=False)
def overflow_data(magnitude: int, dtype: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    table = softmax_overflow(overflow_logits(float(magnitude), 8, device=DEVICE), (dtype,))
    return table, overflow_sweep([float(m) for m in MAG_CHOICES], dtype)


class _Refiner:
    """Full-size variance samples, computed off the script thread; one job per settings at a time.

    The job calls the same cached functions the page calls, so when it is done the page's own
    call is a cache hit. Shared by every session of the server.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done: set[tuple[int, int, int]] = set()
        self._failed: dict[tuple[int, int, int], str] = {}
        self._running: set[tuple[int, int, int]] = set()

    def ready(self, key: tuple[int, int, int]) -> bool:
        with self._lock:
            return key in self._done or key in self._failed

    def start(self, key: tuple[int, int, int]) -> None:
        with self._lock:
            if key in self._running or key in self._done:
                return
            self._running.add(key)
        threading.Thread(target=self._run, args=(key,), name=f"refine-variance-{key}", daemon=True).start()

    def _run(self, key: tuple[int, int, int]) -> None:
        n, seed, d_k = key
        try:
            variance_data(n, seed)
            histogram_data(d_k, n, seed)
        except Exception as exc:  # shown by the page's own call, which raises it again
            with self._lock:
                self._failed[key] = str(exc)
        else:
            with self._lock:
                self._done.add(key)
        finally:
            with self._lock:
                self._running.discard(key)


@st.cache_resource(show_spinner=False)
def _refiner() -> _Refiner:
    return _Refiner()


@st.fragment(run_every=0.5)
def _await_refinement(key: tuple[int, int, int]) -> None:
    """Say the numbers are an estimate; rerun the page once the full sample is in."""
    if _refiner().ready(key):
        st.rerun()
    st.caption(f":material/hourglass_top: Estimate from {QUICK_SAMPLES:,} samples, refining to {key[0]:,}…")


class _RunStore:
    """Finished training runs by their settings, shared by every session (the oldest go first).

    Not ``st.cache_data``: a cached function cannot drive a progress bar made outside it.
    """

    def __init__(self, size: int = 48) -> None:
        self._runs: OrderedDict[tuple[Any, ...], dict[str, pd.DataFrame]] = OrderedDict()
        self._lock = threading.Lock()
        self._size = size

    def get(self, key: tuple[Any, ...]) -> dict[str, pd.DataFrame] | None:
        with self._lock:
            if key in self._runs:
                self._runs.move_to_end(key)
                return self._runs[key]
        return None

    def put(self, key: tuple[Any, ...], runs: dict[str, pd.DataFrame]) -> None:
        with self._lock:
            self._runs[key] = runs
            while len(self._runs) > self._size:
                self._runs.popitem(last=False)


@st.cache_resource(show_spinner=False)
def _run_store() -> _RunStore:
    return _RunStore()


def toy_batch(n_keys: int) -> int:
    return max(4, TOKENS_PER_STEP // n_keys)


def step_choices(d_k: int) -> tuple[int, ...]:
    return tuple(s for s in STEP_CHOICES if s * d_k <= STEP_BUDGET)


def training_runs(
    d_k: int, n_keys: int, optimizer: str, lr: float, init: str, steps: int, seed: int
) -> dict[str, pd.DataFrame]:
    """Both toy runs for these settings: from the store, or trained now behind a progress bar."""
    key = (d_k, n_keys, optimizer, lr, init, steps, seed)
    store = _run_store()
    runs = store.get(key)
    if runs is not None:
        return runs
    std = named_init_stds(TOY_D_MODEL, d_k)[TRAIN_INITS[init]]
    bar = st.progress(0.0, text="Training…")
    every = max(1, steps // 40)
    runs = {}
    for i, name in enumerate(("scaled", "unscaled")):

        def tick(step: int, total: int, i: int = i, name: str = name) -> None:
            if step % every == 0 or step == total:
                bar.progress((i * total + step) / (2 * total), text=f"Training the {name} model: step {step}/{total}")

        runs[name] = train_toy(name == "scaled", d_k, d_model=TOY_D_MODEL, n_keys=n_keys, batch=toy_batch(n_keys),
                               steps=steps, optimizer=optimizer, lr=lr, init_std=std, seed=seed,
                               progress=tick, device=DEVICE)  # fmt: skip
    bar.empty()
    store.put(key, runs)
    return runs


# ---------------------------------------------------------------------------------------------
# Small helpers of the page


def snap(key: str, choices: tuple[float, ...]) -> None:
    """Before a select_slider: move a value from the URL (or a stale one) to the nearest choice."""
    value = st.session_state.get(key)
    if value in choices:
        return
    try:
        target = math.log(float(value))
        st.session_state[key] = min(choices, key=lambda c: abs(math.log(c) - target))
    except (TypeError, ValueError):
        st.session_state[key] = choices[0]


@st.cache_resource(max_entries=256, show_spinner=False)
def _figure(key: tuple[Any, ...], _make: Callable[[], go.Figure]) -> go.Figure:
    return _make()


# Talk mode: how far down the window a tab's first figure starts (settings row, tabs, formula, the
# tab's own controls), measured with benchmarks/rehearsal.py. The figure takes what is left.
TALK_ABOVE_FIRST = {"Variance": 400, "Scaling strategies": 395, "Numerical stability": 370, "Training": 385}
TALK_ABOVE_DEFAULT = 335
_PENDING = "_sc_pending_metrics"  # talk mode: metric rows held back until the first figure is drawn
_FIT = "_sc_fit_next"  # talk mode: the next figure is the tab's first, fit it to the window


def plot(
    key: tuple[Any, ...], make: Callable[[], go.Figure], *, fit: bool = False, metrics_after: bool = True
) -> None:
    """Draw the figure ``make()`` builds, built once per ``key`` (which must name all it depends on).

    Building a plotly figure costs tens of milliseconds, most of a rerun. ``st.cache_resource``
    keeps the object itself: a figure restored from a pickle (``st.cache_data``) is validated
    again, which costs as much as building it. Figures are never changed after they are built.
    """
    first = st.session_state.pop(_FIT, False)
    if first or (fit and urlstate.talk_mode()):  # talk mode: fit the figure to the window, numbers after it
        natural = _figure(key, _make=make).layout.height or 450
        above = TALK_ABOVE_FIRST.get(str(st.session_state.get("sc_tab")), TALK_ABOVE_DEFAULT)
        height = viewport.fit_height(above, natural=int(natural), low=220)
        fig = _figure((*key, "talk-fit", height), _make=lambda: make().update_layout(height=height))
        st.plotly_chart(fig, width="stretch", config=PLOTLY_CONFIG)
        if metrics_after:
            flush_metrics()
        return
    st.plotly_chart(_figure(key, _make=make), width="stretch", config=PLOTLY_CONFIG)


def prose(talk: bool, *paragraphs: str) -> None:
    """Explanatory paragraphs: shown normally, skipped in talk mode (the presenter says them)."""
    if not talk:
        for p in paragraphs:
            st.markdown(p)


def fmt(x: float, digits: int = 3) -> str:
    """A number for prose: 3 significant digits, a true minus sign."""
    return f"{x:.{digits}g}".replace("-", "−")


# ---------------------------------------------------------------------------------------------
# Controls


def shared_controls(tab: str, talk: bool) -> Shared:
    """d_k, keys and seed above the tabs; disabled where the open tab does not use them."""
    snap("sc_dk", DIMS)
    snap("sc_nk", KEY_CHOICES)
    box = st.popover("Settings", icon=":material/tune:") if talk else st.container(border=True)
    with box:
        c = st.columns([3, 2, 1])
        c[0].select_slider("Key width d_k", options=DIMS, key="sc_dk", disabled=tab not in USES_DK,
                           help="The length of each query and key vector.")  # fmt: skip
        c[1].select_slider("Keys per query n", options=KEY_CHOICES, key="sc_nk", disabled=tab not in USES_KEYS,
                           help="How many keys each softmax row spreads its weight over.")  # fmt: skip
        c[2].number_input("Seed", min_value=0, max_value=9999, step=1, key="sc_seed",
                          disabled=tab not in USES_SEED, help="Same seed, same random numbers.")  # fmt: skip
    s = st.session_state
    return Shared(int(s["sc_dk"]), int(s["sc_nk"]), int(s["sc_seed"]), talk)


def metrics(*items: tuple[str, str, str | None]) -> None:
    """A row of headline numbers: (label, value, a note under it or None).

    In talk mode, before a tab's first figure, the row is held back and drawn under that figure,
    so the figure fits the projector's screen (see :func:`plot`).
    """
    if st.session_state.get(_FIT):
        st.session_state[_PENDING] = [*st.session_state.get(_PENDING, []), list(items)]
        return
    _metric_row(list(items))


def flush_metrics() -> None:
    """Draw the metric rows held back in talk mode (none otherwise)."""
    for row in st.session_state.pop(_PENDING, []):
        _metric_row(row)


def _metric_row(items: list[tuple[str, str, str | None]]) -> None:
    if not items:
        return
    for col, (label, value, note) in zip(st.columns(len(items)), items, strict=True):
        col.metric(label, value, note, delta_color="off", delta_arrow="off")


def numbers(df: pd.DataFrame, columns: dict[str, Any], caption: str | None = None) -> None:
    """The numbers behind a figure, as a compact table."""
    with st.expander("The numbers", expanded=False):
        if caption:
            st.caption(caption)
        st.dataframe(df[list(columns)], hide_index=True, width="stretch", column_config=columns)


# ---------------------------------------------------------------------------------------------
# Tabs


def variance_tab(sh: Shared) -> None:
    st.latex(
        r"\operatorname{Var}(q\cdot k)=\sum_{i=1}^{d_k}\operatorname{Var}(q_i k_i)=d_k"
        r"\qquad\qquad \operatorname{Var}\!\left(\frac{q\cdot k}{\sqrt{d_k}}\right)=1"
    )
    prose(
        sh.talk,
        "A score q·k adds up d_k products qᵢkᵢ. When the entries are independent with variance 1, each "
        "product has variance 1, so the sum has variance d_k and a typical score grows like √d_k. Below, "
        "random pairs are drawn at every width and the variance of their dot products is measured.",
    )
    snap("sc_ns", SAMPLE_CHOICES)
    line = st.columns([2, 3], vertical_alignment="bottom")  # the slider and, while refining, the note beside it
    line[0].select_slider("Samples per d_k", options=SAMPLE_CHOICES, key="sc_ns", format_func="{:,}".format,
                         help="Random (q, k) pairs drawn at each width; the estimate's error shrinks like "
                         "1/√samples.")  # fmt: skip
    wanted = int(st.session_state["sc_ns"])
    key = (wanted, sh.seed, sh.d_k)
    n = wanted
    refine = wanted > QUICK_SAMPLES and not _refiner().ready(key)
    if refine:
        n = QUICK_SAMPLES
        with line[1]:
            _await_refinement(key)
    with st.spinner(f"Sampling {n:,} pairs of vectors at each of {len(DIMS)} widths…"):
        table = variance_data(n, sh.seed)
        hist_u, hist_s = histogram_data(sh.d_k, n, sh.seed)
    row = table.loc[table["d_k"] == sh.d_k].iloc[0]
    metrics(
        (f"Var(q·k) at d_k = {sh.d_k}", fmt(row["empirical_var"], 4), f"theory: {sh.d_k}"),
        ("Typical score, ±1σ", f"±{row['empirical_std']:.1f}", f"theory: ±√{sh.d_k} = ±{math.sqrt(sh.d_k):.1f}"),
        ("95% of scores within", f"±{row['abs_p95']:.1f}", "about ±2σ"),
        ("After ÷√d_k, 95% within", f"±{row['scaled_abs_p95']:.2f}", "about ±2, at any d_k"),
    )
    plot(("variance", n, sh.seed, sh.d_k, sh.talk), lambda: variance_figure(table, sh.d_k, talk=sh.talk))
    plot(("histogram", n, sh.seed, sh.d_k, sh.talk), lambda: histogram_figure(hist_u, hist_s, sh.d_k, talk=sh.talk))
    worst = table.loc[table["rel_error"].abs().idxmax()]
    prose(
        sh.talk,
        f"Every measured point lies within {100 * abs(worst['rel_error']):.1f}% of its theory line (the largest "
        f"miss is at d_k = {int(worst['d_k'])}). With fewer samples the points scatter more: the standard error "
        f"of a variance estimate is about √(2/n), {100 * math.sqrt(2 / n):.1f}% here. At d_k = 1 a single "
        "product qk is far from normal (peaked, heavy-tailed); by a few dozen terms the sum looks normal.",
    )
    numbers(table, {
        "d_k": NUMBER("d_k"), "theoretical_var": NUMBER("theory", format="%g"),
        "empirical_var": NUMBER("measured Var(q·k)", format="%.4g"),
        "rel_error": NUMBER("error", format="percent"), "empirical_std": NUMBER("std", format="%.3g"),
        "abs_p95": NUMBER("95% within ±", format="%.3g"), "scaled_var": NUMBER("Var(q·k/√d_k)", format="%.4f"),
        "scaled_abs_p95": NUMBER("scaled 95% within ±", format="%.3f"),
    }, f"{n:,} samples per d_k, seed {sh.seed}.")  # fmt: skip
    if refine:  # only now: on 2 cores a job started earlier would slow the estimate it replaces
        _refiner().start(key)


def saturation_tab(sh: Shared) -> None:
    rows = rows_for(sh.n_keys)
    st.latex(
        r"s_j=\frac{e^{z_j}}{\sum_{l=1}^{n} e^{z_l}},\quad z_j=\frac{q\cdot k_j}{\tau}"
        r"\qquad H(s)=-\sum_{j} s_j\log s_j\;\in\;[\,0,\ \log n\,]"
    )
    with st.spinner("Sampling softmax rows…"):
        table = saturation_data(sh.n_keys, sh.seed)
        row = row_data(sh.d_k, sh.n_keys, sh.seed)
    prose(
        sh.talk,
        f"A row's entropy runs from log n (uniform: each of the n = {sh.n_keys} keys gets 1/n) down to 0 "
        "(one-hot: one key takes everything). Without scaling the scores spread out like √d_k, so rows turn "
        "one-hot as d_k grows; divided by √d_k the spread stays near 1 and the entropy stays put. "
        f"Each point averages {rows} random rows.",
    )
    t = table.loc[table["d_k"] == sh.d_k].iloc[0]
    metrics(
        ("Entropy, unscaled", f"{t['entropy_pct_unscaled']:.0f}%", "of uniform"),
        ("Entropy, ÷√d_k", f"{t['entropy_pct_scaled']:.0f}%", "of uniform"),
        ("Largest weight, unscaled", f"{t['max_weight_unscaled']:.2f}", f"mean over {rows} rows"),
        ("Largest weight, ÷√d_k", f"{t['max_weight_scaled']:.2f}", f"uniform would be {1 / sh.n_keys:.2f}"),
    )
    key = (sh.d_k, sh.n_keys, sh.seed, sh.talk)
    plot(("saturation", *key), lambda: saturation_figure(table, sh.d_k, talk=sh.talk))
    plot(("row", *key), lambda: row_bars_figure(row["unscaled"], row["scaled"], sh.d_k, talk=sh.talk))
    st.subheader("Turn the temperature")
    snap("sc_tau", TAU_CHOICES)
    st.select_slider("Temperature τ (the softmax sees q·k / τ)", options=TAU_CHOICES, key="sc_tau",
                     format_func=lambda x: f"{x:g}",
                     help="τ = 1 is no scaling; τ = √d_k is the Transformer's.")  # fmt: skip
    tau = float(st.session_state["sc_tau"])
    weights, h_pct = tau_row_data(sh.d_k, sh.n_keys, sh.seed, tau)
    sweep = sweep_data(sh.d_k, sh.n_keys, sh.seed)
    prose(
        sh.talk,
        f"Dividing the same scores by a temperature τ moves the row continuously from one-hot (small τ) to "
        f"uniform (large τ). At d_k = {sh.d_k}, √d_k = {math.sqrt(sh.d_k):.3g}: this row has "
        f"{row['entropy_pct_unscaled']:.0f}% of the uniform entropy unscaled and "
        f"{row['entropy_pct_scaled']:.0f}% after ÷√d_k; at τ = {tau:g} it has {h_pct:.0f}%.",
    )
    c = st.columns(2)
    with c[0]:
        plot(("tau_bars", *key, tau), lambda: temperature_bars_figure(weights, tau, talk=sh.talk))
    with c[1]:
        plot(("tau_curve", *key, tau), lambda: temperature_figure(sweep, tau, sh.d_k, talk=sh.talk))
    numbers(table, {
        "d_k": NUMBER("d_k"),
        "entropy_pct_unscaled": NUMBER("entropy % (q·k)", format="%.1f"),
        "entropy_pct_scaled": NUMBER("entropy % (÷√d_k)", format="%.1f"),
        "max_weight_unscaled": NUMBER("max weight (q·k)", format="%.3f"),
        "max_weight_scaled": NUMBER("max weight (÷√d_k)", format="%.3f"),
        "score_var_unscaled": NUMBER("score var (q·k)", format="%.4g"),
        "score_var_scaled": NUMBER("score var (÷√d_k)", format="%.3f"),
        "score_range_unscaled": NUMBER("max − min (q·k)", format="%.3g"),
        "score_range_scaled": NUMBER("max − min (÷√d_k)", format="%.3g"),
    }, f"Means over {rows} rows of {sh.n_keys} keys, seed {sh.seed}. Entropy as % of log {sh.n_keys}.")  # fmt: skip


def gradients_tab(sh: Shared) -> None:
    rows = rows_for(sh.n_keys)
    st.latex(
        r"\frac{\partial s}{\partial z}=\operatorname{diag}(s)-s\,s^{\top}"
        r"\qquad \frac{\partial L}{\partial z}=\left(\operatorname{diag}(s)-s\,s^{\top}\right)g"
    )
    with st.spinner("Back-propagating through softmax rows…"):
        table = gradient_data(sh.n_keys, sh.seed)
        row = row_data(sh.d_k, sh.n_keys, sh.seed)
    prose(
        sh.talk,
        "What reaches the scores is the upstream gradient g times the softmax Jacobian. In a one-hot row "
        "every s_j(1 − s_j) is 0, the Jacobian is all zeros, and the scores learn nothing. Here g is random "
        f"and ‖∂L/∂z‖ is measured with torch.autograd on the same {rows} rows per width as the saturation tab.",
    )
    t = table.loc[table["d_k"] == sh.d_k].iloc[0]
    metrics(
        ("Median ‖∂L/∂z‖, unscaled", fmt(t["grad_median_unscaled"]), None),
        ("Median ‖∂L/∂z‖, ÷√d_k", fmt(t["grad_median_scaled"]), None),
        ("Rows passing < 0.01, unscaled", f"{100 * t['dead_unscaled']:.0f}%", None),
        ("Rows passing < 0.01, ÷√d_k", f"{100 * t['dead_scaled']:.0f}%", None),
    )
    key = (sh.d_k, sh.n_keys, sh.seed, sh.talk)
    plot(("gradient", *key), lambda: gradient_figure(table, sh.d_k, talk=sh.talk))
    above = table.loc[table["grad_qk_median_ratio"] > 1, "d_k"]
    crossing = (f"from d_k = {int(above.iloc[0])} on it is larger" if len(above)
                else "up to d_k = 4096 it stays smaller")  # fmt: skip
    prose(
        sh.talk,
        "The mean hides most of the effect: a few rows that happen not to saturate keep it up, while the "
        "median row gets almost nothing. One honest caveat: at the scores q·k themselves, the scaled model's "
        "gradient is also divided by √d_k (the dotted ratio). So at small d_k the scaled model's raw gradient is "
        f"the smaller one; {crossing}. What scaling buys is a softmax that still passes gradient on every row.",
    )
    st.subheader(f"The Jacobian of one row at d_k = {sh.d_k}")
    prose(
        sh.talk,
        "Each cell is how much weight s_i moves when logit z_j moves. The same query and keys as the bars on "
        "the saturation tab; where a row is one-hot, the whole matrix is (nearly) zero.",
    )
    plot(("jacobian", *key), lambda: jacobian_figure(row["jac_unscaled"], row["jac_scaled"], sh.d_k, talk=sh.talk))
    numbers(table, {
        "d_k": NUMBER("d_k"),
        "jac_diag_unscaled": NUMBER("mean s(1−s) (q·k)", format="%.3g"),
        "jac_diag_scaled": NUMBER("mean s(1−s) (÷√d_k)", format="%.3g"),
        "grad_median_unscaled": NUMBER("median ‖∂L/∂z‖ (q·k)", format="%.3g"),
        "grad_median_scaled": NUMBER("median ‖∂L/∂z‖ (÷√d_k)", format="%.3g"),
        "grad_median_ratio": NUMBER("median ratio", format="%.3g"),
        "grad_unscaled": NUMBER("mean ‖∂L/∂z‖ (q·k)", format="%.3g"),
        "grad_scaled": NUMBER("mean ‖∂L/∂z‖ (÷√d_k)", format="%.3g"),
        "grad_ratio": NUMBER("mean ratio", format="%.3g"),
        "dead_unscaled": NUMBER("rows < 0.01 (q·k)", format="percent"),
        "dead_scaled": NUMBER("rows < 0.01 (÷√d_k)", format="percent"),
        "grad_qk_median_ratio": NUMBER("median ratio at q·k", format="%.3g"),
    }, f"{rows} rows of {sh.n_keys} keys per d_k; upstream gradient g ~ N(0, I); seed {sh.seed}.")  # fmt: skip


def strategies_tab(sh: Shared) -> None:
    rows = rows_for(sh.n_keys)
    st.latex(
        r"s=\operatorname{softmax}\!\left(\frac{q\cdot k}{c}\right),\quad "
        r"c\in\{1,\ \sqrt{d_k},\ d_k,\ d_k^{1/4},\ 2\sqrt{d_k},\ \tau\}"
        r"\qquad s=\operatorname{softmax}\!\left(\frac{\hat q\cdot\hat k}{\tau}\right),"
        r"\ \hat q=\frac{q}{\lVert q\rVert}"
    )
    st.slider("Entropy the learned temperatures aim for (% of uniform)", 10, 90, step=5, key="sc_target",
              help="τ is fitted by gradient descent until the mean row entropy reaches this.")  # fmt: skip
    target = int(st.session_state["sc_target"])
    with st.spinner("Fitting the temperatures…"):
        table = strategies_data(sh.d_k, sh.n_keys, sh.seed, target)
    learned = table.loc[table["strategy"] == "learned τ"].iloc[0]
    cosine = table.loc[table["strategy"] == "cosine / τ"].iloc[0]
    prose(
        sh.talk,
        f"Each divisor is tried on the same {rows} random rows at d_k = {sh.d_k}. ÷d_k flattens the rows to "
        "near-uniform, ÷d_k^¼ leaves them peaked; ÷√d_k is the one that keeps the score variance at 1 at every width.",
        f"**How τ was learned.** Starting from τ = 1 (no scaling), 150 Adam steps on log τ minimise "
        f"(mean entropy / log n − {target}%)² over {rows} other rows; the table measures the result on fresh rows. "
        f"Here τ = {learned['divisor']:.3g}, against √d_k = {math.sqrt(sh.d_k):.3g}: the temperature a target "
        f"asks for is of the order of √d_k, and which one is 'right' depends on the target. Cosine attention "
        f"normalises q and k first, so its scores lie in [−1, 1] and need a small τ "
        f"({cosine['divisor']:.3g} here) to be anything but uniform.",
    )
    plot(("strategies", sh.d_k, sh.n_keys, sh.seed, target, sh.talk), lambda: strategies_figure(table, talk=sh.talk))
    numbers(table, {
        "strategy": st.column_config.TextColumn("strategy"),
        "divisor": NUMBER("divisor", format="%.4g"),
        "score_var": NUMBER("score var", format="%.4g"),
        "score_range": NUMBER("max − min", format="%.3g"),
        "entropy_pct": NUMBER("entropy %", format="%.1f"),
        "max_weight": NUMBER("max weight", format="%.3f"),
        "how": st.column_config.TextColumn("how", width="large"),
    }, f"d_k = {sh.d_k}, {sh.n_keys} keys, seed {sh.seed}; measured on rows the fit never saw.")  # fmt: skip


def init_tab(sh: Shared) -> None:
    st.latex(
        r"q = xW_Q,\ W_Q\sim\mathcal N(0,\sigma^2):\quad \operatorname{Var}(q_i)=d_{model}\,\sigma^2\,"
        r"\mathbb E[x^2]\qquad \operatorname{Var}(q\cdot k)=d_k\operatorname{Var}(q_i)^2"
    )
    snap("sc_dm", D_MODEL_CHOICES)
    c = st.columns([3, 2, 2])
    c[0].select_slider("Model width d_model", options=D_MODEL_CHOICES, key="sc_dm")
    c[1].number_input("Custom std σ", min_value=0.001, max_value=2.0, step=0.01, format="%.3f", key="sc_std")
    c[2].toggle("LayerNorm the inputs first", key="sc_ln",
                help="Normalise each token vector to mean 0, variance 1 before the projections.")  # fmt: skip
    s = st.session_state
    d_model, layernorm, custom = int(s["sc_dm"]), bool(s["sc_ln"]), float(s["sc_std"])
    table = init_data(d_model, sh.d_k, layernorm, sh.seed, custom)
    prose(
        sh.talk,
        "√d_k assumes q and k have unit-variance entries. That holds only if the projections are initialised "
        "for it and the inputs have unit size. Here 256 token vectors of varying size (gains 0.5 to 4, like a "
        "residual stream) are projected with W_q, W_k drawn at each std.",
    )
    lecun = table.loc[table["init"] == "1/√d_model"].iloc[0]
    prose(
        sh.talk,
        f"With 1/√d_model the queries' variance is E[x²] = {lecun['x_var']:.2f}"
        + (" (LayerNorm has made it 1)" if layernorm else " (the inputs are not normalised)")
        + f", and the ÷√d_k scores have variance {lecun['score_var_scaled']:.3g} rather than 1. "
        "Too small a std flattens every row; too large saturates it even after ÷√d_k."
        + (" Xavier's √(2/(d_model + d_k)) equals 1/√d_model here, since d_model = d_k." if d_model == sh.d_k else ""),
    )
    plot(("init", d_model, sh.d_k, layernorm, sh.seed, custom, sh.talk), lambda: init_figure(table, talk=sh.talk))
    numbers(table, {
        "init": st.column_config.TextColumn("init"), "std": NUMBER("σ", format="%.4g"),
        "q_var": NUMBER("Var(q)", format="%.4g"), "q_var_theory": NUMBER("theory", format="%.4g"),
        "score_var_unscaled": NUMBER("Var(q·k)", format="%.4g"),
        "score_var_theory": NUMBER("theory", format="%.4g"),
        "score_var_scaled": NUMBER("Var(q·k/√d_k)", format="%.4g"),
        "optimal_divisor": NUMBER("divisor for variance 1", format="%.4g"),
        "entropy_pct_scaled": NUMBER("entropy % (÷√d_k)", format="%.1f"),
    }, f"d_model = {d_model}, d_k = {sh.d_k}, 256 tokens, seed {sh.seed}; "
       f"{'with' if layernorm else 'without'} LayerNorm.")  # fmt: skip


def _cell(x: float) -> str:
    """A weight or exp value for the overflow table, with ∞ and NaN spelled out."""
    if math.isnan(x):
        return "NaN (∞/∞)"
    if math.isinf(x):
        return "∞ (overflow)" if x > 0 else "−∞"
    return f"{x:.4g}"


def _verdict_box(broken: bool, magnitude: int, dtype: str) -> None:
    if broken:
        st.warning(f"At a largest logit of {magnitude}, exp overflows in {dtype}: the naive softmax returns NaN "
                   "(not a number) where the max-subtracted one still gives the right weights.",
                   icon=":material/warning:")  # fmt: skip
    else:
        st.success(f"At a largest logit of {magnitude}, {dtype} holds every exp(x): both versions agree.",
                   icon=":material/check_circle:")  # fmt: skip


def stability_tab(sh: Shared) -> None:
    st.latex(
        r"\operatorname{softmax}(x)_i=\frac{e^{x_i}}{\sum_j e^{x_j}}=\frac{e^{x_i-m}}{\sum_j e^{x_j-m}},"
        r"\qquad m=\max_j x_j"
    )
    snap("sc_mag", MAG_CHOICES)
    c = st.columns([3, 2])
    c[0].select_slider("Largest logit (8 logits from −x to +x)", options=MAG_CHOICES, key="sc_mag")
    c[1].radio("Number format", DTYPE_CHOICES, key="sc_dtype", horizontal=True)
    s = st.session_state
    magnitude, dtype = int(s["sc_mag"]), str(s["sc_dtype"])
    limit = overflow_limit(dtype)
    table, sweep = overflow_data(magnitude, dtype)
    prose(
        sh.talk,
        f"The largest {dtype} number is {math.exp(limit):.4g} ≈ e^{limit:.1f}. Past a logit of {limit:.1f}, "
        "exp(x) overflows to ∞, "
        "the sum is ∞ too, and ∞/∞ is **NaN**, *not a number*: an undefined result that then spreads through "
        "every sum it enters. Subtracting the row maximum m first makes every exponent ≤ 0, so nothing "
        "overflows, and the weights are unchanged because the factor e^(−m) cancels.",
        f"Unscaled scores at d_k = {sh.d_k} have a std of about √d_k = {math.sqrt(sh.d_k):.1f}; in float16, a "
        f"single score above {overflow_limit('float16'):.1f} is enough to break a naive softmax.",
    )
    broken = not bool(table["naive_finite"].all())
    # In talk mode the verdict goes under the figures, so they fit the screen.
    verdict = st.container() if not sh.talk else None
    c = st.columns(2)
    fit = bool(st.session_state.pop(_FIT, False))  # side by side: both fit the window, or neither
    with c[0]:
        plot(("overflow_bars", magnitude, dtype, sh.talk), lambda: overflow_bars_figure(table, talk=sh.talk),
             fit=fit, metrics_after=False)  # fmt: skip
    with c[1]:
        plot(("overflow_curve", magnitude, dtype, sh.talk),
             lambda: overflow_figure(sweep, dtype, limit, magnitude, talk=sh.talk), fit=fit, metrics_after=False)
    with verdict if verdict is not None else st.container():
        _verdict_box(broken, magnitude, dtype)
    shown = pd.DataFrame({
        "logit": [f"{x:.4g}" for x in table["logit"]],
        "exp(x)": [_cell(x) for x in table["exp_naive"]],
        "naive": [_cell(x) for x in table["naive"]],
        "max-subtracted": [_cell(x) for x in table["stable"]],
        "float64 reference": [f"{x:.4g}" for x in table["reference"]],
    })  # fmt: skip
    with st.expander("The numbers", expanded=False):
        st.caption("∞ (overflow): exp(x) is larger than the format can hold. NaN (∞/∞): not a number, the "
                   "undefined result of dividing infinity by infinity.")  # fmt: skip
        st.dataframe(shown, hide_index=True, width="stretch")


def training_controls(d_k: int) -> tuple[str, float, str, int]:
    def reset_lr() -> None:
        st.session_state["sc_lr"] = DEFAULT_LR[st.session_state["sc_opt"]]

    steps = step_choices(d_k)
    snap("sc_lr", LR_CHOICES)
    snap("sc_steps", steps)
    c = st.columns([2, 3, 2, 3])
    c[0].radio("Optimizer", tuple(DEFAULT_LR), key="sc_opt", horizontal=True, on_change=reset_lr,
               format_func=lambda o: {"adam": "Adam", "sgd": "SGD"}[o])  # fmt: skip
    c[1].select_slider("Learning rate", options=LR_CHOICES, key="sc_lr", format_func=lambda x: f"{x:g}")
    c[2].selectbox("Initial std of W_q, W_k", tuple(TRAIN_INITS), key="sc_init", format_func=TRAIN_INITS.get)
    c[3].select_slider("Steps", options=steps, key="sc_steps",
                       help=None if steps == STEP_CHOICES else f"At d_k = {d_k}, up to {steps[-1]} steps, "
                       "so that a run stays within a few seconds.")  # fmt: skip
    s = st.session_state
    return str(s["sc_opt"]), float(s["sc_lr"]), str(s["sc_init"]), int(s["sc_steps"])


def _verdict(summary: pd.DataFrame, steps: int) -> str:
    """What the two curves show, in one or two sentences built from the measured numbers."""
    sc, un = summary.set_index("run").loc["scaled"], summary.set_index("run").loc["unscaled"]

    def reached(r: pd.Series) -> str:
        s = r["steps_to_threshold"]
        return f"at step {int(s)}" if not math.isnan(s) else f"not within {steps} steps"

    text = (f"The scaled model's loss fell below {THRESHOLD} {reached(sc)}; the unscaled model's "
            f"{reached(un)}.")  # fmt: skip
    a, b = sc["steps_to_threshold"], un["steps_to_threshold"]
    if not math.isnan(a) and not math.isnan(b):
        if b > a:
            text += f" Unscaled needed {b / max(a, 1):.1f}× as many steps."
        elif b < a:
            text += " Here the unscaled model was faster."
    if un["end_loss"] > 0.9 * un["start_loss"]:
        text += (f" The unscaled run stalled: its loss only went from {un['start_loss']:.2f} to "
                 f"{un['end_loss']:.2f}.")  # fmt: skip
    elif math.isnan(b):
        text += (f" It did not stall, though: its loss went from {un['start_loss']:.2f} to "
                 f"{un['end_loss']:.2f}.")  # fmt: skip
    return text


def training_tab(sh: Shared) -> None:
    st.latex(
        r"o=\operatorname{softmax}\!\left(\frac{q K^{\top}}{c}\right)V,\quad c\in\{1,\sqrt{d_k}\}"
        r"\qquad L=\tfrac{1}{d_v}\lVert o-v_t\rVert^2"
    )
    prose(
        sh.talk,
        f"A one-head, attention-only model learns to fetch a value: each example has n = {sh.n_keys} random "
        "tokens with random values, and the query is a fixed rotation of one of the tokens, so W_q and W_k must "
        "learn to match it. The loss is on the attention output, so every gradient passes through the softmax. "
        "Both runs start from the same weights and see the same data; only the ÷√d_k differs.",
    )
    optimizer, lr, init, steps = training_controls(sh.d_k)
    run_key = (sh.d_k, sh.n_keys, optimizer, lr, init, steps, sh.seed)
    runs = training_runs(*run_key)
    summary = training_summary(runs, THRESHOLD)
    if not sh.talk:  # in talk mode the sentence goes under the figures, so they fit the screen
        st.markdown(f"**What this run shows.** {_verdict(summary, steps)}")
    by = summary.set_index("run")
    metrics(
        ("Final loss, ÷√d_k", f"{by.loc['scaled', 'end_loss']:.3f}", "mean of the last 10% of steps"),
        ("Final loss, unscaled", f"{by.loc['unscaled', 'end_loss']:.3f}", "mean of the last 10% of steps"),
        ("Logit std at step 0, ÷√d_k", f"{by.loc['scaled', 'start_logit_std']:.2f}", "the softmax's input"),
        ("Logit std at step 0, unscaled", f"{by.loc['unscaled', 'start_logit_std']:.2f}", "the softmax's input"),
    )
    uniform = (sh.n_keys - 1) / sh.n_keys
    c = st.columns(2)
    fit = bool(st.session_state.pop(_FIT, False))  # side by side: both fit the window, or neither
    with c[0]:
        plot(("train_loss", *run_key, sh.talk), lambda: training_figure(
            runs, "loss", title="Loss (faint: each step; bold: 10-step mean)", y_title="loss",
            smooth_column="loss_smooth", hlines=[(uniform, "uniform weights")], talk=sh.talk),
            fit=fit, metrics_after=False)  # fmt: skip
    with c[1]:
        plot(("train_grad", *run_key, sh.talk), lambda: training_figure(
            runs, "grad_scores", title="Gradient at the scores ‖∂L/∂(qKᵀ)‖", y_title="gradient norm",
            smooth_column="grad_scores_smooth", log_y=True, talk=sh.talk), fit=fit, metrics_after=False)  # fmt: skip
    if sh.talk:
        st.markdown(f"**What this run shows.** {_verdict(summary, steps)}")
    flush_metrics()
    prose(
        sh.talk,
        "What a sweep of this model shows (benchmarks/scaling_training.py, 3 seeds, 200 steps, 16 keys): the "
        "unscaled model always starts worse, and the gap grows with d_k and with the initial std. With Adam it "
        "lags from d_k ≈ 64, misses a loss of 0.1 within 200 steps from d_k ≈ 1024, and at d_k = 4096 some runs "
        "barely move. With plain SGD the ÷√d_k also divides the gradient reaching W_q and W_k, so at one "
        "learning rate the unscaled model takes larger steps: it is *faster* up to d_k ≈ 256 and falls behind "
        "beyond. So in this small task the unscaled model usually still learns; what ÷√d_k buys is a start "
        "outside the saturated regime, and that matters more the wider the keys.",
    )
    numbers(summary, {
        "run": st.column_config.TextColumn("run"),
        "start_loss": NUMBER("loss, first 10 steps", format="%.3f"),
        "end_loss": NUMBER("loss, last 10%", format="%.3f"),
        "end_accuracy": NUMBER("accuracy, last 10%", format="percent"),
        "steps_to_threshold": NUMBER(f"steps to loss < {THRESHOLD}", format="%d"),
        "start_logit_std": NUMBER("softmax input std, step 0", format="%.3g"),
        "start_grad_logits": NUMBER("‖∂L/∂z‖, step 0", format="%.3g"),
        "end_grad_logits": NUMBER("‖∂L/∂z‖, last 10%", format="%.3g"),
    }, f"d_k = {sh.d_k}, n = {sh.n_keys}, d_model = {TOY_D_MODEL}, batch {toy_batch(sh.n_keys)}, {optimizer}, "
       f"lr {lr:g}, init {TRAIN_INITS[init]}, seed {sh.seed}. An empty 'steps' cell: never got there.")  # fmt: skip


TAB_BODIES = {
    "Variance": variance_tab,
    "Saturation": saturation_tab,
    "Gradients": gradients_tab,
    "Scaling strategies": strategies_tab,
    "Initialisation": init_tab,
    "Numerical stability": stability_tab,
    "Training": training_tab,
}


def scaling_page() -> None:
    urlstate.seed(PARAMS)
    talk = urlstate.talk_mode()
    if not talk:  # on a projector the tabs say where we are; the room goes to the figure
        st.title("The √d_k explorer")
    if not talk:
        st.markdown(
            "Why attention divides its scores by √d_k, measured live: each tab samples random vectors, "
            "computes what the claim predicts, and shows both."
        )
    urlstate.notices()
    urlstate.ensure_choice("sc_tab", TABS)
    sh = shared_controls(str(st.session_state["sc_tab"]), talk)
    tabs = st.tabs(list(TABS), key="sc_tab", on_change="rerun")
    for name, tab in zip(TABS, tabs, strict=True):
        if tab.open:
            if talk:  # the metrics wait for the first figure (see metrics and plot)
                st.session_state[_FIT] = True
            with tab:
                try:
                    TAB_BODIES[name](sh)
                except ValueError as exc:
                    st.error(f"These settings cannot be computed: {exc}")
                finally:
                    st.session_state.pop(_FIT, None)
                    flush_metrics()
    urlstate.publish(PARAMS)


scaling_page()
