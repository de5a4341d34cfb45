"""Figure builders accept tensors on any device: GPU tensors, tensors that require grad, bfloat16.

numpy reads none of these directly (a CUDA tensor raises "can't convert cuda:0 device type tensor
to numpy"). On a GPU machine the ``device`` fixture hands the builders real CUDA tensors; here a
stand-in that refuses numpy the same way checks the path on the CPU.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from figures import scaling as SF
from figures import walkthrough as WF
from figures.arrays import as_array


class OffHostTensor:
    """Behaves as torch's CUDA tensors do towards numpy: no implicit conversion, only ``.cpu()``."""

    def __init__(self, data: torch.Tensor) -> None:
        self._data = data

    def __array__(self, *args: object, **kwargs: object) -> np.ndarray:
        raise TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy it first.")

    def __iter__(self):
        raise AssertionError("iterating would hand plotly one device scalar at a time")

    def __len__(self) -> int:
        return len(self._data)

    @property
    def shape(self) -> torch.Size:
        return self._data.shape

    def detach(self) -> OffHostTensor:
        return self

    def cpu(self) -> torch.Tensor:
        return self._data


def test_the_stand_in_refuses_numpy_as_a_cuda_tensor_does() -> None:
    with pytest.raises(TypeError, match=r"Tensor\.cpu"):
        np.asarray(OffHostTensor(torch.ones(2)), dtype=float)


@pytest.mark.parametrize(
    "make",
    [
        lambda t: OffHostTensor(t),
        lambda t: t.clone().requires_grad_(True),  # numpy refuses a tensor that requires grad
        lambda t: t.to(torch.bfloat16),  # numpy has no bfloat16
    ],
    ids=["off-host", "requires-grad", "bfloat16"],
)
def test_as_array_reads_tensors_numpy_cannot(make) -> None:
    t = torch.tensor([[0.5, -1.0], [2.0, 0.25]])
    out = as_array(make(t))
    assert isinstance(out, np.ndarray) and out.dtype == np.float64
    np.testing.assert_array_equal(out, t.numpy())
    assert as_array(OffHostTensor(torch.tensor([True, False])), bool).tolist() == [True, False]


def _walkthrough_figures(weights, scores, values, blocked) -> list[go.Figure]:
    keys = ["a", "b", "c"]
    return [
        WF.matrix_heatmap(weights, ["x", "y", "z"], keys, kind="weights", blocked=blocked),
        WF.query_scores(scores[0], scores[0] * 0.5, keys, scale=0.5),
        WF.query_weights(weights[0], keys, blocked=blocked[0]),
        WF.output_blend(weights[0], values, keys),
        SF.row_bars_figure(weights[0], weights[1], 4),
        SF.temperature_bars_figure(weights[2], 2.0),
        SF.jacobian_figure(scores, scores.T, 1, 4),
    ]


def _inputs(device: torch.device) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(3, 3, generator=gen)
    blocked = torch.tensor([[False, False, True], [False, False, False], [True, False, False]])
    weights = torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)
    values = torch.randn(3, 2, generator=gen)
    return tuple(t.to(device) for t in (weights, scores, values, blocked))


def test_builders_accept_tensors_on_any_device(device: torch.device) -> None:
    """Real tensors on each device (CUDA ones on a GPU machine) give the same figures as numpy arrays."""
    tensors = _inputs(device)
    on_device = _walkthrough_figures(*tensors)
    host = _walkthrough_figures(*(t.cpu().numpy() for t in tensors))
    for a, b in zip(on_device, host, strict=True):
        assert a.to_json() == b.to_json()


def test_builders_accept_tensors_numpy_cannot_read() -> None:
    """The CPU-side check of the GPU path: every builder given tensors that refuse numpy."""
    weights, scores, values, blocked = _inputs(torch.device("cpu"))
    host = _walkthrough_figures(weights.numpy(), scores.numpy(), values.numpy(), blocked.numpy())
    wrapped = [OffHostTensor(t) for t in (weights, scores, values, blocked)]
    # indexing a row of a device tensor gives a device tensor: do the same with the stand-in
    w, s, v, b = wrapped
    keys = ["a", "b", "c"]
    figs = [
        WF.matrix_heatmap(w, ["x", "y", "z"], keys, kind="weights", blocked=b),
        WF.query_scores(OffHostTensor(scores[0]), OffHostTensor(scores[0] * 0.5), keys, scale=0.5),
        WF.query_weights(OffHostTensor(weights[0]), keys, blocked=OffHostTensor(blocked[0])),
        WF.output_blend(OffHostTensor(weights[0]), v, keys),
        SF.row_bars_figure(OffHostTensor(weights[0]), OffHostTensor(weights[1]), 4),
        SF.temperature_bars_figure(OffHostTensor(weights[2]), 2.0),
        SF.jacobian_figure(s, OffHostTensor(scores.T), 1, 4),
    ]
    for a, expected in zip(figs, host, strict=True):
        assert a.to_json() == expected.to_json()
