"""Entry point: `streamlit run app.py`. Declares the pages and the shared frame."""

import streamlit as st

from ui import frame

st.set_page_config(
    page_title="Attention, step by step",
    page_icon=":material/blur_on:",
    layout="wide",
    initial_sidebar_state="expanded",
)

pages = [
    st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("pages/walkthrough.py", title="Walkthrough", icon=":material/stairs:", url_path="walkthrough"),
    st.Page("pages/scaling.py", title="√d_k explorer", icon=":material/functions:", url_path="scaling"),
    st.Page("pages/benchmark.py", title="Benchmark", icon=":material/speed:", url_path="benchmark"),
    st.Page("pages/heads.py", title="Heads & KV cache", icon=":material/view_week:", url_path="heads"),
    st.Page("pages/model.py", title="Real attention", icon=":material/psychology:", url_path="model"),
]
nav = st.navigation(pages)
frame.sidebar()
frame.talk_css()
nav.run()
