"""Device selection: automatic choice, the ATTENTION_DEVICE override, bad names, device_info."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from attention_core import (
    available_devices,
    causal_mask,
    default_device,
    device_info,
    dot_product_attention,
    new_tensor_device,
    padding_mask,
    resolve_device,
    sinusoidal_positions,
)
from attention_core.device import ENV_VAR
from attention_core.presets import tiny_example
from attention_core.scaling import overflow_logits

needs_no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is present, so 'cuda' is valid here")
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")


@pytest.fixture
def no_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)


def test_env_var_name() -> None:
    assert ENV_VAR == "ATTENTION_DEVICE"  # the README and DEVELOPERS notes name it


@pytest.mark.usefixtures("no_override")
def test_default_device_without_override() -> None:
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert default_device().type == expected


@pytest.mark.parametrize("raw", ["cpu", "CPU", " cpu "])
def test_env_override_cpu(raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, raw)
    assert default_device() == torch.device("cpu")
    assert resolve_device(None) == torch.device("cpu")
    assert resolve_device("auto") == torch.device("cpu")
    assert device_info().device == "cpu"  # what the app computes on follows the override


@pytest.mark.parametrize("raw", ["auto", "AUTO", "", "  "])
def test_env_auto_means_automatic(raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    automatic = default_device()
    monkeypatch.setenv(ENV_VAR, raw)
    assert default_device() == automatic


def test_env_override_bad_name_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "tpu")
    with pytest.raises(ValueError, match="device must be"):
        default_device()
    assert resolve_device("cpu") == torch.device("cpu")  # an explicit argument beats the variable


@needs_no_cuda
def test_env_override_cuda_when_absent_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "cuda")
    with pytest.raises(ValueError, match="CUDA is not available"):
        default_device()


@pytest.mark.usefixtures("no_override")
@pytest.mark.parametrize("raw", ["cpu", "CPU", " cpu\n", torch.device("cpu")])
def test_resolve_cpu_spellings(raw: object) -> None:
    assert resolve_device(raw) == torch.device("cpu")  # type: ignore[arg-type]


@pytest.mark.usefixtures("no_override")
@pytest.mark.parametrize("raw", [None, "auto", "Auto", ""])
def test_resolve_auto(raw: str | None) -> None:
    assert resolve_device(raw) == default_device()


@pytest.mark.parametrize("raw", ["gpu", "mps", "meta", "cuda:x", "cpu:cpu", "tpu", 42, 1.5, ["cpu"]])
def test_resolve_bad_names(raw: object) -> None:
    with pytest.raises(ValueError, match="device must be"):
        resolve_device(raw)  # type: ignore[arg-type]


@needs_no_cuda
@pytest.mark.parametrize("raw", ["cuda", "cuda:0", "CUDA:1", torch.device("cuda")])
def test_resolve_cuda_when_absent(raw: object) -> None:
    with pytest.raises(ValueError, match="CUDA is not available"):
        resolve_device(raw)  # type: ignore[arg-type]


@needs_cuda
def test_resolve_cuda_when_present() -> None:
    assert resolve_device("cuda") == torch.device("cuda", 0)
    with pytest.raises(ValueError, match="CUDA device\\(s\\) are present"):
        resolve_device(f"cuda:{torch.cuda.device_count()}")


def test_available_devices() -> None:
    names = available_devices()
    assert names[0] == "cpu"
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    assert names[1:] == [f"cuda:{i}" for i in range(count)]
    for name in names:
        assert resolve_device(name).type in ("cpu", "cuda")


def test_device_info_cpu() -> None:
    info = device_info("cpu")
    assert info.device == "cpu"
    assert isinstance(info.name, str) and info.name.strip()
    assert info.torch_version == torch.__version__
    assert info.threads == torch.get_num_threads() >= 1
    assert info.cuda_version is None and info.cudnn_version is None and info.tf32_matmul is None
    assert info.total_memory_bytes is None or info.total_memory_bytes > 2**20
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.device = "cuda"  # type: ignore[misc]


@needs_cuda
def test_device_info_cuda() -> None:
    info = device_info("cuda")
    assert info.device == "cuda:0"
    assert info.name == torch.cuda.get_device_name(0)
    assert info.total_memory_bytes is not None and info.total_memory_bytes > 0
    assert isinstance(info.tf32_matmul, bool)


def test_device_info_rejects_bad_names() -> None:
    with pytest.raises(ValueError, match="device must be"):
        device_info("gpu")


def test_a_measurement_keeps_the_configured_threads_while_tiny_work_runs_on_one() -> None:
    from attention_core.device import measuring_threads, one_thread

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        with one_thread(torch.device("cpu")):
            assert torch.get_num_threads() == 1
            with measuring_threads() as threads:  # a benchmark starting mid-way gets its threads back
                assert threads == 2 and torch.get_num_threads() == 2
                with one_thread(torch.device("cpu")):  # and nothing drops them while it times
                    assert torch.get_num_threads() == 2
            assert torch.get_num_threads() == 1  # once it ends, the tiny work still running is on one again
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


# ---- torch's convention: makers of tensors use torch's default device ----------------------


@pytest.fixture
def meta_default():
    """torch's default device set to 'meta' for one test (tensors with a device but no data), then restored."""
    before = torch.get_default_device()
    torch.set_default_device("meta")
    try:
        yield
    finally:
        torch.set_default_device(before)


