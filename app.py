"""Entry point: `streamlit run app.py`. Declares the pages and the shared frame."""

import streamlit as st

from ui import frame

frame.page_config()
pages = [
    st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("pages/walkthrough.py", title="Walkthrough", icon=":material/stairs:", url_path="walkthrough"),
    st.Page("pages/scaling.py", title="√d_k explorer", icon=":material/functions:", url_path="scaling"),
    st.Page("pages/benchmark.py", title="Benchmark", icon=":material/speed:", url_path="benchmark"),
    st.Page("pages/heads.py", title="Heads & KV cache", icon=":material/view_week:", url_path="heads"),
    st.Page("pages/model.py", title="Real attention", icon=":material/psychology:", url_path="model"),
]
nav = st.navigation(pages)
device_box = frame.sidebar()
frame.talk_css()
nav.run()
frame.after_page(device_box)  # the device line and the viewport probe: after the page, see there
