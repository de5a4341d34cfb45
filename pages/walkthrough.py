"""The five-step walkthrough: every number comes from attention_core's trace."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from attention_core import default_device
from attention_core.presets import MODEL_HEAD, MODEL_LAYER, MODEL_TEXT, PRESETS
from attention_core.walkthrough import MASK_KINDS, STEP_NAMES, run_walkthrough, top_sources, torch_snippet
from figures.style import PLOTLY_CONFIG
from figures.walkthrough import compare_masks, matrix_heatmap, output_blend, query_scores, query_weights
from ui import urlstate, viewport
from ui.params import BoolParam, ChoiceParam, FloatParam, IntParam, TextParam

VIEWS = ("steps", "all", "query", "compare")
DEVICE = str(default_device())  # the core uses torch's default device unless told: the app tells it
# The inputs of walkthrough_data, in its argument order: a view's cache key is this tuple.
DATA_KEYS = ("preset", "n", "d_model", "d_k", "d_v", "seed", "mask", "pad", "scaled", "pos", "drop", "text", "layer",
             "head")
PARAMS = [
    ChoiceParam("preset", "tiny", PRESETS, label="preset"),
    ChoiceParam("mask", "none", MASK_KINDS, label="mask"),
    BoolParam("scaled", True, label="scaling"),
    BoolParam("pos", False, label="positions"),
    IntParam("n", 6, 2, 16, label="n (tokens)"),
    IntParam("d_model", 8, 4, 64, label="d_model"),
    IntParam("d_k", 4, 1, 64, label="d_k"),
    IntParam("d_v", 4, 1, 64, label="d_v"),
    IntParam("seed", 0, 0, 9999, label="seed"),
    IntParam("pad", 1, 0, 16, label="padded keys"),
    FloatParam("drop", 0.0, 0.0, 0.5, label="dropout"),
    ChoiceParam("view", "steps", VIEWS, label="view"),
    IntParam("step", 0, 0, 5, label="step"),
    IntParam("q", -1, -1, 127, label="query"),  # -1: pick a telling default ("it")
    TextParam("text", MODEL_TEXT, 500, label="sentence"),  # the model preset's input
    IntParam("layer", MODEL_LAYER, 0, 5, label="layer"),
    IntParam("head", MODEL_HEAD, 0, 11, label="head"),
]
PRESET_NAMES = {
    "tiny": "Tiny worked example", "sentence": "“The animal didn't cross…”", "random": "Random",
    "model": "A trained model's head",
}  # fmt: skip
MASK_NAMES = {
    "none": "None (encoder self-attention)",
    "causal": "Causal (decoder self-attention)",
    "padding": "Padding (ignore pad tokens)",
    "cross": "Cross-attention (n_q ≠ n_k)",
}
VIEW_NAMES = {"steps": "Step by step", "all": "All steps", "query": "One query", "compare": "Causal vs none"}
# Talk mode: how far down the window each view's main figure starts (px), measured in Chromium
# with benchmarks/rehearsal.py; the figure takes the height that is left (ui.viewport.fit_height).
ABOVE_TALK = {"steps": 250, "steps_tall_formula": 262, "all": 150, "compare": 140}
FORMULAS = [
    r"Q = XW_Q,\quad K = XW_K,\quad V = XW_V",
    r"S = QK^\top,\qquad S_{ij} = q_i \cdot k_j",
    r"S' = S \cdot \tfrac{1}{\sqrt{d_k}}",
    r"S''_{ij} = \begin{cases} S'_{ij} & \text{key } j \text{ allowed} \\ -\infty & \text{otherwise}\end{cases}",
    r"A_{ij} = \frac{e^{S''_{ij} - m_i}}{\sum_{j'} e^{S''_{ij'} - m_i}},\quad m_i = \max_j S''_{ij}",
    r"O = AV,\qquad o_i = \sum_j A_{ij}\, v_j",
]
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


@st.cache_data(max_entries=128, show_spinner=False)
def walkthrough_data(
    preset: str, n: int, d_model: int, d_k: int, d_v: int, seed: int,
    mask: str, pad: int, scaled: bool, pos: bool, drop: float, text: str, layer: int, head: int,
) -> dict[str, Any]:
    """The trace and its checks as plain numpy arrays, cached on plain values."""
    model = None
    if preset == "model":  # the trained encoder, loaded once per server, only when this preset is chosen
        from ui.model import encoder

        model = encoder()
    r = run_walkthrough(
        preset, n=n, d_model=d_model, d_k=d_k, d_v=d_v, seed=seed, mask=mask, pad=pad,
        scaled=scaled, positions=pos, dropout_p=drop, text=text, layer=layer, head=head, model=model, device=DEVICE,
    )
    t, inp = r.trace, r.inputs

    def cpu(x: Any) -> np.ndarray:
        return x.detach().cpu().numpy()

    blocked = ~cpu(r.mask) if r.mask is not None else np.zeros((inp.n_q, inp.n_k), dtype=bool)
    return {
        "q_tokens": list(inp.query_tokens), "k_tokens": list(inp.key_tokens), "note": inp.note,
        "x_q": cpu(inp.x_q), "x_kv": cpu(inp.x_kv), "w_q": cpu(inp.w_q), "w_k": cpu(inp.w_k), "w_v": cpu(inp.w_v),
        "q": cpu(inp.q), "k": cpu(inp.k), "v": cpu(inp.v),
        "scores": cpu(t.scores), "scaled": cpu(t.scaled), "masked": cpu(t.masked), "weights": cpu(t.weights),
        "output": cpu(t.output), "dropped": cpu(t.dropped),
        "keep": cpu(t.dropout_keep) if t.dropout_keep is not None else None,
        "blocked": blocked, "scale": t.scale, "valid": r.valid_keys, "fully_masked": r.fully_masked,
        "delta_core": r.delta_core, "delta_torch": r.delta_torch,
        "row_sum_error": r.row_sum_error, "snippet": torch_snippet(r),
        "top": [top_sources(t.weights[i], inp.key_tokens, k=2) for i in range(inp.n_q)],
        "d_k": inp.d_k, "d_v": inp.d_v, "d_model": inp.d_model,
    }


def controls(box: Any) -> dict[str, Any]:
    """The input controls, drawn in ``box``; returns their values as plain Python values."""
    s = st.session_state
    with box:
        c = st.columns([1.3, 1.5, 1, 1])
        c[0].selectbox("Input", PRESETS, format_func=PRESET_NAMES.get, key="preset")
        c[1].selectbox("Mask", MASK_KINDS, format_func=MASK_NAMES.get, key="mask")
        c[2].toggle("Divide by √d_k", key="scaled", help="Off shows the raw, unscaled scores.")
        c[3].toggle("Positional encodings", key="pos", help="Add sinusoidal position codes to X.",
                    disabled=s.preset == "model")  # the model's X already holds its learned positions
        random_ = s.preset == "random"
        sized = s.preset not in ("tiny", "model")
        c = st.columns(7)
        c[0].slider("Tokens n", 2, 16, key="n", disabled=not random_, help="Random input only.")
        c[1].slider("d_model", 4, 64, key="d_model", disabled=not sized, help="Width of X.")
        c[2].slider("d_k", 1, 64, key="d_k", disabled=not sized, help="Width of Q and K.")
        c[3].slider("d_v", 1, 64, key="d_v", disabled=not sized, help="Width of V and the output.")
        c[4].number_input("Seed", 0, 9999, step=1, key="seed", disabled=not sized)
        urlstate.clamp_int("pad", 0, 16)
        c[5].slider(
            "Padded keys", 0, 16, key="pad", disabled=s.mask not in ("padding", "cross"),
            help="How many keys at the end are padding. All of them leaves a query nothing to attend to.",
        )
        c[6].slider(
            "Dropout p", 0.0, 0.5, step=0.1, key="drop",
            help="Training-mode dropout on the weights; survivors are scaled by 1/(1−p).",
        )
        if s.preset == "model":
            c = st.columns([4, 1, 1])
            c[0].text_input("Sentence", key="text", max_chars=500, help="Up to 128 tokens. Press Enter to run.")
            c[1].selectbox("Layer", range(6), key="layer")
            c[2].selectbox("Head", range(12), key="head")
    return {k: s[k] for k in DATA_KEYS}


def _step_by(delta: int) -> None:
    st.session_state.step = min(5, max(0, int(st.session_state.step) + delta))


def _labels(d: dict[str, Any], name: str) -> list[str]:
    """Axis labels by name: the token lists, or feature indices 0…d-1 of d_k, d_v or d_model."""
    if name in ("q_tokens", "k_tokens"):
        return d[name]
    return [str(i) for i in range(d[name])]


# Figures are built once per view and kept: building a Plotly heatmap costs ~30 ms, which
# would otherwise dominate every rerun. Keys are plain values, so nothing big is hashed.
@st.cache_resource(max_entries=512, show_spinner=False)
def heatmap_figure(data_key: tuple, matrix: str, rows: str, cols: str, talk: bool, opts: tuple) -> go.Figure:
    d = walkthrough_data(*data_key)
    kw = dict(opts)
    if kw.pop("use_blocked", False):
        kw["blocked"] = d["blocked"]
    if kw.pop("use_dropped", False):
        kw["dropped"] = ~d["keep"]
    return matrix_heatmap(d[matrix], _labels(d, rows), _labels(d, cols), talk=talk, **kw)


@st.cache_resource(max_entries=256, show_spinner=False)
def query_figure(data_key: tuple, kind: str, i: int, talk: bool) -> go.Figure:
    d = walkthrough_data(*data_key)
    kt = d["k_tokens"]
    if kind == "scores":
        return query_scores(d["scores"][i], d["scaled"][i], kt, scale=d["scale"], talk=talk)
    if kind == "weights":
        return query_weights(d["weights"][i], kt, blocked=d["blocked"][i], talk=talk)
    return output_blend(d["weights"][i], d["v"], kt, talk=talk)


@st.cache_resource(max_entries=64, show_spinner=False)
def compare_figure(data_key: tuple, talk: bool, width: int, height: int | None) -> go.Figure:
    base = dict(zip(DATA_KEYS, data_key, strict=True)) | {"mask": "none", "drop": 0.0}
    plain = walkthrough_data(**base)
    causal = walkthrough_data(**{**base, "mask": "causal"})
    return compare_masks(
        plain["weights"], causal["weights"], plain["q_tokens"], plain["k_tokens"],
        left_title="no mask", right_title="causal mask", talk=talk, width=width, height=height,
    )


def _heatmap(d: dict[str, Any], matrix: str, rows: str, cols: str, key: str, talk: bool, **opts: Any) -> None:
    fig = heatmap_figure(d["data_key"], matrix, rows, cols, talk, tuple(sorted(opts.items())))
    # Small side-by-side matrices (colorbar off) get no mode bar: it would cover their titles.
    config = PLOTLY_CONFIG if opts.get("colorbar", True) else {**PLOTLY_CONFIG, "displayModeBar": False}
    st.plotly_chart(fig, width="stretch", config=config, key=key)


def show_step(step: int, d: dict[str, Any], talk: bool) -> None:
    """Formula, shape, explanation and heatmap of one step."""
    qt, kt = d["q_tokens"], d["k_tokens"]
    n_q, n_k = len(qt), len(kt)
    head = st.columns([2, 3], vertical_alignment="center")
    head[0].subheader(f"{step}. {STEP_NAMES[step]}")
    with head[1]:
        st.latex(FORMULAS[step] if step != 2 or d["scale"] != 1.0 else r"S' = S \quad(\text{scaling off})")
    shapes = [
        f"X: {n_k}×{d['d_model']} → Q: {n_q}×{d['d_k']}, K: {n_k}×{d['d_k']}, V: {n_k}×{d['d_v']}",
        f"{n_q}×{d['d_k']} · ({n_k}×{d['d_k']})ᵀ → {n_q}×{n_k}",
        f"{n_q}×{n_k}, every entry × {d['scale']:.4g}" + (f" = 1/√{d['d_k']}" if d["scale"] != 1.0 else ""),
        f"{n_q}×{n_k}, {int(d['blocked'].sum())} cell(s) set to −∞",
        f"{n_q}×{n_k}, each row sums to 1",
        f"{n_q}×{n_k} · {n_k}×{d['d_v']} → {n_q}×{d['d_v']}",
    ]
    vp = viewport.viewport()
    if talk:  # the matrix gets the full width on a projector; the shape goes under the heading
        head[0].markdown(f"**Shape:** {shapes[step]}")
        # Notes go under the figure, so they never push it off the screen.
        right, left = st.container(), st.container()
        width = vp.main_width
        above = ABOVE_TALK["steps_tall_formula" if step in (3, 4) else "steps"]
        natural = 90 + 44 * n_q
        height: int | None = viewport.fit_height(above, natural=natural)
    else:
        left, right = st.columns([1, 2], gap="large")
        width, height = int(vp.main_width * 2 / 3) - 24, None
    with left:
        if not talk:
            st.markdown(f"**Shape:** {shapes[step]}")
        if not talk:
            st.markdown(EXPLAIN[step])
        if step == 3 and not d["blocked"].any():
            st.info("No mask is chosen, so this step leaves the scores unchanged.")
        if step >= 3 and d["fully_masked"]:
            rows = ", ".join(f"“{qt[i]}”" for i in d["fully_masked"])
            st.warning(
                f"Every key is masked for {rows}. Softmax has nothing to share out there, so those rows get "
                "zero weights and a zero output, as torch's fused kernels give (a plain softmax would "
                "compute 0/0 and show NaN)."
            )
    with right:
        if step == 0:
            c = st.columns(3)
            for col, name in zip(c, ("q", "k", "v"), strict=True):
                with col:
                    _heatmap(d, name, "q_tokens" if name == "q" else "k_tokens", "d_v" if name == "v" else "d_k",
                             f"wt_step0_{name}", talk, title=name.upper(), kind="plain", col_title="feature",
                             colorbar=False, width=(width - 32) // 3, height=height)
            # Lazy: the four extra heatmaps are built and sent only while the expander is open.
            xw = st.expander("X and the projection matrices W_Q, W_K, W_V", key="wt_xw", on_change="rerun")
            if not xw.open:
                return
            with xw:
                _heatmap(d, "x_kv", "k_tokens", "d_model", "wt_x", talk, title="X (keys' tokens)", kind="plain",
                         col_title="feature")
                c = st.columns(3)
                for col, name in zip(c, ("w_q", "w_k", "w_v"), strict=True):
                    with col:
                        _heatmap(d, name, "d_model", "d_v" if name == "w_v" else "d_k", f"wt_{name}", talk,
                                 title=name.upper(), kind="plain", colorbar=False)
            return
        mats = {1: "scores", 2: "scaled", 3: "masked", 4: "weights"}
        if step in mats:
            _heatmap(d, mats[step], "q_tokens", "k_tokens", f"wt_step{step}", talk,
                     kind="weights" if step == 4 else "signed", use_blocked=step >= 3, row_title="query",
                     col_title="key", width=width, height=height)
        else:
            _heatmap(d, "output", "q_tokens", "d_v", "wt_step5", talk, kind="signed", row_title="query",
                     col_title="feature", width=width, height=height)
        if step >= 4 and d["keep"] is not None:
            p = st.session_state.drop
            st.markdown(
                f"**Dropout p = {p:.1f}:** cells marked × were zeroed; the survivors are multiplied by "
                f"1/(1−p) = {1 / (1 - p):.2f}, so each row's expected total is still 1. The output uses these."
            )
            _heatmap(d, "dropped", "q_tokens", "k_tokens", "wt_dropped", talk, kind="signed", use_dropped=True,
                     row_title="query", col_title="key", width=width, height=height)


def steps_view(d: dict[str, Any], talk: bool, nav: Any = None) -> None:
    """The step control (in ``nav`` when given: talk mode puts it in the top row) and one step."""
    with nav if nav is not None else st.container():
        c = st.columns([1, 4, 1] if nav is None else [1, 2.2, 1], vertical_alignment="center")
        c[0].button("◀ Previous" if nav is None else "◀", on_click=_step_by, args=(-1,), shortcut="left",
                    width="stretch", disabled=st.session_state.step <= 0, key="wt_prev", help="Previous step (←)")
        c[1].select_slider(
            "Step", options=list(range(6)), format_func=lambda i: f"{i} · {STEP_NAMES[i]}", key="step",
            label_visibility="collapsed",
        )
        c[2].button("Next ▶", on_click=_step_by, args=(1,), shortcut="right", width="stretch",
                    disabled=st.session_state.step >= 5, key="wt_next", help="Next step (→)")
    show_step(int(st.session_state.step), d, talk)


def all_view(d: dict[str, Any], talk: bool) -> None:
    panels = [
        (1, "scores", "k_tokens", "signed"), (2, "scaled", "k_tokens", "signed"),
        (3, "masked", "k_tokens", "signed"), (4, "weights", "k_tokens", "weights"), (5, "output", "d_v", "signed"),
    ]
    cols = st.columns(2 if not talk else 1)
    vp = viewport.viewport()
    if talk:  # each panel fits the window on its own, so the presenter scrolls one panel at a time
        width = vp.main_width
        height: int | None = viewport.fit_height(ABOVE_TALK["all"], natural=90 + 44 * len(d["q_tokens"]))
    else:
        width, height = (vp.main_width - 16) // 2, None
    for i, (step, matrix, col_labels, kind) in enumerate(panels):
        with cols[i % len(cols)]:
            st.markdown(f"**{step}. {STEP_NAMES[step]}**")
            st.latex(FORMULAS[step])
            _heatmap(d, matrix, "q_tokens", col_labels, f"wt_all{step}", talk, kind=kind, use_blocked=step in (3, 4),
                     width=width, height=height)


def query_view(d: dict[str, Any], talk: bool) -> None:
    qt = d["q_tokens"]
    urlstate.ensure_choice("q", list(range(len(qt))), default=min(len(qt) - 1, _default_query(qt)))
    st.selectbox("Query token", list(range(len(qt))), format_func=lambda i: qt[i], key="q")
    i = int(st.session_state.q)
    if i in d["fully_masked"]:
        st.warning(f"Every key is masked for “{qt[i]}”, so it takes nothing from anyone: its output is zero.")
    else:
        shares = d["top"][i]
        st.markdown(f"#### {_reading(qt[i], shares)}")
    c = st.columns(2)
    with c[0]:
        st.markdown("**Scores of this query against every key**")
        fig = query_figure(d["data_key"], "scores", i, talk)
        st.plotly_chart(fig, width="stretch", config=PLOTLY_CONFIG, key="wt_qscores")
    with c[1]:
        st.markdown("**Its softmax weights**")
        fig = query_figure(d["data_key"], "weights", i, talk)
        st.plotly_chart(fig, width="stretch", config=PLOTLY_CONFIG, key="wt_qweights")
    st.markdown("**Its output, as a blend of the value rows** (each bar is weight × v; the diamond is the sum)")
    fig = query_figure(d["data_key"], "blend", i, talk)
    st.plotly_chart(fig, width="stretch", config=PLOTLY_CONFIG, key="wt_qblend")


def _default_query(tokens: list[str]) -> int:
    return tokens.index("it") if "it" in tokens else 0


def _reading(token: str, shares: list[tuple[str, float]]) -> str:
    if not shares:
        return f"“{token}” attends to nothing."
    first = f"“{token}” takes {shares[0][1]:.0%} of its value from “{shares[0][0]}”"
    if len(shares) > 1 and round(shares[1][1] * 100) > 0:  # "and 0% from …" would say nothing
        first += f" and {shares[1][1]:.0%} from “{shares[1][0]}”"
    return first + "."


def compare_view(d: dict[str, Any], talk: bool) -> None:
    if not talk:
        st.markdown(
            "With the causal mask every query may only look at itself and earlier tokens, so the weights "
            "above the diagonal become 0 and each row shares its 100% among fewer keys."
        )
    vp = viewport.viewport()
    height = viewport.fit_height(ABOVE_TALK["compare"], natural=140 + 40 * len(d["q_tokens"])) if talk else None
    fig = compare_figure(d["data_key"], talk, vp.main_width, height)
    st.plotly_chart(fig, width="stretch", config=PLOTLY_CONFIG, key="wt_compare")


def check_panel(d: dict[str, Any]) -> None:
    c = st.columns(3)
    c[0].metric("Five steps vs one core call", f"|Δ| ≤ {d['delta_core']:.1e}", border=True,
                help="Largest difference between the traced output and one call of the core's attention.")
    c[1].metric("Five steps vs torch SDPA", f"|Δ| ≤ {d['delta_torch']:.1e}", border=True,
                help="Largest difference from torch.nn.functional.scaled_dot_product_attention.")
    if d["row_sum_error"] is not None:
        c[2].metric("Each weight row sums to 1", f"|Σ − 1| ≤ {d['row_sum_error']:.1e}", border=True)
    else:
        c[2].metric("Each weight row sums to 1", "all rows masked", border=True)
    notes = []
    if d["fully_masked"]:
        notes.append(f"{len(d['fully_masked'])} fully masked row(s) sum to 0 by design.")
    if d["keep"] is not None:
        notes.append("torch SDPA is compared without dropout; the core call uses the same dropout seed.")
    if notes:
        st.caption(" ".join(notes))


def walkthrough_page() -> None:
    urlstate.seed(PARAMS)
    talk = urlstate.talk_mode()
    if not talk:
        st.title("The five steps of attention")
    urlstate.notices()
    nav = None
    if talk:  # on a projector the settings, the view switch and the step control share one row
        top = st.columns([1, 3.3, 3.6], vertical_alignment="center")
        params = controls(top[0].popover("Settings", icon=":material/tune:", width="stretch"))
        view_box, nav = top[1], top[2]
    else:
        params = controls(st.container(border=True))
        view_box = None
    try:
        d = walkthrough_data(**params)
        d["data_key"] = tuple(params[k] for k in DATA_KEYS)
    except ValueError as exc:
        st.error(f"These settings can't be computed: {exc}")
        urlstate.publish(PARAMS)
        return
    if view_box is None:
        st.caption(d["note"])
        view_box = st.container()
    view = view_box.segmented_control(
        "View", VIEWS, format_func=VIEW_NAMES.get, key="view", required=True, label_visibility="collapsed"
    )
    if view == "all":
        all_view(d, talk)
    elif view == "query":
        query_view(d, talk)
    elif view == "compare":
        compare_view(d, talk)
    else:
        steps_view(d, talk, nav)

    st.divider()
    check_panel(d)
    code = st.expander("Reproduce these matrices in torch", key="wt_code", on_change="rerun")
    if code.open:
        code.code(d["snippet"], language="python")
    masks = st.expander("Which mask does each kind of attention use?", key="wt_masks", on_change="rerun")
    if masks.open:
        chosen = params["mask"]
        import pandas as pd

        styled = pd.DataFrame(MASK_ROWS).style.apply(
            lambda row: ["background-color: #FFE9B3" if row["mask"] == chosen else "" for _ in row], axis=1
        )
        masks.dataframe(styled, hide_index=True, width="stretch")
    urlstate.publish(PARAMS)


walkthrough_page()
