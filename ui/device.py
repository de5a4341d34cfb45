"""The device the pages compute on: the core uses torch's default device unless told, and the app tells it
(CUDA when present, else the CPU; ``$ATTENTION_DEVICE`` overrides: :mod:`attention_core.device`)."""

from __future__ import annotations

from attention_core.device import default_device

DEVICE = str(default_device())
