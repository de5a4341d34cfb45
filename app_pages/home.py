"""Home: what attention is, the formula, and a card for each page."""

import streamlit as st

from ui.draw import prose


def home() -> None:
    st.title("Scaled dot-product attention, step by step")
    st.latex(r"\operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V")
    prose(
        "Each token asks a **query**, every token offers a **key**, and the match between them "
        "(a dot product) decides how much of each token's **value** flows into the answer. "
        "Dividing by √d_k keeps the scores in a range where softmax still has a gradient; "
        "softmax turns each row of scores into weights that sum to 1.",
        "Every number on these pages is computed live by a small tested library, "
        "`attention_core`, on the device shown in the sidebar.",
    )
    cards = [
        ("app_pages/walkthrough.py", "Walkthrough", ":material/stairs:",
         "The five steps with real numbers: QKᵀ, ÷√d_k, the mask, softmax and ·V, on a tiny "
         "example, a sentence, or random inputs."),
        ("app_pages/scaling.py", "√d_k explorer", ":material/functions:",
         "Why the scores are divided by √d_k, measured live: variance, saturation, gradients, other "
         "scalings, initialisation, a stable softmax and a small training run, each beside its theory."),
        ("app_pages/benchmark.py", "Benchmark", ":material/speed:",
         "What attention costs on this machine: time, memory and FLOP rate against n for textbook attention, "
         "the traced path, torch's fused kernels and tiled online softmax, with the n² theory beside them."),
        ("app_pages/heads.py", "Heads", ":material/view_week:",
         "Multi-head, grouped-query and multi-query attention on a sentence, the KV cache of real models "
         "against GPU memory, and decoding token by token, timed live with and without a cache."),
        ("app_pages/model.py", "Real attention", ":material/psychology:",
         "A trained model's 72 heads (all-MiniLM-L6-v2) on your sentence, computed by our own core: who "
         "“it” looks at, attention sinks, and any head opened in the walkthrough."),
        ("app_pages/decoder.py", "A model that writes", ":material/edit_note:",
         "A trained language model (gemma-3-270m) predicting and writing token by token through our own five "
         "steps: next-token probabilities, 72 causal heads, one shared K/V, the sliding window and attention sinks."),
        ("app_pages/efficient.py", "Beyond n²", ":material/bolt:",
         "Sparse windows, BigBird, linear attention, the Performer and Linformer: what each skips, how far its "
         "output moves from exact attention, and from which n it is faster than SDPA here, measured live."),
        ("app_pages/induction.py", "Watch it learn", ":material/school:",
         "A two-layer model trained live on repeated tokens: the loss drops suddenly when an induction head "
         "forms, and its pattern, its scores and the experiments that explain it are drawn as it learns."),
    ]
    per_row = 3  # more cards in one row break their titles mid-word on a laptop screen
    for start in range(0, len(cards), per_row):
        cols = st.columns(per_row)
        for col, (path, title, icon, text) in zip(cols, cards[start : start + per_row], strict=False):
            with col, st.container(border=True, height="stretch"):
                st.subheader(title)
                st.write(text)
                st.page_link(path, label=f"Open {title}", icon=icon)


home()
