"""A cold visit pays only for what its page uses: checked on the modules a fresh interpreter loads.

``import torch`` takes seconds on a small machine; pandas and ``torch.utils.benchmark`` most of one
more. The home page and the frame need none of them; the walkthrough needs torch but neither of
the others; ``import attention_core`` needs torch and nothing else. Each case runs in a fresh
``python`` so that nothing this test session imported counts.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WALKTHROUGH = "from attention_core.walkthrough import run_walkthrough"
KV_TABS = "import ui.decoder.reading, ui.heads.calculator, ui.heads.decode"  # cache sizes and decode slopes


def loaded_after(code: str) -> set[str]:
    """The top-level names in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    script = f"{code}\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(out.stdout.split())


@pytest.mark.parametrize(
    ("code", "absent"),
    [
        ("import ui.frame, ui.links, ui.draw", {"torch", "pandas", "attention_core.device"}),
        (WALKTHROUGH, {"pandas", "torch.utils.benchmark", "attention_core.bench", "attention_core.decoder"}),
        ("import figures.walkthrough", {"torch", "pandas"}),
        (KV_TABS, {"attention_core.bench", "torch.utils.benchmark"}),
    ],
)
def test_a_page_loads_only_what_it_uses(code: str, absent: set[str]) -> None:
    loaded = loaded_after(code)
    assert not (absent & loaded), f"{code!r} loaded {sorted(absent & loaded)}"


def test_the_walkthrough_check_is_not_vacuous() -> None:
    loaded = loaded_after(WALKTHROUGH)
    assert {"torch", "attention_core.walkthrough"} <= loaded


def test_importing_the_core_costs_what_importing_torch_costs() -> None:
    """The package re-exports only torch-only modules: the benchmark, the √d_k statistics (pandas), the
    model (safetensors, tokenizers) and Triton are imported from their own paths, by the pages that use them."""
    extra = loaded_after("import attention_core") - loaded_after("import torch")
    assert extra, "the check is vacuous: attention_core loaded nothing"
    assert all(name.startswith("attention_core") for name in extra), sorted(extra)
    heavy = {"attention_core.bench", "attention_core.scaling", "attention_core.bert", "attention_core.kv_cache",
             "attention_core.decoder"}  # fmt: skip
    assert not heavy & extra, sorted(heavy & extra)
