"""The five-step walkthrough: every number comes from attention_core's trace."""

from __future__ import annotations

from typing import Any

import streamlit as st

from attention_core.presets import (
    DECODER_HEAD,
    DECODER_LAYER,
    DECODER_MAX_TOKENS,
    MODEL_HEAD,
    MODEL_LAYER,
    MODEL_TEXT,
    PRESETS,
)
from attention_core.walkthrough import MASK_KINDS, STEP_NAMES, UPSTREAM
from figures.style import PLOTLY_CONFIG
from ui import draw, links
from ui.frame import talk
from ui.walkthrough.data import Settings, Walkthrough, backward_data, walkthrough_data
from ui.walkthrough.figures import BACKWARD, backward_figure, compare_figure, heatmap_figure, query_figure

# Choices are shown, and written in the link, by these names: short, so the link stays readable.
PRESET_NAMES = {"tiny": "Tiny example", "sentence": "Sentence", "random": "Random", "model": "Trained model",
                "decoder": "Gemma decoder"}  # fmt: skip
MASK_NAMES = {"none": "No mask", "causal": "Causal", "padding": "Padding", "cross": "Cross-attention"}
VIEW_NAMES = {
    "steps": "Step by step", "all": "All steps", "query": "One query", "compare": "Causal vs none",
    "backward": "Backward",
}  # fmt: skip
UPSTREAM_NAMES = {"row": "1 on one output row", "ones": "All ones", "random": "Random"}
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
# The mask table's rows; a DataFrame is built only when its expander opens (pandas costs ~0.4 s
# to import, which a cold visit should not pay for a table it may never open).
MASK_ROWS = {
    "kind of attention": [
        "Encoder self-attention", "Decoder self-attention", "Encoder with padded batch", "Cross-attention",
    ],
    "mask": ["none", "causal", "padding", "cross"],
    "what it blocks": [
        "nothing: every token sees every token",
        "the future: token i sees tokens 0…i",
        "padding tokens added to fill a batch",
        "padding of the source sentence; queries come from the target",
    ],
}


def controls(box: Any) -> Settings:
    """The input controls, drawn in ``box``."""
    links.upgrade(preset=PRESET_NAMES, mask=MASK_NAMES, view=VIEW_NAMES, scaled=links.on_off, pos=links.on_off)
    with box:
        c = st.columns([1.3, 1.5, 1, 1])
        preset = c[0].selectbox("Input", PRESETS, format_func=PRESET_NAMES.__getitem__, key="preset",
                                bind="query-params", help="Tiny: small integers to check by hand. Sentence: “The "
                                "animal didn't cross the street because it was too tired”. Trained model: one head "
                                "of all-MiniLM-L6-v2. Gemma decoder: one head of gemma-3-270m.")
        mask = c[1].selectbox("Mask", MASK_KINDS, format_func=MASK_NAMES.__getitem__, key="mask", bind="query-params",
                              help="No mask: encoder self-attention. Causal: decoder self-attention. Padding: keys "
                              "that only fill a batch. Cross-attention: queries from a second sequence (n_q ≠ n_k).")
        p = {
            "preset": preset, "mask": mask,
            "scaled": c[2].toggle("Divide by √d_k", True, key="scaled", bind="query-params",
                                  help="Off shows the raw, unscaled scores."),
            "pos": c[3].toggle("Positional encodings", key="pos", bind="query-params",
                               disabled=preset in ("model", "decoder"),
                               help="Add sinusoidal position codes to X."),  # the model's X holds learned positions
        }  # fmt: skip
        sized = preset not in ("tiny", "model", "decoder")
        c = st.columns(7)
        p |= {
            "n": c[0].slider("Tokens n", 2, 16, 6, key="n", bind="query-params", disabled=preset != "random",
                             help="Random input only."),
            "d_model": c[1].slider("d_model", 4, 64, 8, key="d_model", bind="query-params", disabled=not sized,
                                   help="Width of X."),
            "d_k": c[2].slider("d_k", 1, 64, 4, key="d_k", bind="query-params", disabled=not sized,
                               help="Width of Q and K."),
            "d_v": c[3].slider("d_v", 1, 64, 4, key="d_v", bind="query-params", disabled=not sized,
                               help="Width of V and the output."),
            "seed": c[4].number_input("Seed", 0, 9999, 0, key="seed", bind="query-params", disabled=not sized),
            "pad": c[5].slider("Padded keys", 0, 16, 1, key="pad", bind="query-params",
                               disabled=mask not in ("padding", "cross"),
                               help="How many keys at the end are padding. All of them leaves a query nothing "
                               "to attend to."),
            "drop": c[6].slider("Dropout p", 0.0, 0.5, 0.0, 0.1, key="drop", bind="query-params",
                                help="Training-mode dropout on the weights; survivors are scaled by 1/(1−p)."),
        }  # fmt: skip
        if preset == "model":  # the trained model's own three
            c = st.columns([4, 1, 1])
            p |= {
                "text": c[0].text_input("Sentence", MODEL_TEXT, max_chars=500, key="text", bind="query-params",
                                        help="Up to 128 tokens. Press Enter to run."),
                "layer": c[1].selectbox("Layer", range(6), MODEL_LAYER, key="layer", bind="query-params"),
                "head": c[2].selectbox("Head", range(12), MODEL_HEAD, key="head", bind="query-params"),
            }  # fmt: skip
        if preset == "decoder":  # the decoder's: 18 layers of 4 query heads
            c = st.columns([4, 1, 1])
            p |= {
                "text": c[0].text_input("Sentence", MODEL_TEXT, max_chars=1000, key="text", bind="query-params",
                                        help=f"Up to {DECODER_MAX_TOKENS} tokens. Press Enter to run."),
                "layer": c[1].selectbox("Layer", range(18), DECODER_LAYER, key="dlayer", bind="query-params",
                                        help="5, 11 and 17 are global; the others have a window of 512."),
                "head": c[2].selectbox("Query head", range(4), DECODER_HEAD, key="dhead", bind="query-params"),
            }  # fmt: skip
    return Settings(**p)


