"""attention_core.scaling against theory: Var(q·k) = d_k, saturation, gradients, overflow, training.

The references are independent of the code under test: the variance d_k and 1, torch's own
softmax and autograd Jacobian, float64 softmax, log(finfo.max), and hand-built histories.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from attention_core.scaling import entropy_pct, row_entropy, softmax_jacobian
from attention_core.scaling.initialisation import init_effects, named_init_stds
from attention_core.scaling.saturation import gradient_table, sample_row, saturation_table, temperature_sweep
from attention_core.scaling.stability import (
    naive_softmax,
    overflow_limit,
    overflow_logits,
    overflow_sweep,
    softmax_overflow,
)
from attention_core.scaling.strategies import STRATEGY_NAMES, scaling_strategies
from attention_core.scaling.training import DEFAULT_LR, train_toy, training_summary
from attention_core.scaling.variance import (
    DEFAULT_SAMPLES,
    dot_product_histograms,
    histogram_table,
    prefix_dot_products,
    variance_table,
)

WIDTHS = [1, 4, 16, 64, 256, 1024]


# --------------------------------------------------------------------------------------------
# Variance


def test_variance_is_d_k_at_512_and_1_after_scaling() -> None:
    row = variance_table([512]).iloc[0]
    assert row["d_k"] == 512 and row["theoretical_var"] == 512
    assert abs(row["empirical_var"] / 512 - 1) < 0.05
    assert abs(row["scaled_var"] - 1) < 0.05
    assert row["empirical_std"] == pytest.approx(math.sqrt(row["empirical_var"]))


def test_default_sample_count_is_within_about_two_percent() -> None:
    """≥ 10,000 samples; the standard error √(2/n) of the estimate is ≤ 1%, so 3% is a 3σ bound."""
    assert DEFAULT_SAMPLES >= 10_000
    assert math.sqrt(2 / DEFAULT_SAMPLES) <= 0.01
    table = variance_table([8, 64, 512], seed=3)
    assert (table["rel_error"].abs() < 0.03).all(), table


@pytest.mark.parametrize("init", ["normal", "uniform", "rademacher"])
def test_variance_holds_for_any_unit_variance_entries(init: str, device: torch.device) -> None:
    table = variance_table([32, 256], n_samples=20_000, init=init, device=device)
    assert np.allclose(table["empirical_var"] / table["d_k"], 1.0, atol=0.05), table
    assert np.allclose(table["scaled_var"], 1.0, atol=0.05)


def test_dot_products_are_the_table_samples_and_seeded(device: torch.device) -> None:
    x = prefix_dot_products([64], 5_000, seed=7, device=device)[:, 0]
    assert x.shape == (5_000,) and x.device.type == device.type
    assert torch.equal(x, prefix_dot_products([64], 5_000, seed=7, device=device)[:, 0])
    assert not torch.equal(x, prefix_dot_products([64], 5_000, seed=8, device=device)[:, 0])
    table = variance_table([64], n_samples=5_000, seed=7, device=device)
    assert table["empirical_var"].iloc[0] == pytest.approx(float(x.double().var()))


def test_a_width_does_not_depend_on_the_other_widths_asked_for() -> None:
    alone = variance_table([16], n_samples=2_000, seed=1)
    among = variance_table([4, 16, 64], n_samples=2_000, seed=1)
    assert alone["empirical_var"].iloc[0] == among.set_index("d_k").loc[16, "empirical_var"]


def test_one_draw_measures_every_width_on_nested_prefixes(device: torch.device) -> None:
    """Column j is q·k over the first dims[j] entries of one pair: Var = d, and Cov(d_a, d_b) = min(d_a, d_b)."""
    dims = [3, 4, 16, 100]
    x = prefix_dot_products(dims, 20_000, seed=2, device=device)
    assert x.shape == (20_000, 4) and x.dtype == torch.float32 and x.device.type == device.type
    for j, d in enumerate(dims):  # each width alone gives the same numbers
        assert torch.equal(x[:, j], prefix_dot_products([d], 20_000, seed=2, device=device)[:, 0])
    cov = torch.cov(x.double().T).cpu()  # (4, 4)
    # The estimates' standard errors are ≤ 1.5% here, so 6% is a 4σ bound.
    variances = cov.diagonal() / torch.tensor(dims, dtype=torch.float64)
    assert torch.allclose(variances, torch.ones(4, dtype=torch.float64), atol=0.06), variances
    for a, b in [(0, 1), (1, 2), (2, 3), (0, 3)]:
        assert float(cov[a, b]) / dims[a] == pytest.approx(1.0, abs=0.06), (dims[a], dims[b])


def test_p95_of_scores_matches_the_normal_two_sigma() -> None:
    """For large d_k, q·k is nearly N(0, d_k): 95% of |q·k| lie within 1.96 √d_k."""
    row = variance_table([256]).iloc[0]
    assert row["abs_p95"] == pytest.approx(1.96 * 16, rel=0.05)
    assert row["scaled_abs_p95"] == pytest.approx(1.96, rel=0.05)


def test_histogram_counts_and_density() -> None:
    x = torch.randn(10_000, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    h = histogram_table(x, span=5.0, normal_std=1.0, bins=40)
    assert len(h) == 40
    assert h["count"].sum() == (x.abs() <= 5).sum().item()
    width = 10 / 40
    assert (h["density"] * width).sum() == pytest.approx(1.0, abs=1e-3)
    mid = h.iloc[(h["center"].abs()).argmin()]
    assert mid["normal_pdf"] == pytest.approx(math.exp(-0.5 * mid["center"] ** 2) / math.sqrt(2 * math.pi))
    assert np.allclose(h["density"], h["normal_pdf"], atol=0.03)


def test_dot_product_histograms_span_four_sigma() -> None:
    unscaled, scaled = dot_product_histograms(64, 4_000, seed=0)
    assert unscaled["center"].abs().max() < 32 and unscaled["center"].abs().max() > 31
    assert scaled["center"].abs().max() < 4 and scaled["center"].abs().max() > 3.9
    assert scaled["count"].sum() == unscaled["count"].sum()  # the same samples, divided by 8


# --------------------------------------------------------------------------------------------
# Saturation


def test_entropy_falls_with_d_k_unscaled_and_stays_flat_scaled(device: torch.device) -> None:
    t = saturation_table(WIDTHS, n_keys=16, seed=0, device=device)
    assert (np.diff(t["entropy_unscaled"]) < 0).all(), t["entropy_unscaled"]
    assert (np.diff(t["max_weight_unscaled"]) > 0).all()
    assert t["entropy_pct_unscaled"].iloc[0] - t["entropy_pct_unscaled"].iloc[-1] > 50
    flat = t["entropy_pct_scaled"]
    assert flat.max() - flat.min() < 6, flat
    assert np.allclose(t["score_var_scaled"], 1.0, atol=0.15)
    assert np.allclose(t["score_var_unscaled"] / t["d_k"], 1.0, atol=0.15)


def test_saturation_at_d_k_1_is_unchanged_by_scaling() -> None:
    t = saturation_table([1], n_keys=8, seed=2).iloc[0]
    assert t["entropy_unscaled"] == t["entropy_scaled"]


@pytest.mark.parametrize(("name", "divisor"), [("none", 1.0), ("√d_k", 8.0), ("d_k", 64.0), ("d_k^¼", 2.0 ** 1.5),
                                               ("2√d_k", 16.0)])  # fmt: skip
def test_fixed_strategies_divide_by_what_they_say(name: str, divisor: float) -> None:
    t = scaling_strategies(64, 8, seed=0, fit_steps=1).set_index("strategy")
    assert t.loc[name, "divisor"] == pytest.approx(divisor)
    assert t.loc[name, "score_var"] == pytest.approx(t.loc["none", "score_var"] / divisor**2)


def test_entropy_is_bounded_by_log_n() -> None:
    t = saturation_table([1, 4096], n_keys=32, seed=0)
    assert (t[["entropy_unscaled", "entropy_scaled"]] <= math.log(32) + 1e-9).all().all()
    s = scaling_strategies(4096, 32, seed=0, fit_steps=1).set_index("strategy")
    assert (s["entropy"] <= math.log(32) + 1e-9).all()
    assert s.loc["d_k", "entropy_pct"] > 99  # ÷d_k flattens wide rows to nearly uniform


def test_temperature_sweep_goes_from_one_hot_to_uniform() -> None:
    s = temperature_sweep(256, 16, [0.25, 1, 16, 256, 4096], seed=0)
    assert (np.diff(s["entropy"]) > 0).all()
    assert s["max_weight"].iloc[0] > 0.95
    assert s["entropy_pct"].iloc[-1] > 99
    sat = saturation_table([256], 16, seed=0).iloc[0]  # the same rows
    assert s.set_index("tau").loc[16.0, "entropy"] == pytest.approx(sat["entropy_scaled"])
    assert s.set_index("tau").loc[1.0, "entropy"] == pytest.approx(sat["entropy_unscaled"])


def test_row_entropy_of_uniform_and_one_hot() -> None:
    w = torch.tensor([[0.25, 0.25, 0.25, 0.25], [1.0, 0.0, 0.0, 0.0]], dtype=torch.float64)
    assert torch.allclose(row_entropy(w), torch.tensor([math.log(4), 0.0], dtype=torch.float64))
    assert torch.allclose(entropy_pct(w), torch.tensor([100.0, 0.0], dtype=torch.float64))
    half = torch.tensor([0.5, 0.5, 0.0, 0.0], dtype=torch.float64)  # log 2 of log 4
    assert float(entropy_pct(half)) == pytest.approx(50.0)


def test_sample_row_weights_match_torch_softmax(device: torch.device) -> None:
    r = sample_row(64, 8, seed=1, device=device)
    assert r.scores.shape == (8,) and r.jacobian_scaled.shape == (8, 8)
    assert torch.allclose(r.weights_unscaled, torch.softmax(r.scores, -1))
    assert torch.allclose(r.weights_scaled, torch.softmax(r.scores / 8, -1))
    assert torch.allclose(r.weights_at(8.0), r.weights_scaled)


# --------------------------------------------------------------------------------------------
# Gradients


def test_softmax_jacobian_matches_autograd(device: torch.device) -> None:
    z = torch.randn(6, dtype=torch.float64, device=device, generator=torch.Generator(device).manual_seed(0))
    expected = torch.autograd.functional.jacobian(lambda t: torch.softmax(t, -1), z)
    assert torch.allclose(softmax_jacobian(torch.softmax(z, -1)), expected)


def test_gradient_ratio_grows_with_d_k(device: torch.device) -> None:
    t = gradient_table([1, 16, 256, 4096], n_keys=4, n_trials=256, seed=0, device=device)
    assert t["grad_ratio"].iloc[0] == pytest.approx(1.0)
    assert (np.diff(t["grad_ratio"]) > 0).all(), t["grad_ratio"]
    assert (np.diff(t["grad_median_ratio"]) > 0).all()
    assert t["grad_median_ratio"].iloc[-1] > 100
    assert (np.diff(t["jac_diag_unscaled"]) < 0).all()
    assert np.allclose(t["jac_diag_scaled"], t["jac_diag_scaled"].mean(), rtol=0.15)
    assert (t["dead_scaled"] < 0.02).all() and t["dead_unscaled"].iloc[-1] > 0.5


def test_gradient_at_the_scores_carries_the_division() -> None:
    """∂L/∂(q·k) = ∂L/∂z / √d_k for the scaled model, row by row, so the medians differ by √d_k."""
    t = gradient_table([4, 64, 1024], n_keys=8, n_trials=128, seed=1)
    assert np.allclose(t["grad_qk_median_scaled"] * np.sqrt(t["d_k"]), t["grad_median_scaled"])
    assert (t["grad_qk_median_unscaled"] == t["grad_median_unscaled"]).all()  # no division, nothing carried


def test_jacobian_diag_is_the_mean_of_s_one_minus_s() -> None:
    """At d_k = 1 both variants see identical logits, so their statistics agree exactly."""
    t = gradient_table([1], n_keys=5, n_trials=64, seed=4).iloc[0]
    assert t["jac_diag_unscaled"] == t["jac_diag_scaled"]
    assert 0 < t["jac_diag_unscaled"] <= 0.25


# --------------------------------------------------------------------------------------------
# Scaling strategies


def test_strategies_rows_and_fixed_divisors(device: torch.device) -> None:
    t = scaling_strategies(256, 16, seed=0, device=device).set_index("strategy")
    assert tuple(t.index) == STRATEGY_NAMES
    assert t.loc["none", "divisor"] == 1.0 and t.loc["√d_k", "divisor"] == 16.0
    assert t.loc["d_k^¼", "divisor"] == pytest.approx(4.0) and t.loc["2√d_k", "divisor"] == 32.0
    assert t.loc["√d_k", "score_var"] == pytest.approx(1.0, abs=0.15)
    assert t.loc["none", "score_var"] == pytest.approx(256, rel=0.15)
    order = t.loc[["none", "d_k^¼", "√d_k", "2√d_k", "d_k"], "entropy"]
    assert (np.diff(order) > 0).all(), order


@pytest.mark.parametrize("target", [30.0, 50.0, 70.0])
def test_learned_temperature_reaches_its_target_on_unseen_rows(target: float) -> None:
    t = scaling_strategies(128, 16, seed=0, target_entropy_pct=target).set_index("strategy")
    assert t.loc["learned τ", "entropy_pct"] == pytest.approx(target, abs=4)
    assert t.loc["cosine / τ", "entropy_pct"] == pytest.approx(target, abs=4)
    assert "Adam" in t.loc["learned τ", "how"]


def test_a_higher_entropy_target_learns_a_higher_temperature() -> None:
    taus = [scaling_strategies(64, 8, seed=0, target_entropy_pct=p).set_index("strategy").loc["learned τ", "divisor"]
            for p in (20, 50, 80)]  # fmt: skip
    assert taus[0] < taus[1] < taus[2]


# --------------------------------------------------------------------------------------------
# Initialisation


def test_init_effects_match_the_variance_formulas(device: torch.device) -> None:
    stds = named_init_stds(256, 64)
    assert stds["1/√d_model"] == pytest.approx(1 / 16) and stds["Xavier"] == pytest.approx(math.sqrt(2 / 320))
    t = init_effects(256, 64, stds, layernorm=True, seed=0, device=device).set_index("init")
    assert t["x_var"].iloc[0] == pytest.approx(1.0, abs=1e-3)  # LayerNorm: unit variance per token
    assert np.allclose(t["q_var"] / t["q_var_theory"], 1.0, atol=0.1)
    assert np.allclose(t["score_var_unscaled"] / t["score_var_theory"], 1.0, atol=0.2)
    assert t.loc["1/√d_model", "score_var_scaled"] == pytest.approx(1.0, abs=0.2)
    assert np.allclose(t["optimal_divisor"] ** 2, t["score_var_unscaled"])


def test_layernorm_removes_the_inputs_scale() -> None:
    raw = init_effects(128, 32, {"0.1": 0.1}, layernorm=False, seed=0).iloc[0]
    normed = init_effects(128, 32, {"0.1": 0.1}, layernorm=True, seed=0).iloc[0]
    assert raw["x_var"] > 2  # per-token gains from 0.5 to 4: E[gain²] ≈ 3.8
    assert normed["x_var"] == pytest.approx(1.0, abs=1e-3)
    assert raw["score_var_unscaled"] > 4 * normed["score_var_unscaled"]


# --------------------------------------------------------------------------------------------
# Numerical stability


def test_overflow_limits_are_log_of_the_largest_number() -> None:
    assert overflow_limit("float32") == pytest.approx(math.log(3.4028234663852886e38))
    assert overflow_limit("float16") == pytest.approx(math.log(65504.0))
    assert 88.7 < overflow_limit("float32") < 88.73 and 11.08 < overflow_limit("float16") < 11.1


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_naive_softmax_overflows_where_the_stable_one_does_not(dtype: str, device: torch.device) -> None:
    rows = softmax_overflow(torch.tensor([100.0, 1.0, -3.0], dtype=torch.float64, device=device), dtype)
    assert rows["naive"].isna().iloc[0]
    assert np.isfinite(rows["stable"]).all()
    assert np.allclose(rows["stable"], rows["reference"], atol=1e-3)
    small = softmax_overflow(torch.tensor([3.0, 1.0, -3.0], device=device), dtype)
    assert np.isfinite(small["naive"]).all()
    assert np.allclose(small["naive"], small["reference"], atol=1e-3)


def test_float16_overflows_long_before_float32() -> None:
    logits = overflow_logits(12.0, 8)
    half = softmax_overflow(logits, "float16").iloc[0]
    assert np.isinf(half["exp_naive"]) and np.isnan(half["naive"])
    assert np.isfinite(softmax_overflow(logits, "float32")["naive"]).all()


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_overflow_sweep_breaks_exactly_past_the_limit(dtype: str) -> None:
    limit = overflow_limit(dtype)
    mags = [limit * 0.9, limit * 0.99, limit * 1.01, limit * 2]
    s = overflow_sweep(mags, dtype)
    assert list(s["naive_error"].isna()) == [False, False, True, True]
    exp_overflows = [bool(np.isinf(softmax_overflow(overflow_logits(m), dtype)["exp_naive"]).any()) for m in mags]
    assert exp_overflows == [False, False, True, True]
    assert s["stable_error"].max() < (1e-2 if dtype == "float16" else 1e-5)


def test_naive_softmax_agrees_with_torch_when_nothing_overflows() -> None:
    x = torch.randn(4, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(naive_softmax(x), torch.softmax(x, -1))


# --------------------------------------------------------------------------------------------
# Training


def test_train_toy_is_deterministic_per_seed(device: torch.device) -> None:
    a = train_toy(False, 64, steps=15, seed=3, device=device)
    b = train_toy(False, 64, steps=15, seed=3, device=device)
    c = train_toy(False, 64, steps=15, seed=4, device=device)
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a["loss"], c["loss"])


def test_train_toy_differs_only_by_the_scaling() -> None:
    """At d_k = 1 the divisor is 1 either way: same start, same data, so the same run."""
    pd.testing.assert_frame_equal(train_toy(True, 1, steps=10), train_toy(False, 1, steps=10))
    scaled, unscaled = train_toy(True, 64, steps=1), train_toy(False, 64, steps=1)
    assert scaled["logit_std"].iloc[0] == pytest.approx(unscaled["logit_std"].iloc[0] / 8)


def test_train_toy_gradients_pass_through_the_division() -> None:
    h = train_toy(True, 256, steps=5, optimizer="sgd")
    assert np.allclose(h["grad_scores"] * 16, h["grad_logits"])


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_the_scaled_toy_model_learns(optimizer: str) -> None:
    h = train_toy(True, 64, n_keys=8, steps=150, optimizer=optimizer)
    s = training_summary({"scaled": h}).iloc[0]
    assert s["end_loss"] < 0.2 * s["start_loss"]
    assert s["end_accuracy"] > 0.9


def test_unscaled_starts_saturated_at_large_d_k() -> None:
    runs = {"scaled": train_toy(True, 1024, steps=20), "unscaled": train_toy(False, 1024, steps=20)}
    s = training_summary(runs).set_index("run")
    assert s.loc["unscaled", "start_logit_std"] > 10 * s.loc["scaled", "start_logit_std"]
    assert s.loc["unscaled", "start_loss"] > s.loc["scaled", "start_loss"]


def test_train_toy_reports_progress_and_restores_threads() -> None:
    calls: list[tuple[int, int]] = []
    threads = torch.get_num_threads()
    h = train_toy(True, 8, steps=7, progress=lambda s, n: calls.append((s, n)))
    assert calls == [(i, 7) for i in range(1, 8)]
    assert list(h["step"]) == list(range(7))
    assert torch.get_num_threads() == threads
    assert DEFAULT_LR == {"adam": 0.01, "sgd": 0.3}


def test_training_summary_on_a_hand_made_history() -> None:
    steps = np.arange(50)
    loss = np.where(steps < 20, 1.0, 0.0)  # the 10-step mean first drops below 0.1 at step 29
    h = pd.DataFrame({"step": steps, "loss": loss, "loss_smooth": pd.Series(loss).rolling(10, min_periods=1).mean(),
                      "accuracy": 1.0, "grad_logits": 0.5, "logit_std": 2.0})  # fmt: skip
    never = h.assign(loss_smooth=1.0)
    s = training_summary({"a": h, "b": never}, threshold=0.1).set_index("run")
    assert s.loc["a", "steps_to_threshold"] == 29
    assert math.isnan(s.loc["b", "steps_to_threshold"])
    assert s.loc["a", "start_loss"] == 1.0 and s.loc["a", "end_loss"] == 0.0


# --------------------------------------------------------------------------------------------
# Validation


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: variance_table([]), "must not be empty"),
        (lambda: variance_table([0]), "≥ 1"),
        (lambda: variance_table([4], n_samples=1), "n_samples"),
        (lambda: variance_table([4], init="cauchy"), "init must be one of"),
        (lambda: prefix_dot_products([4], 100, seed=-1), "seed"),
        (lambda: prefix_dot_products([4.5], 100), "dims\\[0\\] must be an integer"),  # type: ignore[list-item]
        (lambda: dot_product_histograms(4.5), "d_k must be an integer"),  # type: ignore[arg-type]
        (lambda: saturation_table([4], n_keys=1), "n_keys"),
        (lambda: temperature_sweep(4, 4, []), "at least one temperature"),
        (lambda: temperature_sweep(4, 4, [0.0]), "taus"),
        (lambda: gradient_table([4], n_trials=1), "n_trials"),
        (lambda: scaling_strategies(16, 8, target_entropy_pct=100), "target_entropy_pct"),
        (lambda: init_effects(16, 8, {}), "at least one"),
        (lambda: init_effects(16, 8, [0.1]), "map at least one label"),  # type: ignore[arg-type]
        (lambda: init_effects(16, 8, {"neg": -0.1}), "std"),
        (lambda: init_effects(16, 8, {"big": float("nan")}), "finite"),
        (lambda: softmax_overflow(torch.tensor([[1.0, 2.0]])), "1-D"),
        (lambda: softmax_overflow(torch.tensor([1.0, float("nan")])), "NaN"),
        (lambda: softmax_overflow(torch.tensor([1, 2])), "floating dtype"),
        (lambda: softmax_overflow(torch.tensor([1.0]), "int8"), "dtype must be one of"),
        (lambda: overflow_limit("float8"), "dtype must be one of"),
        (lambda: overflow_sweep([], "float32"), "at least one"),
        (lambda: overflow_logits(-1.0), "magnitude"),
        (lambda: histogram_table(torch.tensor([1.0]), 1.0, 1.0), "at least 2"),
        (lambda: histogram_table(torch.tensor([1.0, 2.0]), 0.0, 1.0), "span"),
        (lambda: train_toy(True, 0), "d_k"),
        (lambda: train_toy(True, 8, optimizer="rmsprop"), "optimizer must be one of"),
        (lambda: train_toy(True, 8, steps=0), "steps"),
        (lambda: train_toy(True, 8, lr=0.0), "lr"),
        (lambda: train_toy(True, 8, init_std=-1.0), "init_std"),
        (lambda: train_toy(True, 8, progress=3), "progress must be a callable"),  # type: ignore[arg-type]
        (lambda: train_toy(True, 8, device="tpu"), "device"),
        (lambda: training_summary({}), "at least one run"),
        (lambda: training_summary({"x": pd.DataFrame({"loss": [1.0]})}), "missing"),
        (lambda: row_entropy([0.5, 0.5]), "torch.Tensor"),  # type: ignore[arg-type]
        (lambda: entropy_pct(torch.tensor([1.0])), "at least 2 entries"),
        (lambda: sample_row(4, 4).weights_at(0.0), "tau"),
    ],
)
def test_bad_arguments_raise_a_sentence(call: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()  # type: ignore[operator]
