"""The walkthrough's views, each drawn from the cached result for the controls' values (:class:`.data.Settings`),
and the checks under them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from attention_core.walkthrough import UPSTREAM
from figures.style import PLOTLY_CONFIG
from ui import draw, links
from ui.frame import talk

from .data import BACKWARD, Settings, Walkthrough, backward_data, backward_figure, heatmap_figure, query_figure

STEP_NAMES = ("Inputs → Q, K, V", "Scores QKᵀ", "Scale ÷√d_k", "Mask", "Softmax", "Output ·V")
UPSTREAM_NAMES = {"row": "1 on one output row", "ones": "All ones", "random": "Random"}
STEP_MATRICES = ("", "scores", "scaled", "masked", "weights", "output")  # the trace's matrix each step shows
FORMULAS = [
    r"Q = XW_Q,\quad K = XW_K,\quad V = XW_V",
    r"S = QK^\top,\qquad S_{ij} = q_i \cdot k_j",
    r"S' = S \cdot \tfrac{1}{\sqrt{d_k}}",
    r"S''_{ij} = \begin{cases} S'_{ij} & \text{key } j \text{ allowed} \\ -\infty & \text{otherwise}\end{cases}",
    r"A_{ij} = \frac{e^{S''_{ij} - m_i}}{\sum_{j'} e^{S''_{ij'} - m_i}},\quad m_i = \max_j S''_{ij}",
    r"O = AV,\qquad o_i = \sum_j A_{ij}\, v_j",
]
DECODER_QKV = (r"\begin{aligned} Q &= \mathrm{RoPE}(\mathrm{norm}(XW_Q)) \\ K &= \mathrm{RoPE}(\mathrm{norm}(XW_K)),"
               r"\quad V = XW_V \end{aligned}")  # a decoder head: QK-norm and RoPE before the scores
EXPLAIN = [
    "Each token's vector x is multiplied by three learned matrices. The **query** says what a token is "
    "looking for, the **key** what it offers, the **value** what it hands over when chosen.",
    "Row i, column j is the dot product of query i with key j: large when they point the same way. "
    "Each row is one query's opinion of every key.",
    "For random vectors with unit-variance entries, q·k has variance d_k, so scores grow with the width. "
    "Dividing by √d_k brings the variance back to about 1, where softmax is not yet saturated and still "
    "passes a useful gradient.",
    "Blocked keys get −∞. Since e^(−∞) = 0, the next step gives them exactly zero weight, whatever their "
    "score was: a query can never take information from a key it may not see.",
    "Softmax exponentiates and divides by the row total, so every row is a set of non-negative weights "
    "that sum to 1. Subtracting the row maximum first changes nothing mathematically but keeps exp from "
    "overflowing.",
    "Each output row is a weighted average of the value rows, with that query's weights. It has the width "
    "of V (d_v), not of the scores.",
]


def _heatmap(s: Settings, name: str, rows: str, cols: str, key: str, fit: str | None = None,
             **opts: Any) -> None:  # fmt: skip
    fig = draw.figure(heatmap_figure, s, name, rows, cols, talk(), tuple(sorted(opts.items())))
    # Small side-by-side matrices (colorbar off) get no mode bar: it would cover their titles.
    config = PLOTLY_CONFIG if opts.get("colorbar", True) else {**PLOTLY_CONFIG, "displayModeBar": False}
    draw.chart(fig, key, fit=fit, config=config)


def _step_heatmap(s: Settings, step: int, key: str, fit: str, **opts: Any) -> None:
    """The matrix of step 1…5: queries down, keys (the output: features) across; blocked cells marked."""
    _heatmap(s, STEP_MATRICES[step], "query_tokens", "d_v" if step == 5 else "key_tokens", key, fit,
             kind="weights" if step == 4 else "signed", use_blocked=step in (3, 4), **opts)  # fmt: skip


def _panels() -> tuple[list[DeltaGenerator], int]:
    """Where a view's matrices go, and their width: two columns on a monitor; in talk mode one, each matrix
    fitting the window on its own (:func:`_height`), so the presenter scrolls one at a time."""
    if talk():
        return [st.container()], draw.TALK_WIDTH
    return st.columns(2), (draw.NORMAL_WIDTH - 16) // 2


def _height(fit: str, n_rows: int) -> int | None:
    """A matrix's height: in talk mode what the window leaves it (at most its natural height), else its own."""
    return draw.room(fit, natural=90 + 44 * n_rows) if talk() else None


