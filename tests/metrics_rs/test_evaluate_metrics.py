"""Per-query parity of ``metrics_rs.evaluate`` with trec_eval (via pytrec_eval)."""

import math

import numpy as np
import pytest
import pytrec_eval

import metrics_rs

METRICS = ("mrr", "ndcg", "recall", "precision", "map", "hit")
TOL = 1e-9


def pytrec_per_query(ranked: np.ndarray, qrels, ks) -> dict[str, np.ndarray]:
    """trec_eval's per-query values, keyed like ``evaluate``'s output.

    trec_eval re-sorts tied scores by docno, so the run gets strictly decreasing scores
    that encode exactly the order of ``ranked``.
    """
    n_q, width = ranked.shape
    qrels_t = {f"q{i}": {f"d{d}": int(g) for d, g in qr.items()} for i, qr in enumerate(qrels)}
    run = {
        f"q{i}": {f"d{d}": float(width - r) for r, d in enumerate(row.tolist())}
        for i, row in enumerate(ranked)
    }
    kstr = ",".join(str(k) for k in ks)
    measures = {
        f"ndcg_cut.{kstr}",
        f"map_cut.{kstr}",
        f"P.{kstr}",
        f"recall.{kstr}",
        f"success.{kstr}",
    }
    full = pytrec_eval.RelevanceEvaluator(qrels_t, measures).evaluate(run)
    rr_eval = pytrec_eval.RelevanceEvaluator(qrels_t, {"recip_rank"})
    out: dict[str, np.ndarray] = {}
    for k in ks:
        cut = {qid: {d: s for d, s in docs.items() if s > width - k} for qid, docs in run.items()}
        rr = rr_eval.evaluate(cut)
        qids = [f"q{i}" for i in range(n_q)]
        assert set(rr) == set(qids) and set(full) == set(qids)
        out[f"mrr@{k}"] = np.array([rr[q]["recip_rank"] for q in qids])
        out[f"ndcg@{k}"] = np.array([full[q][f"ndcg_cut_{k}"] for q in qids])
        out[f"recall@{k}"] = np.array([full[q][f"recall_{k}"] for q in qids])
        out[f"precision@{k}"] = np.array([full[q][f"P_{k}"] for q in qids])
        out[f"map@{k}"] = np.array([full[q][f"map_cut_{k}"] for q in qids])
        out[f"hit@{k}"] = np.array([full[q][f"success_{k}"] for q in qids])
        # hit@k computed directly as a cross-check of the success measure
        direct = np.array(
            [float(any(qrels[i].get(int(d), 0) >= 1 for d in ranked[i, :k])) for i in range(n_q)]
        )
        np.testing.assert_array_equal(out[f"hit@{k}"], direct)
    return out