def test_makers_of_tensors_ignore_the_apps_device_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad ATTENTION_DEVICE breaks default_device(), yet a mask is still built: makers never consult it."""
    monkeypatch.setenv(ENV_VAR, "tpu")
    with pytest.raises(ValueError):
        default_device()
    assert causal_mask(2, 3).device == torch.get_default_device() == torch.device("cpu")
    assert padding_mask([1, 2], 3).device == torch.device("cpu")
    assert sinusoidal_positions(4, 6).device == torch.device("cpu")
    assert tiny_example().q.device == torch.device("cpu")
    assert new_tensor_device(None) == torch.device("cpu")
    assert new_tensor_device("cpu") == torch.device("cpu")


@pytest.mark.usefixtures("meta_default")
def test_makers_of_tensors_follow_torchs_default_device() -> None:
    """As torch.ones does: with the default device set elsewhere, a mask made without device= lands there."""
    assert torch.ones(1).device.type == "meta"  # the fixture works
    assert new_tensor_device(None).type == "meta"
    assert causal_mask(3, 3).device.type == "meta"
    assert padding_mask([1, 2], 3).device.type == "meta"
    assert sinusoidal_positions(4, 6).device.type == "meta"
    assert overflow_logits(5.0).device.type == "meta"
    # an explicit device wins over the default
    assert causal_mask(3, 3, device="cpu").device.type == "cpu"
    assert sinusoidal_positions(4, 6, device=torch.device("cpu")).device.type == "cpu"


@pytest.mark.usefixtures("meta_default")
def test_a_function_given_a_tensor_computes_on_its_device() -> None:
    lengths = torch.tensor([1, 3], device="cpu")
    mask = padding_mask(lengths, 3)
    assert mask.device.type == "cpu"  # the lengths' device, not the default
    assert mask.tolist() == [[[True, False, False]], [[True, True, True]]]


def test_a_device_mismatch_names_both_devices() -> None:
    """CPU inputs with a mask elsewhere (as a mask built on a GPU machine once was): a ValueError, not torch's."""
    q = k = v = torch.randn(3, 4)
    with pytest.raises(ValueError, match=r"attn_mask is on meta but q is on cpu"):
        dot_product_attention(q, k, v, torch.ones(3, 3, dtype=torch.bool, device="meta"))
    with pytest.raises(ValueError, match=r"v is on meta but q is on cpu"):
        dot_product_attention(q, k, torch.empty(3, 4, device="meta"))
    with pytest.raises(ValueError, match=r"device=q\.device"):
        dot_product_attention(q, k, v, torch.ones(3, 3, dtype=torch.bool, device="meta"))


@pytest.mark.parametrize("name", ["cpu", "cuda"])
def test_a_mask_from_a_tutorial_works_with_cpu_inputs_on_any_machine(name: str) -> None:
    """`causal_mask(3, 3)` beside CPU tensors: on a GPU machine too, since makers default to torch's default."""
    if name == "cuda" and not torch.cuda.is_available():
        pytest.skip("CUDA is not available")
    dev = torch.device(name)
    q = torch.randn(3, 4, device=dev)
    mask = causal_mask(3, 3, device=dev if name == "cuda" else None)
    out = dot_product_attention(q, q, q, mask)
    assert out.device == dev
    assert out.shape == (3, 4)
