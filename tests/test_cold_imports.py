"""A cold visit pays only for what its page uses: checked on the modules a fresh interpreter loads.

``import torch`` takes seconds on a small machine; pandas and ``torch.utils.benchmark`` most of one
more. The home page and the frame need none of them; the walkthrough needs torch but neither of
the others. Each case runs in a fresh ``python`` so that nothing this test session imported counts.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def loaded_after(code: str) -> set[str]:
    """The top-level names in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    script = f"{code}\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(out.stdout.split())


@pytest.mark.parametrize(
    ("code", "absent"),
    [
        ("import attention_core", {"torch", "pandas"}),
        ("import ui.frame, ui.viewport, ui.urlstate", {"torch", "pandas", "attention_core.device"}),
        ("from attention_core import run_walkthrough", {"pandas", "torch.utils.benchmark", "attention_core.bench"}),
        ("import figures.walkthrough", {"torch", "pandas"}),
    ],
)
def test_a_page_loads_only_what_it_uses(code: str, absent: set[str]) -> None:
    loaded = loaded_after(code)
    assert not (absent & loaded), f"{code!r} loaded {sorted(absent & loaded)}"


def test_the_lazy_names_are_the_ones_the_walkthrough_needs() -> None:
    loaded = loaded_after("from attention_core import run_walkthrough")
    assert {"torch", "attention_core.walkthrough"} <= loaded  # the check above is not vacuous


def test_every_public_name_resolves_to_its_submodule() -> None:
    import importlib

    import attention_core

    for name in attention_core.__all__:
        value = getattr(attention_core, name)
        module = importlib.import_module(attention_core._EXPORTS[name], "attention_core")
        assert value is getattr(module, name), name
    with pytest.raises(AttributeError, match="no attribute"):
        attention_core.not_a_name  # noqa: B018
    assert set(attention_core.__all__) <= set(dir(attention_core))
