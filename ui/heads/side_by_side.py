"""The "Heads side by side" tab: every head's weights on the sentence, and where “it” looks."""

from __future__ import annotations

import numpy as np
import streamlit as st

from attention_core import kv_head_of
from figures.heads import heads_grid
from ui.heads.common import plot, prose
from ui.heads.data import example_data


def heads_tab(d_model: int, n_heads: int, seed: int, causal: bool, talk: bool) -> None:
    d = example_data(d_model, n_heads, n_heads, seed, causal)
    st.latex(
        r"\operatorname{head}_i = \operatorname{softmax}\!\left(\frac{Q_i K_i^\top}{\sqrt{d_k}}\right)V_i,\qquad "
        r"O = [\operatorname{head}_1;\dots;\operatorname{head}_h]\,W_O"
    )
    if talk:
        st.markdown("**Here the heads differ only by chance:** the projections are random, not trained.")
    else:
        st.markdown(
            f"**What differs between the heads here is chance.** W_Q, W_K and W_V are random (seed {seed}), "
            "not trained, so each head's slice of them is a different random projection and its weights differ "
            "at random. In a trained model the heads specialise (one follows the previous token, one links a "
            "pronoun to its noun); nothing here has learned to."
        )
    kv = [kv_head_of(i, n_heads, n_heads) for i in range(n_heads)]
    cols = 2 if talk else 4
    plot(
        ("grid", d_model, n_heads, seed, causal, talk),
        lambda: heads_grid(d["weights_mha"], d["tokens"], kv, columns=cols, talk=talk),
        chart_key="hd_grid_fig",
    )
    it = d["tokens"].index("it")
    tops = [d["tokens"][int(np.argmax(d["weights_mha"][i, it]))] for i in range(n_heads)]
    share = [float(np.max(d["weights_mha"][i, it])) for i in range(n_heads)]
    st.markdown(
        "**Where “it” looks, head by head:** "
        + " · ".join(f"head {i}: “{t}” {s:.0%}" for i, (t, s) in enumerate(zip(tops, share, strict=True)))
    )
    prose(talk, "Change the seed: the pattern of every head changes, because it only ever came from the draw.")
