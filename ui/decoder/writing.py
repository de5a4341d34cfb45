"""The "Write" tab: the model writes token by token from its KV cache; each new token's attention row is drawn as
it comes, and each token is timed. Generation is heavy work: it runs under the server's one-run lock, and Stop
(a rerun) ends it between two tokens, keeping what was written."""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from attention_core.decoder import generate
from figures.decoder import generation_figure, step_times_figure
from figures.model import head_label
from ui import draw
from ui.frame import talk
from ui.runlock import flag_button, turn

from .controls import head_control, layer_control, temperature_control
from .data import prompt_data
from .model import decoder

RESULT = "dc_written"  # the session's last generation (kept across reruns, replaced by the next)
MAX_NEW = 64


@dataclass
class Generation:
    """The session's last generation, kept as it grows: Stop (a rerun) leaves what was written."""

    prompt: str
    temperature: float
    seed: int
    prompt_tokens: list[str]
    tokens: list[str] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)  # each token's wall time (the first includes the prompt)
    rows: list[np.ndarray] = field(default_factory=list)  # each token's (n_layers, H, its context), float16
    text: str = ""  # what the model wrote (the core's text_so_far: without the prompt)
    done: bool = False
    figs: dict[tuple, go.Figure] = field(default_factory=dict, repr=False)

    def rows_of(self, layer: int, head: int) -> np.ndarray:
        """One head's rows, ``(steps, n_ctx)``. Row t is the attention of the position that wrote token t: the
        prompt's last token for the first, then each written token in turn; it reads the prompt and the tokens
        written before it. The columns it cannot see yet are NaN."""
        out = np.full((len(self.rows), max(row.shape[-1] for row in self.rows)), np.nan, dtype=np.float32)
        for t, row in enumerate(self.rows):  # row: (n_layers, H, its context)
            out[t, : row.shape[-1]] = row[layer, head]
        return out

    def kept(self, key: tuple, build: Callable[[], go.Figure]) -> go.Figure:
        """A figure of this generation, built once per ``key`` and kept with it (never shared between sessions,
        whose generations differ); the heads looked at last are kept, the oldest goes."""
        key = (*key, len(self.tokens))
        if key not in self.figs:
            while len(self.figs) >= 12:
                self.figs.pop(next(iter(self.figs)))
            self.figs[key] = build()
        return self.figs[key]


def rows_figure(g: Generation, layer: int, head: int, talk: bool) -> go.Figure:
    rows = g.rows_of(layer, head)
    context = (g.prompt_tokens + g.tokens)[: rows.shape[1]]
    return generation_figure(rows, context, g.tokens, n_prompt=len(g.prompt_tokens), talk=talk)


def run_generation(text: str, temperature: float, seed: int, n_new: int, layer: int, head: int) -> None:
    """Generate under the server's lock, drawing each token's row as it lands; the result stays in the session."""
    model = decoder()
    g = Generation(text, temperature, seed, model.tokenizer.token_strings(model.tokenizer.encode(text)))
    st.session_state[RESULT] = g  # kept as it grows: Stop (a rerun) leaves what was written
    with turn(f"gemma-3-270m writing {n_new} tokens") as ours:
        if not ours:
            return
        with st.status(f"Writing {n_new} tokens…", expanded=True) as status:
            line, chart = st.empty(), st.empty()
            for step in generate(model, text, n_new, temperature=temperature, seed=seed):
                g.tokens.append(step.token)
                g.seconds.append(float(step.seconds))
                g.rows.append(step.attention_row.detach().to("cpu").float().numpy().astype(np.float16))
                g.text = step.text_so_far
                line.markdown(f"**{len(g.tokens)}/{n_new}** · {1e3 * step.seconds:.0f} ms · "
                              f"{written_text(g, keep=120)}")  # fmt: skip
                chart.plotly_chart(rows_figure(g, layer, head, talk()), width="stretch",
                                   key=f"dc_live{len(g.rows)}", config={"displayModeBar": False})  # fmt: skip
            g.done = True
            status.update(label=f"Wrote {len(g.tokens)} tokens in {sum(g.seconds):.2f} s", state="complete",
                          expanded=False)  # fmt: skip


def shown(s: str) -> str:
    """Text in markdown as written: markup characters escaped, newlines kept as line breaks."""
    for ch in "\\`*_{}[]<>()#+-.!|$~:":
        s = s.replace(ch, "\\" + ch)
    return s.replace("\n", "  \n")


