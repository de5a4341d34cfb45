"""Entry point: `streamlit run app.py`. Declares the pages and the shared frame."""

import streamlit as st

from ui import frame

frame.page_config()
nav = st.navigation([
    st.Page("app_pages/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("app_pages/walkthrough.py", title="Walkthrough", icon=":material/stairs:", url_path="walkthrough"),
    st.Page("app_pages/scaling.py", title="√d_k explorer", icon=":material/functions:", url_path="scaling"),
    st.Page("app_pages/benchmark.py", title="Benchmark", icon=":material/speed:", url_path="benchmark"),
    st.Page("app_pages/heads.py", title="Heads & KV cache", icon=":material/view_week:", url_path="heads"),
    st.Page("app_pages/model.py", title="Real attention", icon=":material/psychology:", url_path="model"),
    st.Page("app_pages/decoder.py", title="A model that writes", icon=":material/edit_note:", url_path="decoder"),
    st.Page("app_pages/efficient.py", title="Beyond n²", icon=":material/bolt:", url_path="efficient"),
    st.Page("app_pages/induction.py", title="Watch it learn", icon=":material/school:", url_path="induction"),
])  # fmt: skip
with frame.first_run_alone(nav):  # a cold server's first runs import one at a time
    slots = frame.sidebar(nav)  # after st.navigation: a rerun for an old link must keep the page
    nav.run()
    frame.after_page(*slots)
