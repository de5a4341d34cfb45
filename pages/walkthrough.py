"""The five-step walkthrough (being written)."""

import streamlit as st

st.title("Walkthrough")
