"""The tests' own tooling, which the benchmark scripts share: `browser` (a `streamlit run` driven by
Chromium through Playwright) and `widgets` (a page's widgets walked through AppTest's public API)."""
