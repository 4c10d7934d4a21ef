"""``metrics_rs.paired_test`` against scipy and against exact sign-flip enumeration."""

import numpy as np
import pytest
from scipy import stats

import metrics_rs

KEYS = {"delta", "p_value", "ci_low", "ci_high"}


def exact_sign_flip_p(a, b) -> float:
    """Two-sided p-value of Fisher's sign-flip test by full enumeration of 2**n flips."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    n = len(d)
    bits = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
    signs = 1.0 - 2.0 * bits
    means = signs @ d / n
    observed = abs(d.mean())
    return float(np.mean(np.abs(means) >= observed - 1e-12))


def pair(seed, n, shift=0.0, noise=0.2):
    rng = np.random.default_rng(seed)
    b = rng.uniform(0, 1, size=n)
    a = b + shift + rng.normal(0, noise, size=n)
    return a, b


def test_result_structure():
    a, b = pair(0, 15, 0.05)
    for method in ("randomization", "bootstrap", "t"):
        res = metrics_rs.paired_test(a, b, method=method, n_resamples=500)
        assert set(res) == KEYS, method
        for key in KEYS:
            assert isinstance(res[key], float), (method, key)
        assert 0 < res["p_value"] <= 1
        assert res["ci_low"] <= res["ci_high"]
        assert res["delta"] == pytest.approx(float(np.mean(a - b)), abs=1e-12)


# --- paired t-test ---------------------------------------------------------


@pytest.mark.parametrize(
    "seed,n,shift", [(1, 2, 0.1), (2, 3, 0.0), (3, 10, 0.05), (4, 50, 0.02), (5, 200, -0.01)]
)
@pytest.mark.parametrize("confidence", [0.95, 0.9, 0.99])
def test_t_matches_scipy(seed, n, shift, confidence):
    a, b = pair(seed, n, shift)
    res = metrics_rs.paired_test(a, b, method="t", confidence=confidence)
    ref = stats.ttest_rel(a, b)
    assert res["p_value"] == pytest.approx(float(ref.pvalue), abs=1e-9)
    assert res["delta"] == pytest.approx(float(np.mean(a - b)), abs=1e-12)
    ci = ref.confidence_interval(confidence)
    assert res["ci_low"] == pytest.approx(float(ci.low), abs=1e-9)
    assert res["ci_high"] == pytest.approx(float(ci.high), abs=1e-9)


def test_t_tiny_and_huge_p_values():
    a, b = pair(6, 40, shift=0.5, noise=0.05)
    res = metrics_rs.paired_test(a, b, method="t")
    ref = stats.ttest_rel(a, b)
    assert float(ref.pvalue) < 1e-20
    # absolute 1e-9 is meaningless this far out: compare relatively too
    assert res["p_value"] == pytest.approx(float(ref.pvalue), rel=1e-6, abs=1e-300)
    a = np.array([1.0, 2.0, 3.0, 4.0])
    b = np.array([1.1, 1.9, 3.1, 3.9])  # mean difference exactly symmetric -> t = 0
    res = metrics_rs.paired_test(a, b, method="t")
    assert res["p_value"] == pytest.approx(float(stats.ttest_rel(a, b).pvalue), abs=1e-9)
    assert res["p_value"] == pytest.approx(1.0, abs=1e-9)


def test_t_ignores_seed_and_resamples_and_is_antisymmetric():
    a, b = pair(7, 25, 0.03)
    r1 = metrics_rs.paired_test(a, b, method="t", seed=1, n_resamples=10)
    r2 = metrics_rs.paired_test(a, b, method="t", seed=99, n_resamples=100000)
    assert r1 == r2
    r3 = metrics_rs.paired_test(b, a, method="t")
    assert r3["delta"] == pytest.approx(-r1["delta"], abs=1e-12)
    assert r3["p_value"] == pytest.approx(r1["p_value"], abs=1e-12)
    assert r3["ci_low"] == pytest.approx(-r1["ci_high"], abs=1e-12)
    assert r3["ci_high"] == pytest.approx(-r1["ci_low"], abs=1e-12)


def test_accepts_lists_and_float32_and_ints():
    a, b = pair(8, 12, 0.1)
    ref = metrics_rs.paired_test(a, b, method="t")
    res = metrics_rs.paired_test(a.tolist(), b.tolist(), method="t")
    assert res == ref
    ai = [3, 1, 4, 1, 5, 9, 2, 6]
    bi = [2, 7, 1, 8, 2, 8, 1, 8]
    res = metrics_rs.paired_test(ai, bi, method="t")
    assert res["p_value"] == pytest.approx(float(stats.ttest_rel(ai, bi).pvalue), abs=1e-9)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    res = metrics_rs.paired_test(a32, b32, method="t")
    ref32 = stats.ttest_rel(a32.astype(np.float64), b32.astype(np.float64))
    assert res["p_value"] == pytest.approx(float(ref32.pvalue), abs=1e-9)


# --- randomization (sign flip) --------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 10, 12])
@pytest.mark.parametrize("seed", [0, 1])
def test_randomization_exact_matches_enumeration(n, seed):
    a, b = pair(100 + seed * 13 + n, n, shift=0.05 * seed)
    res = metrics_rs.paired_test(a, b, method="randomization")
    assert res["p_value"] == pytest.approx(exact_sign_flip_p(a, b), abs=1e-12)
    assert res["delta"] == pytest.approx(float(np.mean(a - b)), abs=1e-12)


@pytest.mark.parametrize("n", [4, 7, 11])
def test_randomization_exact_with_tied_flip_means(n):
    # differences on a 0.5 grid (zeros included): many flips have |mean| exactly equal
    # to the observed one, and they must all count
    rng = np.random.default_rng(n)
    d = rng.integers(-2, 4, size=n) * 0.5
    b = rng.integers(0, 4, size=n).astype(np.float64)
    a = b + d
    expected = exact_sign_flip_p(a, b)
    strict = float(
        np.mean(
            np.abs(((1.0 - 2.0 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)) @ d) / n)
            > abs(d.mean()) + 1e-12
        )
    )
    assert expected > strict  # the ties matter for this data
    res = metrics_rs.paired_test(a, b, method="randomization")
    assert res["p_value"] == pytest.approx(expected, abs=1e-12)


def test_randomization_identical_systems_p_is_one():
    a = np.array([0.1, 0.5, 0.7, 0.2, 0.9])
    for method in ("randomization", "bootstrap"):
        res = metrics_rs.paired_test(a, a.copy(), method=method)
        assert res["p_value"] == 1.0, method
        assert res["delta"] == 0.0
        assert res["ci_low"] == 0.0 and res["ci_high"] == 0.0


def test_randomization_exact_boundary_n_resamples():
    # exact when 2**n <= n_resamples, Monte Carlo with p = (hits + 1) / (n_resamples + 1) otherwise
    n = 12
    a, b = pair(21, n, shift=0.08)
    exact = exact_sign_flip_p(a, b)
    res_exact = metrics_rs.paired_test(a, b, method="randomization", n_resamples=2**n)
    assert res_exact["p_value"] == pytest.approx(exact, abs=1e-12)
    res_mc = metrics_rs.paired_test(a, b, method="randomization", n_resamples=2**n - 1)
    hits = res_mc["p_value"] * 2**n - 1
    assert hits == pytest.approx(round(hits), abs=1e-6)
    assert res_mc["p_value"] == pytest.approx(exact, abs=0.05)
    # default n_resamples=10000 >= 2**13: still exact, and the seed does not matter
    a13, b13 = pair(22, 13, shift=0.05)
    exact13 = exact_sign_flip_p(a13, b13)
    for seed in (0, 5):
        res = metrics_rs.paired_test(a13, b13, method="randomization", seed=seed)
        assert res["p_value"] == pytest.approx(exact13, abs=1e-12)


def test_randomization_monte_carlo():
    n = 16
    a, b = pair(31, n, shift=0.12)
    exact = exact_sign_flip_p(a, b)
    assert 0.02 < exact < 0.5  # a p-value Monte Carlo can estimate
    B = 2000
    ps = []
    for seed in range(5):
        res = metrics_rs.paired_test(a, b, method="randomization", n_resamples=B, seed=seed)
        p = res["p_value"]
        hits = p * (B + 1) - 1
        assert hits == pytest.approx(round(hits), abs=1e-6)
        assert 1 / (B + 1) <= p <= 1
        assert p == pytest.approx(exact, abs=0.05)
        again = metrics_rs.paired_test(a, b, method="randomization", n_resamples=B, seed=seed)
        assert again == res
        ps.append(p)
    assert len(set(ps)) > 1, "different seeds gave identical Monte Carlo p-values"


def test_randomization_monte_carlo_minimum_p():
    a, b = pair(32, 30, shift=1.0, noise=0.01)
    res = metrics_rs.paired_test(a, b, method="randomization", n_resamples=999)
    assert res["p_value"] == pytest.approx(1 / 1000, abs=1e-12)


def test_randomization_antisymmetric():
    a, b = pair(33, 9, shift=0.05)
    r1 = metrics_rs.paired_test(a, b)
    r2 = metrics_rs.paired_test(b, a)
    assert r2["delta"] == pytest.approx(-r1["delta"], abs=1e-12)
    assert r2["p_value"] == pytest.approx(r1["p_value"], abs=1e-12)


# --- bootstrap ---------------------------------------------------------------


def test_bootstrap_deterministic_for_seed_and_seed_sensitive():
    a, b = pair(41, 30, shift=0.07)
    ref_p = float(stats.ttest_rel(a, b).pvalue)
    assert 0.05 < ref_p < 0.8
    res = {s: metrics_rs.paired_test(a, b, method="bootstrap", seed=s) for s in (0, 1, 2)}
    for s in res:
        assert metrics_rs.paired_test(a, b, method="bootstrap", seed=s) == res[s]
    ps = [r["p_value"] for r in res.values()]
    assert len(set(ps)) > 1, "different seeds gave identical bootstrap p-values"
    assert max(ps) - min(ps) < 0.03
    cis = [(r["ci_low"], r["ci_high"]) for r in res.values()]
    assert len(set(cis)) > 1
    for r in res.values():
        assert r["ci_low"] < r["delta"] < r["ci_high"]
        assert r["delta"] == pytest.approx(float(np.mean(a - b)), abs=1e-12)
        # the bootstrap p-value of a mean is close to the t-test's for n = 30
        assert r["p_value"] == pytest.approx(ref_p, abs=0.1)


def test_bootstrap_shifted_pair_is_significant():
    a, b = pair(42, 50, shift=0.3, noise=0.1)
    res = metrics_rs.paired_test(a, b, method="bootstrap")
    assert res["p_value"] < 0.01
    assert 0 < res["ci_low"] < res["delta"] < res["ci_high"]


def test_bootstrap_same_distribution_is_not_significant():
    rng = np.random.default_rng(43)
    a = rng.uniform(0, 1, size=40)
    b = rng.uniform(0, 1, size=40)
    ref_p = float(stats.ttest_rel(a, b).pvalue)
    assert ref_p > 0.3  # this particular draw really shows no difference
    res = metrics_rs.paired_test(a, b, method="bootstrap")
    assert res["p_value"] > 0.2
    assert res["p_value"] == pytest.approx(ref_p, abs=0.1)
    assert res["ci_low"] < 0 < res["ci_high"]


@pytest.mark.parametrize("method", ["bootstrap", "randomization"])
def test_percentile_ci_close_to_t_interval_for_large_n(method):
    a, b = pair(44, 300, shift=0.02)
    t = metrics_rs.paired_test(a, b, method="t")
    res = metrics_rs.paired_test(a, b, method=method, n_resamples=5000, seed=3)
    width_t = t["ci_high"] - t["ci_low"]
    width = res["ci_high"] - res["ci_low"]
    assert 0.85 < width / width_t < 1.15
    assert res["ci_low"] == pytest.approx(t["ci_low"], abs=0.15 * width_t)
    assert res["ci_high"] == pytest.approx(t["ci_high"], abs=0.15 * width_t)
    assert res["ci_low"] < res["delta"] < res["ci_high"]
    # a narrower confidence level gives a narrower interval
    res90 = metrics_rs.paired_test(a, b, method=method, n_resamples=5000, seed=3, confidence=0.8)
    assert res90["ci_high"] - res90["ci_low"] < width


def test_mismatched_lengths_raise():
    for method in ("randomization", "bootstrap", "t"):
        with pytest.raises(ValueError, match=r"(?i)\ba\b.*\bb\b|\bb\b.*\ba\b|length"):
            metrics_rs.paired_test([0.1, 0.2, 0.3], [0.1, 0.2], method=method)