def _bold(s: str) -> str:
    """The model's part in bold, line by line (markdown's bold neither starts at a space nor spans a line)."""
    out = []
    for line in s.split("\n"):
        core = line.strip()
        lead, trail = line[: len(line) - len(line.lstrip())], line[len(line.rstrip()) :]
        out.append(f"{shown(lead)}**{shown(core)}**{shown(trail)}" if core else shown(line))
    return "  \n".join(out)


def written_text(g: Generation, keep: int = 400) -> str:
    """The prompt (its last ``keep`` characters), then what the model wrote, in bold."""
    prompt = g.prompt if len(g.prompt) <= keep else "…" + g.prompt[-keep:]
    text = shown(prompt) + _bold(g.text)
    return re.sub(r"(?m)^ +", lambda m: "\u00a0" * len(m.group()), text)  # indentation kept (code)


def write_tab(text: str) -> None:
    prompt_data(text)  # a prompt the model cannot read says so here too, before anything is drawn
    row = st.columns([1.3, 1.3, 1.3, 4], vertical_alignment="center") if talk() else None
    with row[0] if row else st.container():  # talk mode: the settings' popover shares the buttons' row
        a, b = draw.settings([2, 2, 1], [1, 1, 2])
    temperature = temperature_control(a[0])
    n_new = a[1].slider("New tokens", 1, MAX_NEW, 16, key="dc_new", bind="query-params",
                        help="How many tokens to write (each one is a forward of one token through the cache).")
    seed = a[2].number_input("Seed", 0, 9999, 0, key="dc_seed", bind="query-params", disabled=temperature == 0,
                             help="Seeds the sampler; T = 0 needs none (it always takes the most likely token).")
    layer, head = layer_control(b[0]), head_control(b[1])
    # The buttons are never folded away: beside the head's controls here, in a row of their own in talk mode.
    c = row[1:] if row else b[2].columns(2)
    write = flag_button(c[0], "Write", "dc_write", type="primary", icon=":material/edit:", width="stretch")
    stop = flag_button(c[1], "Stop", "dc_stop", icon=":material/stop:", width="stretch",
                       help="Stops the writing between two tokens; what was written stays.")
    if talk():
        how = "greedy" if temperature == 0 else f"T = {temperature:.1f}, seed {seed}"
        c[2].markdown(f"{n_new} tokens, {how} · rows of {head_label(layer, head)}")
    if stop:
        st.toast("Stopped.", icon=":material/stop:")
    if write:
        run_generation(text, float(temperature), int(seed), int(n_new), layer, head)
    g: Generation | None = st.session_state.get(RESULT)
    if not g or not g.tokens:
        draw.prose(
            "Press **Write**: the model reads the prompt once, keeping every layer's keys and values (the KV cache), "
            "then writes one token at a time. Each new token is a forward pass of that one token: its query "
            "reads the cached keys, and its own key and value join the cache."
        )
        return
    if g.prompt != text:
        st.caption("Written from an earlier prompt; press Write to write from this one.")
    ended = "" if g.done else " (stopped)"
    settings = "greedy" if g.temperature == 0 else f"T = {g.temperature:.1f}, seed {g.seed}"
    st.markdown(written_text(g))
    if not talk():  # on a projector the buttons' row says it, and the figure needs the room
        st.caption(f"{len(g.tokens)} tokens written{ended}, {settings}. The bold part is the model's.")
        st.markdown(f"**Each written token's attention: {head_label(layer, head)}**")
    draw.chart(g.kept(("rows", layer, head, talk()), lambda: rows_figure(g, layer, head, talk())), "dc_rows")
    ms = [1e3 * s for s in g.seconds]
    first = ms[0] if ms else 0.0
    later = ms[1:] or ms
    draw.metrics(
        ("Per token, median", f"{statistics.median(later):.0f} ms", f"{1e3 / statistics.median(later):.3g} tokens/s"),
        ("First token", f"{first:.0f} ms", "includes reading the prompt"),
        ("Context at the end", f"{len(g.prompt_tokens) + len(g.tokens) - 1} tokens", None),
        border=True,
    )  # fmt: skip
    draw.chart(g.kept(("times", talk()), lambda: step_times_figure(g.tokens, ms, talk=talk())), "dc_times")
