"""The written-out optimizers take torch.optim's steps: SGD, Adam, and AdamW's decoupled weight decay."""

from __future__ import annotations

import pytest
import torch

from attention_core.optim import Optimizer


@pytest.mark.parametrize(("kind", "weight_decay"), [("sgd", 0.0), ("adam", 0.0), ("adam", 0.01)])
def test_the_written_out_optimizers_match_torch_optim(kind: str, weight_decay: float, device: torch.device) -> None:
    g = torch.Generator(device).manual_seed(0)
    a = torch.randn(5, 3, generator=g, dtype=torch.float64, device=device).requires_grad_()
    b = a.detach().clone().requires_grad_()
    start = a.detach().clone()
    weights = torch.arange(15.0, dtype=torch.float64, device=device).view(5, 3)
    mine = Optimizer([a], kind, 0.05, weight_decay)
    if kind == "sgd":
        ref: torch.optim.Optimizer = torch.optim.SGD([b], lr=0.05)
    elif weight_decay:
        ref = torch.optim.AdamW([b], lr=0.05, weight_decay=weight_decay)
    else:
        ref = torch.optim.Adam([b], lr=0.05)
    for _ in range(25):
        for p, opt in ((a, mine), (b, ref)):
            opt.zero_grad()
            (p.sin() * weights).sum().backward()
            opt.step()
    assert not torch.equal(a.detach(), start)  # it moved
    torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_sgd_takes_no_weight_decay_and_the_rate_must_be_positive() -> None:
    p = torch.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="weight_decay"):
        Optimizer([p], "sgd", 0.1, 0.01)
    with pytest.raises(ValueError, match="lr"):
        Optimizer([p], "adam", 0.0)
    with pytest.raises(ValueError, match="optimizer"):
        Optimizer([p], "rmsprop", 0.1)
