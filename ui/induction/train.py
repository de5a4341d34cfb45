"""Train tab: the loss of both halves and every head's pattern, drawn live while the model trains, with Stop."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import asdict
from typing import Any

import numpy as np
import streamlit as st
import torch
from streamlit.delta_generator import DeltaGenerator

from attention_core.device import default_device
from attention_core.induction import Progress, eval_tokens, phase_change_step, train
from attention_core.induction.shipped import RUNS
from figures.induction import head_name, loss_figure, patterns_figure, scores_figure
from ui import draw
from ui.frame import talk
from ui.induction import runs
from ui.runlock import flag_button, turn

STEP_CHOICES = (200, 300, 500, 800, 1000, 1200, 1500, 2000, 3000)
EVERY = 10  # steps between records: the curves' resolution
CURVE_EVERY_S = 0.25  # redraw the curves at least 4 times a second
HEADS_EVERY_S = 1.0  # the heads' patterns cost more to draw: once a second
PHONE_ROW = "[data-testid='stColumn']:has(.st-key-in_model) {min-width: 100% !important;}"
TRAINING = "in_training"  # session state: a threading.Event, set once a run that started is kept
ABOUT = {
    "induction": "Two layers: a layer-1 head can read what a layer-0 head wrote, so the induction circuit can form.",
    "one_layer": "One layer only: a head can find the earlier copy of the current token, but nothing has written "
    "*which token came before each position*, so nothing can point at the token after it. No induction head "
    "can form. The repeated half stays far harder than with two layers: one layer only finds weaker tricks, such as "
    "favouring the tokens of the first half that have not come back yet, and slowly.",
    "no_mask": "No causal mask: every position can read the whole sequence, the token it must predict included. "
    "The loss falls on **both** halves, towards zero: the model reads the answer instead of working it out. "
    "This is why a decoder needs the mask.",
}


def train_controls(c: list[Any]) -> tuple[str, int, int]:
    variant = c[0].segmented_control("Model", tuple(runs.VARIANTS), default="induction", required=True, wrap=True,
                                     format_func=runs.VARIANTS.__getitem__, key="in_model", bind="query-params",
                                     help="The experiments: take away the second layer, or the causal mask.")
    seed = c[1].slider("Seed", 0, 99, 0, key="in_seed", bind="query-params",
                       help="Seeds the starting weights and the training sequences. Seed 0 is the shipped run's.")
    steps = c[2].select_slider("Steps", STEP_CHOICES, 1000, key="in_steps", bind="query-params",
                               help="Training steps of 64 sequences each. Stop ends a run early and keeps it.")
    return variant, seed, steps  # fmt: skip


def buttons(row: DeltaGenerator, variant: str) -> tuple[bool, bool]:
    """Train, Stop and back to the shipped run; whether Train and Stop were pressed."""
    pressed = flag_button(row, "Train", "in_train", type="primary", icon=":material/play_arrow:",
                          help="Train from scratch, live. One training at a time on this server.")
    stopped = flag_button(row, "Stop", "in_stop", icon=":material/stop:",
                          help="Stops a running or queued training; what it learned so far is kept.")
    training = st.session_state.get(TRAINING)
    if stopped and training is not None:
        # Stop reruns the page, possibly on a new thread while the old run is still being kept: wait for it.
        training.wait(timeout=10.0)
    shown = runs.current(variant)
    row.button("Show the shipped run", key="in_reset", icon=":material/restart_alt:", disabled=shown.startswith(
        "shipped:"), on_click=runs.forget, args=(variant,))  # fmt: skip
    return pressed, stopped


def _height() -> int:
    """The loss figure's and the heads grid's height: in talk mode both fit a 1280×720 screen beside each other."""
    return 400 if talk() else 440


def titles_of(prev: np.ndarray, prefix: np.ndarray) -> tuple[list[list[str]], list[str]]:
    """Each panel's head and the score of its row's job, and the rows' names: previous-token score in layer 0,
    prefix matching (induction) in the last layer (a one-layer model's only layer is its last)."""
    rows, names = [], []
    for layer in range(prev.shape[0]):
        job = prev if layer == 0 and prev.shape[0] > 1 else prefix
        rows.append([f"H{h}  {job[layer, h]:.2f}" for h in range(prev.shape[1])])
        names.append(f"L{layer} · {'prev-token' if job is prev else 'induction'}")
    return rows, names


def _loss(is_talk: bool, name: str) -> Any:
    v = runs.view(name)
    h = v.history
    return loss_figure(h.step, h.loss_first, h.loss_repeat, chance=math.log(v.vocab), max_step=v.steps,
                       phase_step=v.phase, talk=is_talk, height=_height())  # fmt: skip


def _heads(is_talk: bool, name: str) -> Any:
    v = runs.view(name)
    titles, rows = titles_of(v.scores.previous_token, v.scores.prefix_matching)
    return patterns_figure(v.example.patterns, v.tokens, titles, row_titles=rows, half=v.half, talk=is_talk,
                           height=_height())  # fmt: skip


def _scores(is_talk: bool, name: str) -> Any:
    v = runs.view(name)
    h = v.history
    return scores_figure(h.step, h.previous_token[:, 0], h.prefix_matching[:, -1], max_step=int(h.step[-1]),
                         last_layer=v.layers - 1, talk=is_talk, height=300 if is_talk else 320)  # fmt: skip


def _describe(name: str, v: runs.RunView) -> str:
    last = int(v.history.step[-1])
    shipped = name.startswith("shipped:")
    who = "the shipped run, trained by `python -m attention_core.induction`" if shipped else "your run"
    stopped = f", stopped at step {last}" if last < v.steps else ""
    took = f" in {v.history.seconds[-1]:.0f} s" if not shipped else ""
    return f"Showing {who}: seed {v.seed}, {v.steps} steps{stopped}{took}."


def _summary(v: runs.RunView, shipped: bool) -> None:
    h, sc, phase = v.history, v.scores, v.phase
    at = int(np.searchsorted(h.step, phase)) if phase is not None else None
    prev, pm = sc.previous_token[0], sc.prefix_matching[-1]
    best_prev, best_ind = int(prev.argmax()), int(pm.argmax())
    last = v.layers - 1
    draw.metrics(
        ("Phase change", f"step {phase}" if phase is not None else "not yet",
         f"{h.seconds[at]:.1f} s into training" if at is not None and not shipped else
         "repeated half below ½·ln V", "The first step at which the repeated half's loss is below half of ln V "
         "(halfway from a uniform guess to perfect)."),
        ("Repeated half", f"{sc.loss_repeat:.2f} nats", f"first half: {sc.loss_first:.2f}"),
        ("Induction head", f"{head_name(last, best_ind)}: {pm[best_ind]:.2f}", "prefix-matching score"),
        ("Previous-token head", f"{head_name(0, best_prev)}: {prev[best_prev]:.2f}" if last > 0 else "none",
         "previous-token score" if last > 0 else "one layer: nothing to compose"),
    )  # fmt: skip


def train_tab() -> None:
    if talk():  # one row: the settings folded into a popover, then the buttons
        row = st.container(horizontal=True, vertical_alignment="center")
        variant, seed, steps = train_controls([row.popover("Settings", icon=":material/tune:")] * 3)
    else:  # on a phone the model's three choices take a row of their own, so they stay on one line
        st.html(f"<style>@media (max-width: 640px) {{{PHONE_ROW}}}</style>")
        variant, seed, steps = train_controls(st.columns([2.2, 1.3, 1.6], vertical_alignment="bottom"))
        row = st.container(horizontal=True, vertical_alignment="center")
    pressed, stopped = buttons(row, variant)
    if stopped:
        st.toast("Stopped.", icon=":material/stop:")
    draw.prose(ABOUT[variant])
    bar = st.empty()
    left, right = st.columns([1, 1.15], gap="medium")
    loss_slot, heads_slot = left.empty(), right.empty()
    if pressed and _train_live(variant, seed, steps, bar, loss_slot, heads_slot):
        st.rerun()  # the finished run becomes the one shown, with the buttons that go with it
    name = runs.current(variant)
    v = runs.view(name)
    bar.caption(_describe(name, v))
    with loss_slot:
        draw.chart(draw.figure(_loss, talk(), name), "in_loss")
    with heads_slot:
        draw.chart(draw.figure(_heads, talk(), name), "in_heads")
    if talk():
        return
    st.caption(
        "Each head's weights on one held-out repeated sequence (queries down, keys across; the orange line is where "
        "the repeat begins). A previous-token head is the stripe just below the diagonal; an induction head is the "
        "stripe half a sequence further left: from each token of the repeat to the token *after* its earlier copy. "
        "The previous-token head looks back only in the first half: the induction head reads its keys there, and "
        "nowhere else is that work used."
    )
    _summary(v, name.startswith("shipped:"))
    st.subheader("The heads' jobs over training")
    draw.chart(draw.figure(_scores, talk(), name), "in_scores")
    draw.prose(
        "The **previous-token score** of a head is the mean weight a query puts on the token just before it; the "
        "**prefix-matching score**, the mean weight a query of the repeat puts on the token after its earlier "
        "copy. Both are 1 for a perfect head and are measured on 32 held-out sequences. Watch the two rise "
        "together: neither head lowers the loss alone, which is why the loss waits, then falls at once."
    )
    _numbers(v)


def _numbers(v: runs.RunView) -> None:
    import pandas as pd

    sc = v.scores
    rows = [{"head": head_name(layer, h), "previous-token": sc.previous_token[layer, h],
             "prefix-matching": sc.prefix_matching[layer, h], "copying": sc.copying[layer, h]}
            for layer in range(v.layers) for h in range(v.heads)]  # fmt: skip
    draw.numbers(pd.DataFrame(rows), {
        "head": "head",
        "previous-token": draw.NUMBER("previous-token", format="%.2f"),
        "prefix-matching": draw.NUMBER("prefix-matching", format="%.2f"),
        "copying": draw.NUMBER("copying", format="%.2f", help="The share of tokens whose own logit comes out on "
                               "top when the head attends to them (its OV circuit read through the unembedding)."),
    }, "Every head's scores at the end of the run, on the held-out sequences.", key="in_numbers")  # fmt: skip


def _train_live(variant: str, seed: int, steps: int, bar: DeltaGenerator, loss_slot: DeltaGenerator,
                heads_slot: DeltaGenerator) -> bool:  # fmt: skip
    """Train under the server's lock, redrawing the curves 4× a second and the heads once a second; keep the run,
    also when Stop (a rerun) ends it early. True once a run has finished."""
    kw = {k: v for k, v in RUNS[variant].items() if k != "steps"}
    settings = {"seed": seed, "every": EVERY, "steps": steps, **kw}
    records: list[Progress] = []
    kept, shelf = runs.session_runs(), runs.store()  # fetched now: the finally below must not call Streamlit
    done = st.session_state[TRAINING] = threading.Event()  # set once the run is kept (see train_tab)
    try:
        with turn(f"an induction model's training ({steps} steps)") as ours:
            if not ours:
                return False
            device = default_device()
            gen = train(seed=seed, steps=steps, every=EVERY, device=device, **kw)
            first = next(gen)
            records.append(first)
            cfg = first.weights.config
            settings["config"] = asdict(cfg)
            tokens = eval_tokens(cfg, seed, device)[:1]  # (1, 2·half): the sequence the heads are drawn on
            live = _Live(cfg.vocab, steps, tokens, kw["causal"])
            drawn_curve = drawn_heads = 0.0
            for p in gen:
                records.append(p)
                now = time.perf_counter()
                if now - drawn_curve >= CURVE_EVERY_S or p.step == steps:
                    drawn_curve = now
                    bar.progress(p.step / steps, text=f"step {p.step} of {steps} · {p.seconds:.1f} s · repeated half "
                                 f"{p.loss_repeat:.2f} nats · induction score {p.induction_score:.2f}")  # fmt: skip
                    loss_slot.plotly_chart(live.loss(records), width="stretch", config=draw.PLOTLY_CONFIG)
                if now - drawn_heads >= HEADS_EVERY_S or p.step == steps:
                    drawn_heads = now
                    heads_slot.plotly_chart(live.heads(p), width="stretch", config=draw.PLOTLY_CONFIG)
            return True
    finally:  # the lock is released by now
        try:
            if len(records) > 1:  # no Streamlit call here: after Stop, the next one would raise again
                kept[variant] = shelf.put(runs.run_from(records, settings))
        finally:
            done.set()


class _Live:
    """A live run's two figures, built once and then updated in place: building a plotly figure costs tens of
    milliseconds (the heads' grid, a hundred and more), which would come out of the training's time."""

    def __init__(self, vocab: int, steps: int, tokens: torch.Tensor, causal: bool) -> None:
        self.vocab, self.steps, self.tokens, self.causal = vocab, steps, tokens, causal
        self._loss: Any = None
        self._heads: Any = None
        self._phase: int | None = None

    def loss(self, records: list[Progress]) -> Any:
        x = np.array([p.step for p in records])
        first, rep = np.array([p.loss_first for p in records]), np.array([p.loss_repeat for p in records])
        phase = phase_change_step(x, rep, self.vocab)
        if self._loss is None or phase != self._phase:  # the marker is a shape: draw the figure anew, once
            self._phase = phase
            self._loss = loss_figure(x, first, rep, chance=math.log(self.vocab), max_step=self.steps,
                                     phase_step=phase, talk=talk(), height=_height())  # fmt: skip
            return self._loss
        with self._loss.batch_update():
            self._loss.data[0].update(x=x, y=first)
            self._loss.data[1].update(x=x, y=rep)
        return self._loss

    def heads(self, p: Progress) -> Any:
        pats = runs.read(p.weights, self.tokens, self.causal).patterns  # (layers, H, L, L)
        titles, rows = titles_of(np.array(p.previous_token), np.array(p.prefix_matching))
        if self._heads is None:
            self._heads = patterns_figure(pats, self.tokens[0].tolist(), titles, row_titles=rows, talk=talk(),
                                          half=self.tokens.shape[1] // 2, height=_height())  # fmt: skip
            return self._heads
        flat, heads = [t for row in titles for t in row], pats.shape[1]
        with self._heads.batch_update():
            for k, trace in enumerate(self._heads.data):
                trace.z = pats[k // heads, k % heads]
                self._heads.layout.annotations[k].text = flat[k]
        return self._heads