def _step_by(delta: int) -> None:
    st.session_state.step = min(5, max(0, int(st.session_state.step) + delta))


def _heatmap(s: Settings, matrix: str, rows: str, cols: str, key: str, fit: str | None = None,
             **opts: Any) -> None:  # fmt: skip
    fig = draw.figure(heatmap_figure, s, matrix, rows, cols, talk(), tuple(sorted(opts.items())))
    # Small side-by-side matrices (colorbar off) get no mode bar: it would cover their titles.
    config = PLOTLY_CONFIG if opts.get("colorbar", True) else {**PLOTLY_CONFIG, "displayModeBar": False}
    draw.chart(fig, key, fit=fit, config=config)


def show_step(step: int, s: Settings, d: Walkthrough) -> None:
    """Formula, shape, explanation and heatmap of one step."""
    qt, kt = d.q_tokens, d.k_tokens
    n_q, n_k = len(qt), len(kt)
    head = st.columns([2, 3], vertical_alignment="center")
    head[0].subheader(f"{step}. {STEP_NAMES[step]}")
    with head[1]:
        st.latex(DECODER_QKV if step == 0 and d.preset == "decoder" else FORMULAS[step] if step != 2 or
                 d.scale != 1.0 else r"S' = S \quad(\text{scaling off})")  # fmt: skip
    shape = [
        f"X: {n_k}×{d.d_model} → Q: {n_q}×{d.d_k}, K: {n_k}×{d.d_k}, V: {n_k}×{d.d_v}",
        f"{n_q}×{d.d_k} · ({n_k}×{d.d_k})ᵀ → {n_q}×{n_k}",
        f"{n_q}×{n_k}, every entry × {d.scale:.4g}" + (f" = 1/√{d.d_k}" if d.scale != 1.0 else ""),
        f"{n_q}×{n_k}, {int(d.blocked.sum())} cell(s) set to −∞",
        f"{n_q}×{n_k}, each row sums to 1",
        f"{n_q}×{n_k} · {n_k}×{d.d_v} → {n_q}×{d.d_v}",
    ][step]
    fit = "walkthrough.steps-tall" if step in (3, 4) else "walkthrough.steps"
    if talk():  # the matrix gets the full width on a projector; the shape goes under the heading, notes below
        head[0].markdown(f"**Shape:** {shape}")
        right, left = st.container(), st.container()
        width, height = draw.TALK_WIDTH, draw.room(fit, natural=90 + 44 * n_q)
    else:
        left, right = st.columns([1, 2], gap="large")
        width, height, fit = int(draw.NORMAL_WIDTH * 2 / 3) - 24, None, None
        left.markdown(f"**Shape:** {shape}")
        left.markdown(EXPLAIN[step])
    with left:
        if step == 3 and not d.blocked.any():
            st.info("No mask is chosen, so this step leaves the scores unchanged.")
        if step >= 3 and d.fully_masked:
            st.warning(
                f"Every key is masked for {', '.join(f'“{qt[i]}”' for i in d.fully_masked)}. Softmax has "
                "nothing to share out there, so those rows get zero weights and a zero output, as torch's fused "
                "kernels give (a plain softmax would compute 0/0 and show NaN)."
            )
    with right:
        if step == 0:
            for col, name in zip(st.columns(3), ("q", "k", "v"), strict=True):
                with col:
                    _heatmap(s, name, "q_tokens" if name == "q" else "k_tokens", "d_v" if name == "v" else "d_k",
                             f"wt_step0_{name}", fit, title=name.upper(), kind="plain", col_title="feature",
                             colorbar=False, width=(width - 32) // 3, height=height)  # fmt: skip
            # Lazy: the four extra heatmaps are built and sent only while the expander is open.
            xw = st.expander("X and the projection matrices W_Q, W_K, W_V", key="wt_xw", on_change="rerun")
            if xw.open:
                with xw:
                    _heatmap(s, "x_kv", "k_tokens", "d_model", "wt_x", title="X (keys' tokens)", kind="plain",
                             col_title="feature")  # fmt: skip
                    for col, name in zip(st.columns(3), ("w_q", "w_k", "w_v"), strict=True):
                        with col:
                            _heatmap(s, name, "d_model", "d_v" if name == "w_v" else "d_k", f"wt_{name}",
                                     title=name.upper(), kind="plain", colorbar=False)  # fmt: skip
            return
        matrix = {1: "scores", 2: "scaled", 3: "masked", 4: "weights", 5: "output"}[step]
        _heatmap(s, matrix, "q_tokens", "d_v" if step == 5 else "k_tokens", f"wt_step{step}", fit,
                 kind="weights" if step == 4 else "signed", use_blocked=step in (3, 4), row_title="query",
                 col_title="feature" if step == 5 else "key", width=width, height=height)  # fmt: skip
        if step >= 4 and d.keep is not None:
            p = float(st.session_state.drop)
            st.markdown(
                f"**Dropout p = {p:.1f}:** cells marked × were zeroed; the survivors are multiplied by "
                f"1/(1−p) = {1 / (1 - p):.2f}, so each row's expected total is still 1. The output uses these."
            )
            _heatmap(s, "dropped", "q_tokens", "k_tokens", "wt_dropped", fit, kind="signed", use_dropped=True,
                     row_title="query", col_title="key", width=width, height=height)  # fmt: skip


def steps_view(s: Settings, d: Walkthrough, nav: Any = None) -> None:
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
    if talk():  # each panel fits the window on its own, so the presenter scrolls one panel at a time
        cols = [st.container()]
        width, height = draw.TALK_WIDTH, draw.room("walkthrough.all", natural=90 + 44 * len(d.q_tokens))
    else:
        cols, width, height = st.columns(2), (draw.NORMAL_WIDTH - 16) // 2, None
    for i, step in enumerate(range(1, 6)):
        with cols[i % len(cols)]:
            st.markdown(f"**{step}. {STEP_NAMES[step]}**")
            st.latex(FORMULAS[step])
            matrix = ("scores", "scaled", "masked", "weights", "output")[i]
            _heatmap(s, matrix, "q_tokens", "d_v" if step == 5 else "k_tokens", f"wt_all{step}", "walkthrough.all",
                     kind="weights" if step == 4 else "signed", use_blocked=step in (3, 4), width=width,
                     height=height)  # fmt: skip


def query_view(s: Settings, d: Walkthrough) -> None:
    qt = d.q_tokens
    links.upgrade(q=lambda old: qt[int(old)] if old.isdigit() and int(old) < len(qt) else None)  # by index, once
    i = st.selectbox("Query token", range(len(qt)), _default_query(qt), format_func=qt.__getitem__, key="q",
                     bind="query-params")  # fmt: skip
    if i in d.fully_masked:
        st.warning(f"Every key is masked for “{qt[i]}”, so it takes nothing from anyone: its output is zero.")
    else:
        st.markdown(f"#### {_reading(qt[i], d.top[i])}")
    c = st.columns(2)
    c[0].markdown("**Scores of this query against every key**")
    with c[0]:
        draw.chart(draw.figure(query_figure, s, "scores", i, talk()), "wt_qscores")
    c[1].markdown("**Its softmax weights**")
    with c[1]:
        draw.chart(draw.figure(query_figure, s, "weights", i, talk()), "wt_qweights")
    st.markdown("**Its output, as a blend of the value rows** (each bar is weight × v; the diamond is the sum)")
    draw.chart(draw.figure(query_figure, s, "blend", i, talk()), "wt_qblend")


def _default_query(tokens: list[str]) -> int:
    return tokens.index("it") if "it" in tokens else 0


def _reading(token: str, shares: list[tuple[str, float]]) -> str:
    """One query's reading; tokens in code, as words (a typed token such as "nan" is not a number)."""
    if not shares:
        return f"`{token}` attends to nothing."
    first = f"`{token}` takes {shares[0][1]:.0%} of its value from `{shares[0][0]}`"
    if len(shares) > 1 and round(shares[1][1] * 100) > 0:  # "and 0% from …" would say nothing
        first += f" and {shares[1][1]:.0%} from `{shares[1][0]}`"
    return first + "."


def backward_view(s: Settings, d: Walkthrough) -> None:
    """The gradient of attention step by step, from an upstream dO back to dQ, dK and dV."""
    qt = d.q_tokens
    c = st.columns([3, 2], vertical_alignment="bottom")
    upstream = c[0].segmented_control("Upstream gradient dO", UPSTREAM, format_func=UPSTREAM_NAMES.__getitem__,
                                      default="row", key="upstream", required=True, bind="query-params")  # fmt: skip
    row = c[1].selectbox("Its output row", range(len(qt)), _default_query(qt), format_func=qt.__getitem__, key="q",
                         bind="query-params", disabled=upstream != "row")  # fmt: skip
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
    width = draw.TALK_WIDTH if talk() else draw.NORMAL_WIDTH // 2 - 16
    cols = [st.container()] if talk() else st.columns(2)
    for i, (name, formula, rows, _cols, text) in enumerate(BACKWARD):
        n_rows = len(d.q_tokens if rows == "q_tokens" else d.k_tokens)
        height = draw.room("walkthrough.all", natural=90 + 44 * n_rows) if talk() else None
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
    height = draw.room("walkthrough.compare", 140 + 40 * len(d.q_tokens)) if talk() else None
    width = draw.TALK_WIDTH if talk() else draw.NORMAL_WIDTH
    draw.chart(draw.figure(compare_figure, s, talk(), width, height), "wt_compare", fit="walkthrough.compare")


def check_panel(d: Walkthrough) -> None:
    c = st.columns(3)
    c[0].metric("Five steps vs one core call", f"|Δ| ≤ {d.delta_core:.1e}", border=True,
                help="Largest difference between the traced output and one call of the core's attention.")
    c[1].metric("Five steps vs torch SDPA", f"|Δ| ≤ {d.delta_torch:.1e}", border=True,
                help="Largest difference from torch.nn.functional.scaled_dot_product_attention.")
    sums = f"|Σ − 1| ≤ {d.row_sum_error:.1e}" if d.row_sum_error is not None else "all rows masked"
    c[2].metric("Each weight row sums to 1", sums, border=True)
    notes = []
    if d.fully_masked:
        notes.append(f"{len(d.fully_masked)} fully masked row(s) sum to 0 by design.")
    if d.keep is not None:
        notes.append("torch SDPA is compared without dropout; the core call uses the same dropout seed.")
    if notes:
        st.caption(" ".join(notes))


def walkthrough_page() -> None:
    nav = None
    if talk():  # on a projector the settings, the view switch and the step control share one row
        top = st.columns([1, 4.2, 3.2], vertical_alignment="center")
        params = controls(top[0].popover("Settings", icon=":material/tune:", width="stretch"))
        view_box, nav = top[1], top[2]
    else:
        st.title("The five steps of attention")
        params = controls(st.container(border=True))
        view_box = None
    try:
        d = walkthrough_data(params)
    except ValueError as exc:
        st.error(f"These settings can't be computed: {exc}")
        return
    if view_box is None:
        st.caption(d.note)
        view_box = st.container()
    view = view_box.segmented_control("View", tuple(VIEW_NAMES), format_func=VIEW_NAMES.__getitem__, default="steps",
                                      key="view", required=True, bind="query-params", label_visibility="collapsed")
    views = {"all": all_view, "query": query_view, "compare": compare_view, "backward": backward_view}
    views.get(view, lambda s, d: steps_view(s, d, nav))(params, d)

    st.divider()
    check_panel(d)
    code = st.expander("Reproduce these matrices in torch", key="wt_code", on_change="rerun")
    if code.open:
        code.code(d.snippet, language="python")
    masks = st.expander("Which mask does each kind of attention use?", key="wt_masks", on_change="rerun")
    if masks.open:
        import pandas as pd

        styled = pd.DataFrame(MASK_ROWS).style.apply(
            lambda row: ["background-color: #FFE9B3" if row["mask"] == params.mask else "" for _ in row], axis=1
        )
        masks.dataframe(styled, hide_index=True, width="stretch")


walkthrough_page()
