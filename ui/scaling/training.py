"""Training tab: the same toy model trained with and without ÷√d_k, side by side."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from attention_core.scaling import DEFAULT_LR
from figures.scaling import training_figure
from ui import draw
from ui.draw import NUMBER
from ui.scaling import lead
from ui.scaling.cached import training_runs
from ui.scaling.settings import STEP_CHOICES, THRESHOLD, TOY_D_MODEL, Shared, step_choices, toy_batch


def figure(kind: str, run_key: tuple, talk: bool) -> go.Figure:
    runs = training_runs(*run_key).runs
    if kind == "loss":
        uniform = (run_key[1] - 1) / run_key[1]  # the loss of uniform weights over n keys
        return training_figure(runs, "loss", title="Loss (faint: each step; bold: 10-step mean)", y_title="loss",
                               uniform=uniform, talk=talk)
    return training_figure(runs, "grad_scores", title="Gradient at the scores ‖∂L/∂(qKᵀ)‖", y_title="gradient norm",
                           log_y=True, talk=talk)


LR_CHOICES = ("0.001", "0.003", "0.01", "0.03", "0.1", "0.3", "1")  # as the slider shows them and the link writes


def _reset_lr() -> None:
    st.session_state["sc_lr"] = f"{DEFAULT_LR[st.session_state['sc_opt'].lower()]:g}"  # "Adam" is train_toy's "adam"


def training_controls(d_k: int) -> tuple[str, float, str, int]:
    steps = step_choices(d_k)
    c = st.columns([2, 3, 2, 3])
    return (
        c[0].radio("Optimizer", ("Adam", "SGD"), key="sc_opt", on_change=_reset_lr, horizontal=True,
                   bind="query-params"),
        float(c[1].select_slider("Learning rate", LR_CHOICES, f"{DEFAULT_LR['adam']:g}", key="sc_lr",
                                 bind="query-params")),
        c[2].selectbox("Initial std of W_q, W_k", ("1/√d_model", "Xavier", "0.01", "0.5"), key="sc_init",
                       bind="query-params"),  # named_init_stds' names
        c[3].select_slider("Steps", steps, 200, key="sc_steps", bind="query-params",
                           help=None if steps == STEP_CHOICES else f"At d_k = {d_k}, up to {steps[-1]} steps, "
                           "so that a run stays within a few seconds."),
    )  # fmt: skip


def _verdict(t: pd.DataFrame, steps: int) -> str:
    """What the two curves show, in one or two sentences built from the measured numbers (the runs' summary)."""
    un, a, b = t.loc["unscaled"], t.loc["scaled", "steps_to_threshold"], t.loc["unscaled", "steps_to_threshold"]

    def reached(s: float) -> str:
        return f"at step {int(s)}" if not math.isnan(s) else f"not within {steps} steps"

    text = f"The scaled model's loss fell below {THRESHOLD} {reached(a)}; the unscaled model's {reached(b)}."
    if not math.isnan(a) and not math.isnan(b):
        if b > a:
            text += f" Unscaled needed {b / max(a, 1):.1f}× as many steps."
        elif b < a:
            text += " Here the unscaled model was faster."
    if un["end_loss"] > 0.9 * un["start_loss"]:
        text += f" The unscaled run stalled: its loss only went from {un['start_loss']:.2f} to {un['end_loss']:.2f}."
    elif math.isnan(b):
        text += f" It did not stall, though: its loss went from {un['start_loss']:.2f} to {un['end_loss']:.2f}."
    return text


def training_tab(sh: Shared) -> None:
    st.latex(
        r"o=\operatorname{softmax}\!\left(\frac{q K^{\top}}{c}\right)V,\quad c\in\{1,\sqrt{d_k}\}"
        r"\qquad L=\tfrac{1}{d_v}\lVert o-v_t\rVert^2"
    )
    draw.prose(
        f"A one-head, attention-only model learns to fetch a value: each example has n = {sh.n_keys} random "
        "tokens with random values, and the query is a fixed rotation of one of the tokens, so W_q and W_k must "
        "learn to match it. The loss is on the attention output, so every gradient passes through the softmax. "
        "Both runs start from the same weights and see the same data; only the ÷√d_k differs.",
    )
    optimizer, lr, init, steps = training_controls(sh.d_k)
    run_key = (sh.d_k, sh.n_keys, optimizer, lr, init, steps, sh.seed)
    t = training_runs(*run_key).table
    lead([draw.figure(figure, k, run_key, sh.talk) for k in ("loss", "grad")], ["sc_train_loss", "sc_train_grad"],
         "scaling.Training",
         ("Final loss, ÷√d_k", f"{t.loc['scaled', 'end_loss']:.3f}", "mean of the last 10% of steps"),
         ("Final loss, unscaled", f"{t.loc['unscaled', 'end_loss']:.3f}", "mean of the last 10% of steps"),
         ("Logit std at step 0, ÷√d_k", f"{t.loc['scaled', 'start_logit_std']:.2f}", "the softmax's input"),
         ("Logit std at step 0, unscaled", f"{t.loc['unscaled', 'start_logit_std']:.2f}", "the softmax's input"),
         verdict=f"**What this run shows.** {_verdict(t, steps)}")  # fmt: skip
    draw.prose(
        "What a sweep of this model shows (benchmarks/scaling_training.py, 3 seeds, 200 steps, 16 keys): the "
        "unscaled model always starts worse, and the gap grows with d_k and with the initial std. With Adam it "
        "lags from d_k ≈ 64, misses a loss of 0.1 within 200 steps from d_k ≈ 1024, and at d_k = 4096 some runs "
        "barely move. With plain SGD the ÷√d_k also divides the gradient reaching W_q and W_k, so at one "
        "learning rate the unscaled model takes larger steps: it is *faster* up to d_k ≈ 256 and falls behind "
        "beyond. So in this small task the unscaled model usually still learns; what ÷√d_k buys is a start "
        "outside the saturated regime, and that matters more the wider the keys.",
    )
    draw.numbers(t, {
        "run": st.column_config.TextColumn("run"),
        "start_loss": NUMBER("loss, first 10 steps", format="%.3f"),
        "end_loss": NUMBER("loss, last 10%", format="%.3f"),
        "end_accuracy": NUMBER("accuracy, last 10%", format="percent"),
        "steps_to_threshold": NUMBER(f"steps to loss < {THRESHOLD}", format="%d"),
        "start_logit_std": NUMBER("softmax input std, step 0", format="%.3g"),
        "start_grad_logits": NUMBER("‖∂L/∂z‖, step 0", format="%.3g"),
        "end_grad_logits": NUMBER("‖∂L/∂z‖, last 10%", format="%.3g"),
    }, f"d_k = {sh.d_k}, n = {sh.n_keys}, d_model = {TOY_D_MODEL}, batch {toy_batch(sh.n_keys)}, {optimizer}, "
       f"lr {lr:g}, init {init}, seed {sh.seed}. An empty 'steps' cell: never got there.",
       key="sc_training_numbers")  # fmt: skip
