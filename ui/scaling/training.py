"""Training tab: the same toy model trained with and without ÷√d_k, side by side."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from attention_core.scaling import DEFAULT_LR, training_summary
from figures.scaling import training_figure
from ui.scaling.draw import FIT, NUMBER, flush_metrics, metrics, numbers, plot, prose, snap
from ui.scaling.settings import LR_CHOICES, STEP_CHOICES, THRESHOLD, TOY_D_MODEL, TRAIN_INITS, Shared
from ui.scaling.toy_runs import step_choices, toy_batch, training_runs


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
    fit = bool(st.session_state.pop(FIT, False))  # side by side: both fit the window, or neither
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
