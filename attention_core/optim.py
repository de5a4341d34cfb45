"""SGD and Adam (AdamW with a weight decay) for the √d_k explorer's toy and the induction model.

``torch.optim``'s update rules (tests hold them to it), written out because constructing a ``torch.optim``
optimizer imports ``torch._dynamo``: about 70 MB of memory and a second on a server's first use.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from .validation import check_choice, check_float

OPTIMIZERS = ("adam", "sgd")


class Optimizer:
    """Plain SGD, or Adam with torch's defaults (β₁ = 0.9, β₂ = 0.999, ε = 1e-8) and, when ``weight_decay``
    is above 0, AdamW's decoupled weight decay (Loshchilov & Hutter), for a list of tensors.
    """

    def __init__(self, params: Sequence[torch.Tensor], kind: str, lr: float, weight_decay: float = 0.0) -> None:
        self.params = list(params)
        self.kind = check_choice("optimizer", kind, OPTIMIZERS)
        self.lr = check_float("lr", lr, low=0.0, low_open=True)
        self.wd = check_float("weight_decay", weight_decay, low=0.0)
        if self.kind == "sgd" and self.wd:
            raise ValueError("weight_decay is AdamW's decoupled decay here; use kind='adam' with it")
        self.t = 0
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        self.t += 1
        b1, b2, eps = 0.9, 0.999, 1e-8
        c1, c2 = 1 - b1**self.t, 1 - b2**self.t
        for p, m, v in zip(self.params, self.m, self.v, strict=True):
            if p.grad is None:
                continue
            g = p.grad
            if self.kind == "sgd":
                p.add_(g, alpha=-self.lr)
                continue
            if self.wd:
                p.mul_(1 - self.lr * self.wd)  # decoupled weight decay
            m.lerp_(g, 1 - b1)  # m ← β₁m + (1 − β₁)g
            v.mul_(b2).addcmul_(g, g, value=1 - b2)  # v ← β₂v + (1 − β₂)g²
            denom = v.sqrt() / math.sqrt(c2)  # √v̂, in torch's order of operations
            p.addcdiv_(m, denom.add_(eps), value=-self.lr / c1)  # p ← p − lr·m̂ / (√v̂ + ε)