def random_case(seed, n_q=40, width=30, pool_size=120, tied_scores=False, id_space=None):
    """Random rankings with graded qrels (grades 0..3), every query with >= 1 relevant doc.

    qrels include documents that are not retrieved (relevant and not), so they count in the
    recall/map denominators and in the ideal DCG. With ``tied_scores`` the ranking is
    produced from integer scores with many ties by the documented rule (score descending,
    then doc id ascending).
    """
    rng = np.random.default_rng(seed)
    if id_space is None:
        pool = np.arange(pool_size)
    else:
        pool = rng.choice(id_space, size=pool_size, replace=False)
    ranked = np.empty((n_q, width), dtype=np.int64)
    qrels = []
    for i in range(n_q):
        if tied_scores:
            cand = rng.choice(pool, size=min(pool_size, 2 * width), replace=False)
            scores = rng.integers(0, 4, size=len(cand))
            order = np.lexsort((cand, -scores))
            row = cand[order[:width]]
            assert len(np.unique(scores[order[:width]])) < width  # genuinely tied
        else:
            row = rng.choice(pool, size=width, replace=False)
        ranked[i] = row
        retrieved = set(row.tolist())
        unretrieved = [d for d in pool.tolist() if d not in retrieved]
        judged_in = rng.choice(row, size=rng.integers(0, width // 2 + 1), replace=False).tolist()
        judged_out = rng.choice(unretrieved, size=rng.integers(0, 6), replace=False).tolist()
        qr = {int(d): int(rng.integers(0, 4)) for d in judged_in + judged_out}
        if i % 7 == 3:
            # all relevant documents unretrieved: every metric is 0
            qr = {int(d): 0 for d in judged_in}
            qr.update({int(d): int(rng.integers(1, 4)) for d in unretrieved[:3]})
        if i % 11 == 5:
            # everything retrieved is relevant
            qr = {int(d): int(rng.integers(1, 4)) for d in row.tolist()}
        if not any(g >= 1 for g in qr.values()):
            d = int(rng.choice(row if rng.random() < 0.5 else np.array(unretrieved)))
            qr[d] = int(rng.integers(1, 4))
        qrels.append(qr)
    return ranked, qrels


def assert_parity(ranked, qrels, ks, **kwargs):
    result = metrics_rs.evaluate(ranked, qrels, ks, per_query=True, **kwargs)
    expected = pytrec_per_query(ranked, qrels, ks)
    per_query = result["per_query"]
    for key, want in expected.items():
        got = per_query[key]
        assert got.dtype == np.float64 and got.shape == (len(ranked),), key
        np.testing.assert_allclose(got, want, rtol=0, atol=TOL, err_msg=key)
        assert result["means"][key] == pytest.approx(float(np.mean(want)), abs=TOL), key
    assert result["n_queries"] == len(ranked)
    assert result["n_skipped"] == 0
    return result


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_parity_random_runs(seed):
    ranked, qrels = random_case(seed)
    assert_parity(ranked, qrels, [1, 3, 5, 10, 20, 30])


@pytest.mark.parametrize("seed", [3, 4])
def test_parity_tied_scores(seed):
    ranked, qrels = random_case(seed, tied_scores=True)
    assert_parity(ranked, qrels, [5, 10, 20])


def test_parity_large_sparse_doc_ids():
    ranked, qrels = random_case(5, n_q=25, width=20, pool_size=80, id_space=2**40)
    assert ranked.max() > 2**31  # ids beyond int32 range
    assert_parity(ranked, qrels, [1, 5, 10, 20])
    assert_parity(ranked, qrels, [1, 5, 10, 20], n_docs=2**40)


def test_parity_trec_default_cutoffs():
    ranked, qrels = random_case(6, n_q=15, width=100, pool_size=300)
    assert_parity(ranked, qrels, [5, 10, 15, 20, 30, 100])


def test_parity_width_one_and_small():
    ranked, qrels = random_case(7, n_q=30, width=1, pool_size=10)
    assert_parity(ranked, qrels, [1])
    ranked, qrels = random_case(8, n_q=30, width=3, pool_size=10)
    assert_parity(ranked, qrels, [1, 2, 3])


def _exact_tie_vectors(rng, n, d=16):
    x = np.zeros((n, d), dtype=np.float32)
    for i in range(n):
        cols = rng.choice(d, size=4, replace=False)
        x[i, cols] = rng.choice([-1.0, 1.0], size=4)
    return x


def test_parity_knn_pipeline_with_exact_ties():
    """knn with many exact score ties feeding evaluate; trec_eval sees the documented order."""
    rng = np.random.default_rng(9)
    distinct = _exact_tie_vectors(rng, 10)
    corpus = distinct[rng.integers(0, 10, size=80)]  # many exact duplicate rows
    queries = _exact_tie_vectors(rng, 20)
    k = 15
    ids, scores = metrics_rs.knn(queries, corpus, k)
    # the float64 reference order: score descending, then corpus index ascending
    ref = (queries.astype(np.float64) / 2) @ (corpus.astype(np.float64) / 2).T
    idx = np.broadcast_to(np.arange(corpus.shape[0]), ref.shape)
    expected = np.lexsort((idx, -ref), axis=-1)[:, :k]
    np.testing.assert_array_equal(ids, expected)
    assert np.sum(np.diff(scores, axis=1) == 0) > k  # lots of ties
    qrels = []
    for _ in range(len(queries)):
        qr = {int(d): int(rng.integers(0, 4)) for d in rng.choice(80, size=25, replace=False)}
        qr[int(rng.integers(0, 80))] = 2
        qrels.append(qr)
    assert_parity(ids, qrels, [1, 5, 10, 15], n_docs=80)


def test_hand_computed_example():
    ranked = np.array([[5, 3, 9, 1]], dtype=np.int64)
    qrels = [{3: 2, 1: 1, 7: 3, 9: 0}]
    res = metrics_rs.evaluate(ranked, qrels, [1, 2, 4])
    n_rel = 3
    ideal = [3, 2, 1]

    def idcg(k):
        return sum(g / math.log2(r + 2) for r, g in enumerate(ideal[:k]))

    expected = {
        "mrr@1": 0.0,
        "ndcg@1": 0.0,
        "recall@1": 0.0,
        "precision@1": 0.0,
        "map@1": 0.0,
        "hit@1": 0.0,
        "mrr@2": 1 / 2,
        "ndcg@2": (2 / math.log2(3)) / idcg(2),
        "recall@2": 1 / n_rel,
        "precision@2": 1 / 2,
        "map@2": (1 / 2) / n_rel,
        "hit@2": 1.0,
        "mrr@4": 1 / 2,
        "ndcg@4": (2 / math.log2(3) + 1 / math.log2(5)) / idcg(4),
        "recall@4": 2 / n_rel,
        "precision@4": 2 / 4,
        "map@4": (1 / 2 + 2 / 4) / n_rel,
        "hit@4": 1.0,
    }
    for key, want in expected.items():
        assert res["means"][key] == pytest.approx(want, abs=1e-12), key
    assert res["n_queries"] == 1 and res["n_skipped"] == 0


def test_result_keys_and_types():
    ranked, qrels = random_case(10, n_q=6, width=8, pool_size=30)
    res = metrics_rs.evaluate(ranked, qrels, [2, 8])
    metric_keys = {f"{m}@{k}" for m in METRICS for k in (2, 8)}
    assert set(res) == {"means", "n_queries", "n_skipped"}  # no per_query unless asked
    assert metric_keys <= set(res["means"])
    for key in metric_keys:
        assert isinstance(res["means"][key], float), key
    assert res["n_queries"] == 6 and res["n_skipped"] == 0
    assert isinstance(res["n_queries"], int) and isinstance(res["n_skipped"], int)
    res_pq = metrics_rs.evaluate(ranked, qrels, [2, 8], per_query=True)
    assert metric_keys <= set(res_pq["per_query"])
    for key in metric_keys:
        assert res_pq["means"][key] == res["means"][key]


@pytest.mark.parametrize("no_relevant", ["error", "zero", "skip"])
def test_per_query_aligned_with_rows_and_nanmean_is_mean(no_relevant):
    ranked, qrels = random_case(11, n_q=20, width=10, pool_size=50)
    ks = [1, 4, 10]
    res = metrics_rs.evaluate(ranked, qrels, ks, per_query=True, no_relevant=no_relevant)
    per_query = res["per_query"]
    for key in (f"{m}@{k}" for m in METRICS for k in ks):
        arr = per_query[key]
        assert isinstance(arr, np.ndarray) and arr.dtype == np.float64 and arr.shape == (20,)
        assert float(np.nanmean(arr)) == pytest.approx(res["means"][key], abs=1e-12)
    # alignment: evaluating a single row gives that row's per-query value
    perm = np.random.default_rng(0).permutation(20)
    res_perm = metrics_rs.evaluate(ranked[perm], [qrels[i] for i in perm], ks, per_query=True)
    for i in (0, 7, 19):
        single = metrics_rs.evaluate(ranked[i : i + 1], [qrels[i]], ks)
        for key in per_query:
            assert per_query[key][i] == pytest.approx(single["means"][key], abs=1e-12), key
    for key in per_query:
        np.testing.assert_allclose(
            res_perm["per_query"][key], per_query[key][perm], rtol=0, atol=1e-12
        )
        assert res_perm["means"][key] == pytest.approx(res["means"][key], abs=1e-12)


def test_n_docs_does_not_change_results():
    ranked, qrels = random_case(12, n_q=10, width=10, pool_size=40)
    a = metrics_rs.evaluate(ranked, qrels, [3, 10], per_query=True)
    b = metrics_rs.evaluate(ranked, qrels, [3, 10], per_query=True, n_docs=40)
    for key in a["per_query"]:
        np.testing.assert_array_equal(a["per_query"][key], b["per_query"][key])


def test_inputs_not_modified():
    ranked, qrels = random_case(13, n_q=5, width=6, pool_size=20)
    ranked_before = ranked.copy()
    qrels_before = [dict(q) for q in qrels]
    metrics_rs.evaluate(ranked, qrels, [1, 6], per_query=True)
    np.testing.assert_array_equal(ranked, ranked_before)
    assert qrels == qrels_before


def test_qrels_accepts_tuple_of_dicts():
    ranked, qrels = random_case(14, n_q=4, width=5, pool_size=20)
    ref = metrics_rs.evaluate(ranked, qrels, [5])
    alt = metrics_rs.evaluate(ranked, tuple(qrels), [5])
    for key in (f"{m}@5" for m in METRICS):
        assert alt["means"][key] == ref["means"][key]


def test_ks_sequence_types():
    ranked, qrels = random_case(15, n_q=4, width=5, pool_size=20)
    a = metrics_rs.evaluate(ranked, qrels, [2, 5])
    b = metrics_rs.evaluate(ranked, qrels, (5, 2))
    for key in (f"{m}@{k}" for m in METRICS for k in (2, 5)):
        assert a["means"][key] == b["means"][key]


def test_non_contiguous_ranked_ids_are_read_row_major():
    """A Fortran-ordered or strided int64 array is either refused or read correctly."""
    rng = np.random.default_rng(16)
    # ids unique across the whole array, so a mis-read layout cannot hide behind a duplicate error
    ranked = rng.permutation(48).reshape(6, 8).astype(np.int64)
    qrels = [
        {int(d): int(rng.integers(1, 4)) for d in rng.choice(48, 10, replace=False)}
        for _ in range(6)
    ]
    for i in range(6):
        qrels[i][int(ranked[i, 0])] = 2  # every row has a hit at rank 1
    expected = metrics_rs.evaluate(ranked, qrels, [1, 3, 8], per_query=True)
    wide = np.zeros((6, 16), dtype=np.int64)
    wide[:, ::2] = ranked
    for variant in (np.asfortranarray(ranked), wide[:, ::2], ranked[::-1][::-1]):
        assert np.array_equal(variant, ranked)
        try:
            got = metrics_rs.evaluate(variant, qrels, [1, 3, 8], per_query=True)
        except TypeError:
            continue
        for key, arr in expected["per_query"].items():
            np.testing.assert_array_equal(got["per_query"][key], arr, err_msg=key)