def _step_by(delta: int) -> None:
    st.session_state.step = min(5, max(0, int(st.session_state.step) + delta))


def show_step(step: int, s: Settings, d: Walkthrough) -> None:
    """Formula, shape, explanation and heatmap of one step."""
    inp, t = d.result.inputs, d.result.trace
    n_q, n_k, d_k, d_v = inp.n_q, inp.n_k, inp.d_k, inp.d_v
    head = st.columns([2, 3], vertical_alignment="center")
    head[0].subheader(f"{step}. {STEP_NAMES[step]}")
    with head[1]:
        st.latex(DECODER_QKV if step == 0 and inp.name == "decoder" else FORMULAS[step] if step != 2 or
                 t.scale != 1.0 else r"S' = S \quad(\text{scaling off})")  # fmt: skip
    shape = [
        f"X: {n_k}×{inp.d_model} → Q: {n_q}×{d_k}, K: {n_k}×{d_k}, V: {n_k}×{d_v}",
        f"{n_q}×{d_k} · ({n_k}×{d_k})ᵀ → {n_q}×{n_k}",
        f"{n_q}×{n_k}, every entry × {t.scale:.4g}" + (f" = 1/√{d_k}" if t.scale != 1.0 else ""),
        f"{n_q}×{n_k}, {int(d.blocked.sum())} cell(s) set to −∞",
        f"{n_q}×{n_k}, each row sums to 1",
        f"{n_q}×{n_k} · {n_k}×{d_v} → {n_q}×{d_v}",
    ][step]
    fit = "walkthrough.steps-tall" if step in (3, 4) else "walkthrough.steps"
    if talk():  # the matrix gets the full width on a projector; the shape goes under the heading, notes below
        head[0].markdown(f"**Shape:** {shape}")
        right, left = st.container(), st.container()
        width, height = draw.TALK_WIDTH, _height(fit, n_q)
    else:
        left, right = st.columns([1, 2], gap="large")
        width, height, fit = int(draw.NORMAL_WIDTH * 2 / 3) - 24, None, None
        left.markdown(f"**Shape:** {shape}")
        left.markdown(EXPLAIN[step])
    with left:
        if step == 3 and not d.blocked.any():
            st.info("No mask is chosen, so this step leaves the scores unchanged.")
        if step >= 3 and d.result.fully_masked:
            st.warning(
                f"Every key is masked for {', '.join(f'“{inp.query_tokens[i]}”' for i in d.result.fully_masked)}. "
                "Softmax has nothing to share out there, so those rows get zero weights and a zero output, as "
                "torch's fused kernels give (a plain softmax would compute 0/0 and show NaN)."
            )
    with right:
        if step == 0:
            for col, name in zip(st.columns(3), ("q", "k", "v"), strict=True):
                with col:
                    _heatmap(s, name, "query_tokens" if name == "q" else "key_tokens", "d_v" if name == "v" else "d_k",
                             f"wt_step0_{name}", fit, title=name.upper(), kind="plain", col_title="feature",
                             colorbar=False, width=(width - 32) // 3, height=height)  # fmt: skip
            # Lazy: the four extra heatmaps are built and sent only while the expander is open.
            xw = st.expander("X and the projection matrices W_Q, W_K, W_V", key="wt_xw", on_change="rerun")
            if xw.open:
                with xw:
                    _heatmap(s, "x_kv", "key_tokens", "d_model", "wt_x", title="X (keys' tokens)", kind="plain",
                             col_title="feature")  # fmt: skip
                    for col, name in zip(st.columns(3), ("w_q", "w_k", "w_v"), strict=True):
                        with col:
                            _heatmap(s, name, "d_model", "d_v" if name == "w_v" else "d_k", f"wt_{name}",
                                     title=name.upper(), kind="plain", colorbar=False)  # fmt: skip
            return
        _step_heatmap(s, step, f"wt_step{step}", fit, row_title="query", col_title="feature" if step == 5 else "key",
                      width=width, height=height)  # fmt: skip
        if step >= 4 and t.dropout_keep is not None:
            p = t.dropout_p
            st.markdown(
                f"**Dropout p = {p:.1f}:** cells marked × were zeroed; the survivors are multiplied by "
                f"1/(1−p) = {1 / (1 - p):.2f}, so each row's expected total is still 1. The output uses these."
            )
            _heatmap(s, "dropped", "query_tokens", "key_tokens", "wt_dropped", fit, kind="signed", use_dropped=True,
                     row_title="query", col_title="key", width=width, height=height)  # fmt: skip


def steps_view(s: Settings, d: Walkthrough, nav: DeltaGenerator | None = None) -> None:
    """The step control (in ``nav`` when given: talk mode puts it in the top row) and one step."""
    with nav if nav is not None else st.container():
        c = st.columns([1, 4, 1] if nav is None else [1, 2.2, 1], vertical_alignment="center")
        step = c[1].slider("Step", 0, 5, key="step", bind="query-params", label_visibility="collapsed",
                           help="0 inputs · 1 scores · 2 scale · 3 mask · 4 softmax · 5 output")  # fmt: skip
        c[0].button("◀ Previous" if nav is None else "◀", on_click=_step_by, args=(-1,), shortcut="left",
                    width="stretch", disabled=step <= 0, key="wt_prev", help="Previous step (←)")  # fmt: skip
        c[2].button("Next ▶", on_click=_step_by, args=(1,), shortcut="right", width="stretch",
                    disabled=step >= 5, key="wt_next", help="Next step (→)")  # fmt: skip
    show_step(step, s, d)


def all_view(s: Settings, d: Walkthrough) -> None:
    cols, width = _panels()
    height = _height("walkthrough.all", d.result.inputs.n_q)
    for step in range(1, 6):
        with cols[(step - 1) % len(cols)]:
            st.markdown(f"**{step}. {STEP_NAMES[step]}**")
            st.latex(FORMULAS[step])
            _step_heatmap(s, step, f"wt_all{step}", "walkthrough.all", width=width, height=height)


def _default_query(tokens: tuple[str, ...]) -> int:
    return tokens.index("it") if "it" in tokens else 0


def _reading(token: str, shares: list[tuple[str, float]]) -> str:
    """One query's reading; tokens in code, as words (a typed token such as "nan" is not a number)."""
    if not shares:
        return f"`{token}` attends to nothing."
    first = f"`{token}` takes {shares[0][1]:.0%} of its value from `{shares[0][0]}`"
    if len(shares) > 1 and round(shares[1][1] * 100) > 0:  # "and 0% from …" would say nothing
        first += f" and {shares[1][1]:.0%} from `{shares[1][0]}`"
    return first + "."


def query_view(s: Settings, d: Walkthrough) -> None:
    """One query: its reading, its scores and weights over the keys, and its output as a blend of the values."""
    qt = d.result.inputs.query_tokens
    links.upgrade(q=lambda old: qt[int(old)] if old.isdigit() and int(old) < len(qt) else None)  # by index, once
    i = st.selectbox("Query token", range(len(qt)), _default_query(qt), format_func=qt.__getitem__, key="q",
                     bind="query-params")  # fmt: skip
    if i in d.result.fully_masked:
        st.warning(f"Every key is masked for “{qt[i]}”, so it takes nothing from anyone: its output is zero.")
    else:
        st.markdown(f"#### {_reading(qt[i], d.top[i])}")
    titles = {"scores": "**Scores of this query against every key**", "weights": "**Its softmax weights**",
              "blend": "**Its output, as a blend of the value rows** (each bar is weight × v; the diamond is the sum)"}
    for box, (kind, title) in zip([*st.columns(2), st.container()], titles.items(), strict=True):
        with box:
            st.markdown(title)
            draw.chart(draw.figure(query_figure, s, kind, i, talk()), f"wt_q{kind}")


def backward_view(s: Settings, d: Walkthrough) -> None:
    """The gradient of attention step by step, from an upstream dO back to dQ, dK and dV."""
    inp = d.result.inputs
    c = st.columns([3, 2], vertical_alignment="bottom")
    upstream = c[0].segmented_control("Upstream gradient dO", UPSTREAM, format_func=UPSTREAM_NAMES.__getitem__,
                                      default="row", key="upstream", required=True, bind="query-params")  # fmt: skip
    row = c[1].selectbox("Its output row", range(inp.n_q), _default_query(inp.query_tokens), key="q",
                         format_func=inp.query_tokens.__getitem__, bind="query-params", disabled=upstream != "row")
    b = backward_data(upstream, row, s)
    draw.prose(
        "Training needs the gradient of a loss with respect to Q, K and V. The backward pass starts from dO, how "
        "the loss changes with each output entry, and runs the five steps in reverse. Every matrix below is "
        "computed step by step and checked against torch's autograd.",
        "**Why fused kernels store so little:** a row's softmax backward needs only its weights P and one "
        "number D = rowsum(dO ∘ O). So FlashAttention keeps each row's log-sum-exp (n numbers), recomputes P "
        "tile by tile in the backward pass, and never stores the n × n weights.",
    )
    st.caption(f"Backward steps vs torch autograd: |Δ| ≤ {b.delta_autograd:.1e}")
    cols, width = _panels()
    for i, (name, formula, rows, _cols, text) in enumerate(BACKWARD):
        height = _height("walkthrough.all", inp.n_q if rows == "query_tokens" else inp.n_k)
        with cols[i % len(cols)]:
            st.latex(formula)
            draw.prose(text)
            fig = draw.figure(backward_figure, s, upstream, row, i, talk(), width, height)
            draw.chart(fig, f"wt_back_{name}", fit="walkthrough.all")


def compare_view(s: Settings, d: Walkthrough) -> None:
    draw.prose(
        "With the causal mask every query may only look at itself and earlier tokens, so the weights "
        "above the diagonal become 0 and each row shares its 100% among fewer keys."
    )
    width = (draw.TALK_WIDTH if talk() else draw.NORMAL_WIDTH) // 2 - 8
    height = _height("walkthrough.compare", d.result.inputs.n_q)
    for col, mask in zip(st.columns(2), ("none", "causal"), strict=True):  # one colour scale, 0…1: one colour bar
        with col:
            _heatmap(replace(s, mask=mask, dropout_p=0.0), "weights", "query_tokens", "key_tokens",
                     f"wt_compare_{mask}", "walkthrough.compare", kind="weights", use_blocked=True,
                     colorbar=mask == "causal", title="no mask" if mask == "none" else "causal mask", width=width,
                     height=height)  # fmt: skip


def check_panel(d: Walkthrough) -> None:
    """The live checks: the five steps against one core call and torch SDPA, and the rows' sums."""
    r = d.result
    sums = f"|Σ − 1| ≤ {r.row_sum_error:.1e}" if r.row_sum_error is not None else "all rows masked"
    draw.metrics(
        ("Five steps vs one core call", f"|Δ| ≤ {r.delta_core:.1e}", None,
         "Largest difference between the traced output and one call of the core's attention."),
        ("Five steps vs torch SDPA", f"|Δ| ≤ {r.delta_torch:.1e}", None,
         "Largest difference from torch.nn.functional.scaled_dot_product_attention."),
        ("Each weight row sums to 1", sums, None),
        border=True,
    )  # fmt: skip
    notes = [f"{len(r.fully_masked)} fully masked row(s) sum to 0 by design."] if r.fully_masked else []
    if r.trace.dropout_keep is not None:
        notes.append("torch SDPA is compared without dropout; the core call uses the same dropout seed.")
    if notes:
        st.caption(" ".join(notes))
