"""Bad input raises ValueError/TypeError naming the argument; panics become RuntimeError."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import metrics_rs

RNG = np.random.default_rng(0)
Q = RNG.standard_normal((4, 8)).astype(np.float32)
C = RNG.standard_normal((20, 8)).astype(np.float32)


def _with(arr, index, value):
    out = arr.copy()
    out[index] = value
    return out


# --- knn -------------------------------------------------------------------

KNN_BAD = [
    # (id, kwargs overriding (queries, corpus, k), expected exception(s), message regex)
    (
        "dim_mismatch",
        {"corpus": RNG.standard_normal((20, 7)).astype(np.float32)},
        ValueError,
        r"queries|corpus|dim",
    ),
    ("queries_1d", {"queries": Q[0].copy()}, (ValueError, TypeError), r"queries"),
    ("corpus_1d", {"corpus": C[0].copy()}, (ValueError, TypeError), r"corpus"),
    ("queries_3d", {"queries": Q[None].copy()}, (ValueError, TypeError), r"queries"),
    ("k_zero", {"k": 0}, ValueError, r"\bk\b"),
    ("k_negative", {"k": -3}, (ValueError, TypeError), r"\bk\b"),
    ("k_too_big", {"k": 21}, ValueError, r"\bk\b"),
    ("nan_queries", {"queries": _with(Q, (1, 2), np.nan)}, ValueError, r"queries"),
    ("inf_queries", {"queries": _with(Q, (3, 0), np.inf)}, ValueError, r"queries"),
    ("neginf_queries", {"queries": _with(Q, (0, 7), -np.inf)}, ValueError, r"queries"),
    ("nan_corpus", {"corpus": _with(C, (19, 7), np.nan)}, ValueError, r"corpus"),
    ("inf_corpus", {"corpus": _with(C, (0, 0), np.inf)}, ValueError, r"corpus"),
    ("float64_queries", {"queries": Q.astype(np.float64)}, TypeError, r"queries"),
    ("float64_corpus", {"corpus": C.astype(np.float64)}, TypeError, r"corpus"),
    ("float16_corpus", {"corpus": C.astype(np.float16)}, TypeError, r"corpus"),
    ("int_queries", {"queries": np.ones((4, 8), dtype=np.int64)}, TypeError, r"queries"),
    ("empty_queries", {"queries": np.zeros((0, 8), dtype=np.float32)}, ValueError, r"queries"),
    (
        "empty_corpus",
        {"corpus": np.zeros((0, 8), dtype=np.float32), "k": 1},
        ValueError,
        r"corpus|\bk\b",
    ),
    ("unknown_metric", {"metric": "euclidean"}, ValueError, r"metric"),
    ("metric_case", {"metric": "Cosine"}, ValueError, r"metric"),
    ("block_size_zero", {"block_size": 0}, ValueError, r"block_size"),
    ("block_size_negative", {"block_size": -1}, (ValueError, TypeError), r"block_size"),
]


@pytest.mark.parametrize(
    "kwargs,exc,pattern", [c[1:] for c in KNN_BAD], ids=[c[0] for c in KNN_BAD]
)
def test_knn_bad_input(kwargs, exc, pattern):
    args = {"queries": Q, "corpus": C, "k": 5}
    args.update(kwargs)
    queries, corpus, k = args.pop("queries"), args.pop("corpus"), args.pop("k")
    with pytest.raises(exc, match=f"(?i){pattern}"):
        metrics_rs.knn(queries, corpus, k, **args)


def test_knn_bad_input_reference_call_is_valid():
    # the baseline the bad cases are derived from works
    ids, scores = metrics_rs.knn(Q, C, 5)
    assert ids.shape == (4, 5) and scores.shape == (4, 5)
    metrics_rs.knn(Q, C, 20, block_size=1, metric="dot")


def test_knn_keyword_only_options():
    with pytest.raises(TypeError):
        metrics_rs.knn(Q, C, 5, "dot")  # metric is keyword-only


# --- evaluate ----------------------------------------------------------------

RANKED = np.array([[3, 1, 4, 5], [9, 2, 6, 0], [7, 8, 1, 2]], dtype=np.int64)
QRELS = [{1: 2, 5: 0, 11: 1}, {2: 3, 0: 1}, {8: 1, 10: 2}]
KS = [1, 4]


def test_evaluate_reference_call_is_valid():
    res = metrics_rs.evaluate(RANKED, QRELS, KS, n_docs=12)
    assert res["n_queries"] == 3


EVAL_BAD = [
    # (id, overrides of (ranked_ids, qrels, ks) and keyword args, exception(s), message regex)
    (
        "duplicate_id_in_row",
        {"ranked_ids": np.array([[3, 1, 4, 3], [9, 2, 6, 0], [7, 8, 1, 2]], dtype=np.int64)},
        ValueError,
        r"ranked_ids|duplicate",
    ),
    (
        "negative_ranked_id",
        {"ranked_ids": np.array([[3, 1, 4, 5], [9, 2, -6, 0], [7, 8, 1, 2]], dtype=np.int64)},
        ValueError,
        r"ranked_ids",
    ),
    (
        "ranked_id_ge_n_docs",
        {"n_docs": 9, "qrels": [{1: 2}, {2: 3}, {8: 1}]},
        ValueError,
        r"ranked_ids|n_docs",
    ),
    ("qrels_id_ge_n_docs", {"n_docs": 10 + 1}, ValueError, r"qrels|n_docs"),
    ("negative_qrels_id", {"qrels": [{1: 2, -5: 1}, {2: 3}, {8: 1}]}, ValueError, r"qrels"),
    ("negative_grade", {"qrels": [{1: 2, 5: -1}, {2: 3}, {8: 1}]}, ValueError, r"qrels|grade"),
    ("qrels_too_short", {"qrels": QRELS[:2]}, ValueError, r"qrels"),
    ("qrels_too_long", {"qrels": QRELS + [{1: 1}]}, ValueError, r"qrels"),
    ("qrels_not_sequence", {"qrels": {1: 2}}, (ValueError, TypeError), r"qrels"),
    (
        "qrels_bad_grade_type",
        {"qrels": [{1: "high"}, {2: 3}, {8: 1}]},
        (ValueError, TypeError),
        r"qrels|grade",
    ),
    ("ks_empty", {"ks": []}, ValueError, r"\bks\b"),
    ("k_zero", {"ks": [0, 2]}, ValueError, r"\bks?\b"),
    ("k_negative", {"ks": [-1]}, (ValueError, TypeError), r"\bks?\b"),
    ("k_gt_width", {"ks": [1, 5]}, ValueError, r"\bks?\b|width"),
    ("ranked_int32", {"ranked_ids": RANKED.astype(np.int32)}, TypeError, r"ranked_ids"),
    ("ranked_float", {"ranked_ids": RANKED.astype(np.float64)}, TypeError, r"ranked_ids"),
    (
        "ranked_1d",
        {"ranked_ids": RANKED[0].copy(), "qrels": QRELS[:1]},
        (ValueError, TypeError),
        r"ranked_ids",
    ),
    (
        "ranked_3d",
        {"ranked_ids": RANKED[None].copy(), "qrels": QRELS[:1]},
        (ValueError, TypeError),
        r"ranked_ids",
    ),
    ("no_relevant_default", {"qrels": [{1: 2}, {2: 0, 0: 0}, {8: 1}]}, ValueError, r"relevant"),
    ("no_relevant_empty_qrels", {"qrels": [{1: 2}, {}, {8: 1}]}, ValueError, r"relevant"),
    (
        "no_relevant_explicit",
        {"qrels": [{1: 2}, {2: 0}, {8: 1}], "no_relevant": "error"},
        ValueError,
        r"relevant",
    ),
    ("no_relevant_unknown", {"no_relevant": "ignore"}, ValueError, r"no_relevant"),
    ("n_docs_zero", {"n_docs": 0}, ValueError, r"n_docs|ranked_ids|qrels"),
    ("n_docs_negative", {"n_docs": -1}, (ValueError, TypeError), r"n_docs"),
]


@pytest.mark.parametrize(
    "kwargs,exc,pattern", [c[1:] for c in EVAL_BAD], ids=[c[0] for c in EVAL_BAD]
)
def test_evaluate_bad_input(kwargs, exc, pattern):
    args = {"ranked_ids": RANKED, "qrels": QRELS, "ks": KS}
    args.update(kwargs)
    ranked, qrels, ks = args.pop("ranked_ids"), args.pop("qrels"), args.pop("ks")
    with pytest.raises(exc, match=f"(?i){pattern}"):
        metrics_rs.evaluate(ranked, qrels, ks, **args)


def test_evaluate_n_docs_boundary_is_exclusive():
    # ids 0..11 appear (11 only in qrels): n_docs=12 is fine, n_docs=11 is not
    metrics_rs.evaluate(RANKED, QRELS, KS, n_docs=12)
    with pytest.raises(ValueError, match="(?i)qrels|n_docs"):
        metrics_rs.evaluate(RANKED, QRELS, KS, n_docs=11)


def test_evaluate_duplicates_across_rows_are_fine():
    ranked = np.array([[1, 2, 3], [3, 2, 1]], dtype=np.int64)
    res = metrics_rs.evaluate(ranked, [{1: 1}, {1: 1}], [3])
    assert res["means"]["mrr@3"] == pytest.approx((1 + 1 / 3) / 2, abs=1e-12)


def _no_relevant_case():
    ranked = np.array([[3, 1, 4, 5], [9, 2, 6, 0], [7, 8, 1, 2], [1, 3, 5, 7]], dtype=np.int64)
    qrels = [{1: 2, 5: 0, 11: 1}, {2: 0, 6: 0}, {8: 1, 10: 2}, {}]
    return ranked, qrels


def test_no_relevant_zero_scores_zero_and_counts():
    ranked, qrels = _no_relevant_case()
    ks = [1, 2, 4]
    res = metrics_rs.evaluate(ranked, qrels, ks, no_relevant="zero", per_query=True)
    assert res["n_queries"] == 4
    assert res["n_skipped"] == 0
    good = metrics_rs.evaluate(ranked[[0, 2]], [qrels[0], qrels[2]], ks, per_query=True)
    for key, arr in res["per_query"].items():
        assert arr.shape == (4,)
        assert arr[1] == 0.0 and arr[3] == 0.0, key
        np.testing.assert_allclose(arr[[0, 2]], good["per_query"][key], rtol=0, atol=1e-12)
        # the zeros count in the mean
        expected = float(np.sum(good["per_query"][key])) / 4
        assert res["means"][key] == pytest.approx(expected, abs=1e-12), key
    assert res["means"]["recall@4"] > 0  # the check above is not vacuous


def test_no_relevant_skip_excludes_from_means():
    ranked, qrels = _no_relevant_case()
    ks = [1, 2, 4]
    res = metrics_rs.evaluate(ranked, qrels, ks, no_relevant="skip", per_query=True)
    assert res["n_queries"] == 2
    assert res["n_skipped"] == 2
    good = metrics_rs.evaluate(ranked[[0, 2]], [qrels[0], qrels[2]], ks, per_query=True)
    for key, arr in res["per_query"].items():
        assert arr.dtype == np.float64 and arr.shape == (4,)
        assert np.isnan(arr[1]) and np.isnan(arr[3]), key
        np.testing.assert_allclose(arr[[0, 2]], good["per_query"][key], rtol=0, atol=1e-12)
        assert res["means"][key] == pytest.approx(good["means"][key], abs=1e-12), key
        assert res["means"][key] == pytest.approx(float(np.nanmean(arr)), abs=1e-12), key
    # without per_query the means and counts are the same
    plain = metrics_rs.evaluate(ranked, qrels, ks, no_relevant="skip")
    assert plain["n_queries"] == 2 and plain["n_skipped"] == 2
    for key in res["per_query"]:
        assert plain["means"][key] == res["means"][key]


def test_no_relevant_modes_agree_when_every_query_has_relevant():
    ranked = RANKED
    results = [
        metrics_rs.evaluate(ranked, QRELS, KS, no_relevant=mode)
        for mode in ("error", "zero", "skip")
    ]
    for key in results[0]:  # the means and the counts
        assert results[1][key] == results[0][key] and results[2][key] == results[0][key], key


# --- paired_test -------------------------------------------------------------

A = [0.1, 0.4, 0.35, 0.8, 0.55]
B = [0.2, 0.3, 0.30, 0.7, 0.50]
AB = r"\ba\b.*\bb\b|\bb\b.*\ba\b"

PAIRED_BAD = [
    ("length_mismatch", {"b": B[:4]}, ValueError, AB + r"|length"),
    ("empty", {"a": [], "b": []}, ValueError, r"\ba\b|\bb\b|empty"),
    ("nan_a", {"a": [0.1, np.nan, 0.35, 0.8, 0.55]}, ValueError, r"\ba\b"),
    ("nan_b", {"b": [0.2, 0.3, 0.30, np.nan, 0.50]}, ValueError, r"\bb\b"),
    ("inf_a", {"a": [0.1, np.inf, 0.35, 0.8, 0.55]}, ValueError, r"\ba\b"),
    ("a_2d", {"a": [A], "b": [B]}, (ValueError, TypeError), r"\ba\b|\bb\b"),
    ("a_strings", {"a": ["x"] * 5}, (ValueError, TypeError), r"\ba\b"),
    ("unknown_method", {"method": "wilcoxon"}, ValueError, r"method"),
    ("n_resamples_zero", {"n_resamples": 0}, ValueError, r"n_resamples"),
    ("n_resamples_negative", {"n_resamples": -5}, (ValueError, TypeError), r"n_resamples"),
    (
        "n_resamples_zero_bootstrap",
        {"n_resamples": 0, "method": "bootstrap"},
        ValueError,
        r"n_resamples",
    ),
    ("confidence_zero", {"confidence": 0.0}, ValueError, r"confidence"),
    ("confidence_one", {"confidence": 1.0}, ValueError, r"confidence"),
    ("confidence_negative", {"confidence": -0.5}, ValueError, r"confidence"),
    ("confidence_big", {"confidence": 95.0}, ValueError, r"confidence"),
    ("confidence_nan", {"confidence": float("nan")}, ValueError, r"confidence"),
    ("confidence_t", {"confidence": 1.5, "method": "t"}, ValueError, r"confidence"),
    ("t_n1", {"a": [0.5], "b": [0.25], "method": "t"}, ValueError, r"\ba\b|\bb\b|\bn\b|2"),
]


@pytest.mark.parametrize(
    "kwargs,exc,pattern", [c[1:] for c in PAIRED_BAD], ids=[c[0] for c in PAIRED_BAD]
)
def test_paired_test_bad_input(kwargs, exc, pattern):
    args = {"a": A, "b": B}
    args.update(kwargs)
    a, b = args.pop("a"), args.pop("b")
    with pytest.raises(exc, match=f"(?i){pattern}"):
        metrics_rs.paired_test(a, b, **args)


def test_paired_test_reference_calls_are_valid():
    for method in ("randomization", "bootstrap", "t"):
        res = metrics_rs.paired_test(A, B, method=method, n_resamples=1, confidence=0.5)
        assert 0 < res["p_value"] <= 1
    # n = 1 is fine for the resampling methods
    res = metrics_rs.paired_test([0.5], [0.25], method="randomization")
    assert res["p_value"] == 1.0 and res["delta"] == 0.25


# --- panics --------------------------------------------------------------------


def test_panic_becomes_runtime_error_in_subprocess():
    script = textwrap.dedent(
        """
        import metrics_rs, numpy as np
        from metrics_rs import _metrics_rs
        try:
            _metrics_rs._panic("boom")
        except RuntimeError as exc:
            assert "boom" in str(exc), str(exc)
        else:
            raise SystemExit("no exception")
        ids, _ = metrics_rs.knn(np.eye(3, dtype=np.float32), np.eye(3, dtype=np.float32), 1)
        assert ids[:, 0].tolist() == [0, 1, 2]
        print("survived")
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, f"rc={proc.returncode}\nstdout={proc.stdout}\nstderr={proc.stderr}"
    assert "survived" in proc.stdout


def test_panic_becomes_runtime_error_in_process():
    from metrics_rs import _metrics_rs

    with pytest.raises(RuntimeError, match="boom"):
        _metrics_rs._panic("boom")
    with pytest.raises(RuntimeError, match="another message"):
        _metrics_rs._panic("another message")
    # the extension still works afterwards
    ids, _ = metrics_rs.knn(Q, C, 3)
    assert ids.shape == (4, 3)
