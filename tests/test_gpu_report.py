"""benchmarks/gpu_report.py: refuses politely without CUDA, and its logic runs on the CPU (a dry run)."""

from __future__ import annotations

import csv
import importlib.util
import io
import sys
import warnings
from pathlib import Path

import pytest
import torch

from attention_core.bench import EXACT, IMPLEMENTATIONS, NOT_AVAILABLE, Impl, textbook_extra_bytes

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def report():
    spec = importlib.util.spec_from_file_location("gpu_report", ROOT / "benchmarks" / "gpu_report.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up by name
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def test_without_cuda_it_says_so_in_a_sentence_and_exits_2(report, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # as on a machine without a GPU
    out = io.StringIO()
    assert report.main([], stream=out) == 2
    text = out.getvalue()
    assert text.startswith("This report needs a CUDA GPU") and "--device cpu" in text
    assert text.count("\n") == 1  # one sentence, no traceback, nothing measured


def test_the_defaults_are_the_issues_grid(report):
    args = report._parser().parse_args([])
    assert args.n == [1024, 2048, 4096, 8192, 16384, 32768] and args.fp32_n == [4096]
    assert args.impl == list(EXACT) and (args.heads, args.d, args.batch) == (16, 64, 1)  # approximations: no 2× rule


def _refusing() -> Impl:
    def run(inputs, causal):
        warnings.warn("cuDNN attention does not support these inputs.", UserWarning, stacklevel=1)
        raise RuntimeError("No available kernel. Aborting execution.")

    return Impl("sdpa-refuses", "refuses", run, textbook_extra_bytes, lambda i, c: "cudnn", forced=True)


def test_a_dry_run_on_the_cpu_prints_every_column(report, monkeypatch, tmp_path):
    monkeypatch.setitem(IMPLEMENTATIONS, "sdpa-refuses", _refusing())
    path, out = tmp_path / "gpu.csv", io.StringIO()
    argv = ["--device", "cpu", "--n", "32", "64", "--fp32-n", "32", "--heads", "1", "--d", "8"]
    argv += ["--min-run-time", "0", "--check-rows", "16", "--csv", str(path)]
    argv += ["--impl", "textbook", "sdpa", "sdpa-math", "sdpa-efficient", "sdpa-refuses", "tiled"]
    assert report.main(argv, stream=out) == 0
    text = out.getvalue()
    for column in ("×sdpa", "peak/pred", "err vs f64", "2× rule"):
        assert column in text
    assert "torch has the memory-efficient kernel only for CUDA GPUs" in text  # n/a with its reason
    assert f"{NOT_AVAILABLE}: cuDNN attention does not support these inputs." in text
    assert "error" not in text.lower().replace("err vs f64", "")
    assert "FlashAttention's 2× rule: 12/12 pass" in text  # 4 that run here × (2 fp16 n + 1 fp32 n)
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["impl"], r["dtype"], r["n"]) for r in rows][:6] == [
        ("textbook", "float16", "32"),
        ("sdpa", "float16", "32"),
        ("sdpa-math", "float16", "32"),
        ("sdpa-efficient", "float16", "32"),
        ("sdpa-refuses", "float16", "32"),
        ("tiled", "float16", "32"),
    ]
    by = {(r["impl"], r["dtype"], r["n"]): r for r in rows}
    assert float(by[("sdpa", "float16", "64")]["vs_sdpa"]) == 1.0
    assert by[("sdpa-refuses", "float32", "32")]["status"] == "n/a"
    assert all(by[(i, "float32", "32")]["verdict"] == "pass" for i in ("textbook", "sdpa", "sdpa-math", "tiled"))
