"""Correctness of ``metrics_rs.knn`` against a float64 NumPy reference."""

import os
import subprocess
import sys

import numpy as np
import pytest

import metrics_rs

SCORE_TOL = 1e-5


def _normalise(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def ref_scores(queries: np.ndarray, corpus: np.ndarray, metric: str) -> np.ndarray:
    """Full float64 score matrix computed from the float32 inputs."""
    q = queries.astype(np.float64)
    c = corpus.astype(np.float64)
    if metric == "cosine":
        q, c = _normalise(q), _normalise(c)
    return q @ c.T


def ref_topk(scores: np.ndarray, k: int) -> np.ndarray:
    """Top-k ids by the documented rule: score descending, then index ascending."""
    idx = np.broadcast_to(np.arange(scores.shape[1]), scores.shape)
    order = np.lexsort((idx, -scores), axis=-1)
    return order[:, :k]


def assert_knn_valid(ids, scores, ref, k, tol=SCORE_TOL):
    """Check knn output against the float64 reference score matrix ``ref``.

    Ids must equal the reference top-k except where the differing ids are a genuine
    near-tie (reference scores within ``tol``); scores must match the reference
    score of the returned id within ``tol``.
    """
    n_q, n_c = ref.shape
    assert ids.shape == (n_q, k)
    assert scores.shape == (n_q, k)
    assert ids.dtype == np.int64
    assert scores.dtype == np.float32
    assert np.all((ids >= 0) & (ids < n_c))
    assert not np.any(np.isnan(scores))
    rows = np.arange(n_q)[:, None]
    # scores belong to the returned ids
    np.testing.assert_allclose(scores.astype(np.float64), ref[rows, ids], rtol=0, atol=tol)
    # each row is sorted by the documented rule on the returned scores
    diffs = np.diff(scores, axis=1)
    assert np.all(diffs <= 0), "scores not in descending order"
    tied = diffs == 0
    assert np.all(np.diff(ids, axis=1)[tied] > 0), "equal scores not in ascending index order"
    for i in range(n_q):
        assert len(np.unique(ids[i])) == k, f"duplicate ids in row {i}"
    expected = ref_topk(ref, k)
    mismatch = ids != expected
    if np.any(mismatch):
        ours = ref[rows, ids][mismatch]
        theirs = ref[rows, expected][mismatch]
        assert np.all(np.abs(ours - theirs) <= tol), (
            "ids differ from the reference by more than a float32 near-tie: "
            f"{np.argwhere(mismatch)[:5].tolist()}"
        )
        kth = ref[np.arange(n_q), expected[:, -1]]
        assert np.all(ref[rows, ids] >= kth[:, None] - tol)


def random_data(seed, n_q, n_c, d, *, zero_rows=True):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n_q, d)).astype(np.float32)
    c = rng.standard_normal((n_c, d)).astype(np.float32)
    # scale so that dot products are O(1), within reach of an absolute 1e-5 tolerance
    q /= np.float32(np.sqrt(d))
    c /= np.float32(np.sqrt(d))
    if zero_rows:
        q[min(3, n_q - 1)] = 0.0
        c[min(17, n_c - 1)] = 0.0
    return q, c


def exact_tie_data(seed, n_q, n_c, d=16, n_distinct=12):
    """Vectors with four entries of +-1 scaled by powers of two.

    Every norm is a power of two, so normalised entries are exactly +-0.5 * 2**j and every
    cosine and dot product is exact in float32 whatever the summation order. A corpus
    built from few distinct rows has many exact ties (exact duplicate rows included).
    """
    rng = np.random.default_rng(seed)

    def make(n):
        x = np.zeros((n, d), dtype=np.float32)
        for i in range(n):
            cols = rng.choice(d, size=4, replace=False)
            x[i, cols] = rng.choice([-1.0, 1.0], size=4)
        return x

    distinct = make(n_distinct)
    corpus = distinct[rng.integers(0, n_distinct, size=n_c)]
    corpus *= (2.0 ** rng.integers(-2, 3, size=(n_c, 1))).astype(np.float32)
    queries = make(n_q) * (2.0 ** rng.integers(-2, 3, size=(n_q, 1))).astype(np.float32)
    return queries.astype(np.float32), corpus.astype(np.float32)


@pytest.mark.parametrize("metric", ["cosine", "dot"])
@pytest.mark.parametrize(
    "seed,n_q,n_c,d,k", [(0, 37, 503, 48, 10), (1, 5, 64, 7, 1), (2, 20, 300, 130, 25)]
)
def test_knn_matches_float64_reference(metric, seed, n_q, n_c, d, k):
    q, c = random_data(seed, n_q, n_c, d)
    ids, scores = metrics_rs.knn(q, c, k, metric=metric)
    assert_knn_valid(ids, scores, ref_scores(q, c, metric), k)


def test_knn_default_metric_is_cosine():
    q, c = random_data(3, 10, 80, 16, zero_rows=False)
    c *= np.linspace(0.1, 10, c.shape[0], dtype=np.float32)[:, None]  # make cosine != dot ordering
    ids_default, scores_default = metrics_rs.knn(q, c, 5)
    ids_cos, scores_cos = metrics_rs.knn(q, c, 5, metric="cosine")
    np.testing.assert_array_equal(ids_default, ids_cos)
    np.testing.assert_array_equal(scores_default, scores_cos)
    assert_knn_valid(ids_default, scores_default, ref_scores(q, c, "cosine"), 5)
    # and the dot product gives a different ranking on this data (so the check has teeth)
    ids_dot, _ = metrics_rs.knn(q, c, 5, metric="dot")
    assert not np.array_equal(ids_dot, ids_cos)


def test_cosine_is_scale_invariant_and_bounded():
    q, c = random_data(4, 12, 150, 32, zero_rows=False)
    ids, scores = metrics_rs.knn(q, c, 150)
    assert np.all(scores <= 1 + 1e-6) and np.all(scores >= -1 - 1e-6)
    scale = np.random.default_rng(5).uniform(0.01, 100, size=(c.shape[0], 1)).astype(np.float32)
    ids2, scores2 = metrics_rs.knn(q * np.float32(7.5), c * scale, 150)
    assert_knn_valid(ids2, scores2, ref_scores(q, c, "cosine"), 150)


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_zero_query_scores_zero_and_ties_by_index(metric):
    q, c = random_data(6, 4, 50, 8, zero_rows=False)
    q[2] = 0.0
    ids, scores = metrics_rs.knn(q, c, 10, metric=metric)
    assert not np.any(np.isnan(scores))
    np.testing.assert_array_equal(scores[2], np.zeros(10, dtype=np.float32))
    np.testing.assert_array_equal(ids[2], np.arange(10))


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_zero_corpus_row_scores_zero(metric):
    # Every non-zero corpus row points away from the query, so the zero row must rank first.
    rng = np.random.default_rng(7)
    d = 6
    c = rng.standard_normal((40, d)).astype(np.float32)
    c[:, 0] = -np.abs(c[:, 0]) - 5.0
    c[:, 1:] *= 0.1
    c[23] = 0.0
    q = np.zeros((3, d), dtype=np.float32)
    q[:, 0] = [1.0, 2.0, 0.5]
    ids, scores = metrics_rs.knn(q, c, 3, metric=metric)
    assert not np.any(np.isnan(scores))
    np.testing.assert_array_equal(ids[:, 0], [23, 23, 23])
    np.testing.assert_array_equal(scores[:, 0], np.zeros(3, dtype=np.float32))
    assert np.all(scores[:, 1:] < 0)
    assert_knn_valid(ids, scores, ref_scores(q, c, metric), 3)


def test_all_zero_corpus_and_queries():
    q = np.zeros((3, 5), dtype=np.float32)
    c = np.zeros((9, 5), dtype=np.float32)
    ids, scores = metrics_rs.knn(q, c, 9)
    np.testing.assert_array_equal(ids, np.tile(np.arange(9), (3, 1)))
    np.testing.assert_array_equal(scores, np.zeros((3, 9), dtype=np.float32))


@pytest.mark.parametrize("metric", ["cosine", "dot"])
@pytest.mark.parametrize("k", [1, 5, 13, 60])
def test_exact_ties_break_by_ascending_index(metric, k):
    q, c = exact_tie_data(8, 15, 60)
    ref = ref_scores(q, c, metric)
    # sanity: the data really has many ties within the top k
    top = np.sort(ref, axis=1)[:, ::-1][:, :k]
    if k > 1:
        assert np.sum(np.diff(top, axis=1) == 0) > 0
    ids, scores = metrics_rs.knn(q, c, k, metric=metric)
    expected = ref_topk(ref, k)
    np.testing.assert_array_equal(ids, expected)
    np.testing.assert_array_equal(
        scores, ref[np.arange(len(q))[:, None], expected].astype(np.float32)
    )


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_duplicate_rows_come_out_in_ascending_index(metric):
    rng = np.random.default_rng(9)
    d = 24
    # corpus of 100 rows with copies of row 4 at 37, 55 and 71 and of row 11 at 40, 90
    c = (rng.standard_normal((100, d)) / np.sqrt(d)).astype(np.float32)
    for src, dsts in [(4, [37, 55, 71]), (11, [40, 90])]:
        c[dsts] = c[src]
    # queries equal to (a scaled copy of) the duplicated rows put the whole group at the top
    q = np.stack([c[4] * 3.0, c[11], c[71] * 0.5]).astype(np.float32)
    for block_size in [None, 1, 7, 50, 100]:
        ids, scores = metrics_rs.knn(q, c, 6, metric=metric, block_size=block_size)
        if metric == "cosine":
            np.testing.assert_array_equal(ids[0, :4], [4, 37, 55, 71])
            np.testing.assert_array_equal(ids[1, :3], [11, 40, 90])
            np.testing.assert_array_equal(ids[2, :4], [4, 37, 55, 71])
        # whatever the ranking, equal rows must get equal scores and ascending indices
        for i in range(len(q)):
            for group in ([4, 37, 55, 71], [11, 40, 90]):
                present = [j for j in range(6) if ids[i, j] in group]
                if len(present) > 1:
                    assert present == list(range(present[0], present[0] + len(present)))
                    assert np.all(np.diff(ids[i, present]) > 0)
                    assert len(set(scores[i, present].tolist())) == 1
        assert_knn_valid(ids, scores, ref_scores(q, c, metric), 6)


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_block_size_does_not_change_exact_results(metric):
    q, c = exact_tie_data(10, 9, 53)
    n_c = c.shape[0]
    results = [
        metrics_rs.knn(q, c, 11, metric=metric, block_size=b) for b in (1, 7, n_c, None, 10**6)
    ]
    ids0, scores0 = results[0]
    for ids, scores in results[1:]:
        np.testing.assert_array_equal(ids, ids0)
        np.testing.assert_array_equal(scores, scores0)
    np.testing.assert_array_equal(ids0, ref_topk(ref_scores(q, c, metric), 11))


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_block_size_does_not_change_random_results(metric):
    q, c = random_data(11, 17, 211, 40)
    n_c = c.shape[0]
    ref = ref_scores(q, c, metric)
    results = {b: metrics_rs.knn(q, c, 9, metric=metric, block_size=b) for b in (1, 7, n_c, None)}
    ids0, scores0 = results[None]
    for b, (ids, scores) in results.items():
        assert_knn_valid(ids, scores, ref, 9)
        np.testing.assert_array_equal(ids, ids0, err_msg=f"block_size={b}")
        np.testing.assert_allclose(scores, scores0, rtol=0, atol=1e-6, err_msg=f"block_size={b}")


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_k_equals_corpus_size(metric):
    q, c = random_data(12, 6, 31, 10)
    ids, scores = metrics_rs.knn(q, c, 31, metric=metric)
    for row in ids:
        np.testing.assert_array_equal(np.sort(row), np.arange(31))
    assert_knn_valid(ids, scores, ref_scores(q, c, metric), 31)


def test_single_corpus_row_and_single_query():
    q = np.array([[1.0, 2.0, 3.0]], dtype=np.float32)
    c = np.array([[-1.0, 0.5, 2.0]], dtype=np.float32)
    ids, scores = metrics_rs.knn(q, c, 1, metric="dot")
    assert ids.shape == (1, 1) and scores.shape == (1, 1)
    assert ids[0, 0] == 0
    assert scores[0, 0] == pytest.approx(-1.0 + 1.0 + 6.0, abs=1e-6)
    _, cos = metrics_rs.knn(q, c, 1)
    expected = 6.0 / (np.sqrt(14.0) * np.sqrt(1 + 0.25 + 4))
    assert cos[0, 0] == pytest.approx(expected, abs=1e-6)


def test_dimension_one():
    q = np.array([[2.0], [-3.0], [0.0]], dtype=np.float32)
    c = np.array([[-1.0], [4.0], [0.0], [0.5]], dtype=np.float32)
    ids, scores = metrics_rs.knn(q, c, 4)
    np.testing.assert_array_equal(ids, [[1, 3, 2, 0], [0, 2, 1, 3], [0, 1, 2, 3]])
    np.testing.assert_array_equal(scores, [[1, 1, 0, -1], [1, 0, -1, -1], [0, 0, 0, 0]])


_RNG13 = np.random.default_rng(13)
_WIDE_Q = _RNG13.standard_normal((14, 40)).astype(np.float32)
_WIDE_C = _RNG13.standard_normal((90, 40)).astype(np.float32)

LAYOUTS = {
    # name: (queries, corpus), all equal in value to the strided column slice below
    "strided_both": (_WIDE_Q[:, ::2], _WIDE_C[:, ::2]),
    "strided_queries": (_WIDE_Q[:, ::2], np.ascontiguousarray(_WIDE_C[:, ::2])),
    "strided_corpus": (np.ascontiguousarray(_WIDE_Q[:, ::2]), _WIDE_C[:, ::2]),
    "fortran_both": (np.asfortranarray(_WIDE_Q[:, ::2]), np.asfortranarray(_WIDE_C[:, ::2])),
    "fortran_queries": (np.asfortranarray(_WIDE_Q[:, ::2]), np.ascontiguousarray(_WIDE_C[:, ::2])),
    "fortran_corpus": (np.ascontiguousarray(_WIDE_Q[:, ::2]), np.asfortranarray(_WIDE_C[:, ::2])),
    "negative_row_stride": (
        np.ascontiguousarray(_WIDE_Q[::-1, ::2])[::-1],
        np.ascontiguousarray(_WIDE_C[::-1, ::2])[::-1],
    ),
    "transposed_view": (
        np.ascontiguousarray(_WIDE_Q[:, ::2].T).T,
        np.ascontiguousarray(_WIDE_C[:, ::2].T).T,
    ),
}


@pytest.mark.parametrize("metric", ["cosine", "dot"])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_non_contiguous_inputs_match_contiguous_copy(layout, metric):
    q, c = LAYOUTS[layout]
    q_c, c_c = np.ascontiguousarray(_WIDE_Q[:, ::2]), np.ascontiguousarray(_WIDE_C[:, ::2])
    assert np.array_equal(q, q_c) and np.array_equal(c, c_c)
    assert not (q.flags.c_contiguous and c.flags.c_contiguous)
    expected_ids, expected_scores = metrics_rs.knn(q_c, c_c, 8, metric=metric)
    ids, scores = metrics_rs.knn(q, c, 8, metric=metric)
    np.testing.assert_array_equal(ids, expected_ids)
    np.testing.assert_array_equal(scores, expected_scores)
    assert_knn_valid(ids, scores, ref_scores(q_c, c_c, metric), 8)


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_strided_sub_blocks(metric):
    q, c = _WIDE_Q[::2, :20], _WIDE_C[:, 20:]
    ids, scores = metrics_rs.knn(q, c, 8, metric=metric)
    ids_c, scores_c = metrics_rs.knn(
        np.ascontiguousarray(q), np.ascontiguousarray(c), 8, metric=metric
    )
    np.testing.assert_array_equal(ids, ids_c)
    np.testing.assert_array_equal(scores, scores_c)
    assert_knn_valid(ids, scores, ref_scores(q, c, metric), 8)


def test_inputs_are_not_modified_and_readonly_accepted():
    q, c = random_data(14, 8, 40, 12)
    q.flags.writeable = False
    c.flags.writeable = False
    q_before, c_before = q.copy(), c.copy()
    ids, scores = metrics_rs.knn(q, c, 4)
    np.testing.assert_array_equal(q, q_before)
    np.testing.assert_array_equal(c, c_before)
    assert_knn_valid(ids, scores, ref_scores(q, c, "cosine"), 4)


def test_results_are_deterministic_across_calls():
    q, c = random_data(15, 50, 400, 32)
    first = metrics_rs.knn(q, c, 20, block_size=16)
    for _ in range(3):
        again = metrics_rs.knn(q, c, 20, block_size=16)
        np.testing.assert_array_equal(again[0], first[0])
        np.testing.assert_array_equal(again[1], first[1])


def test_outputs_are_fresh_writable_arrays():
    q, c = random_data(16, 3, 20, 4)
    ids, scores = metrics_rs.knn(q, c, 5)
    assert isinstance(ids, np.ndarray) and isinstance(scores, np.ndarray)
    ids[0, 0] = -1  # must not raise
    scores[0, 0] = 42.0
    ids2, scores2 = metrics_rs.knn(q, c, 5)
    assert ids2[0, 0] != -1 and scores2[0, 0] != 42.0


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_larger_than_default_block_and_many_queries(metric):
    # n_c > 4 * the default block size (2048), plenty of queries for every worker thread
    q, c = random_data(17, 300, 9000, 16)
    ids, scores = metrics_rs.knn(q, c, 7, metric=metric)
    assert_knn_valid(ids, scores, ref_scores(q, c, metric), 7)
    ids_b, scores_b = metrics_rs.knn(q, c, 7, metric=metric, block_size=1000)
    np.testing.assert_array_equal(ids_b, ids)
    np.testing.assert_allclose(scores_b, scores, rtol=0, atol=1e-6)


def test_exact_ties_across_default_blocks():
    # ~225 exact copies of each of 40 distinct rows spread over several default-size blocks;
    # with k == n_c the whole tie order across block boundaries is checked
    q, c = exact_tie_data(18, 5, 9000, n_distinct=40)
    ref = ref_scores(q, c, "cosine")
    ids, scores = metrics_rs.knn(q, c, 9000)
    np.testing.assert_array_equal(ids, ref_topk(ref, 9000))
    np.testing.assert_array_equal(scores, np.sort(ref, axis=1)[:, ::-1].astype(np.float32))


def test_equal_returned_scores_come_in_ascending_index_order():
    # In one dimension every positive corpus value has cosine exactly 1 with a positive
    # query: a mass of (mathematical) ties. Whatever float32 rounding does, wherever the
    # *returned* scores are equal the ids must ascend, and the k boundary must respect it.
    rng = np.random.default_rng(19)
    q = rng.uniform(0.1, 1.0, size=(25, 1)).astype(np.float32)
    c = rng.uniform(0.1, 1.0, size=(30, 1)).astype(np.float32)
    ref = ref_scores(q, c, "cosine")
    ids, scores = metrics_rs.knn(q, c, 30)
    assert_knn_valid(ids, scores, ref, 30)
    for k in (1, 5):
        ids_k, scores_k = metrics_rs.knn(q, c, k)
        np.testing.assert_array_equal(ids_k, ids[:, :k])
        np.testing.assert_array_equal(scores_k, scores[:, :k])
        # a row whose returned score equals the k-th returned score must not be left out
        # while a higher index with that score is kept
        for i in range(len(q)):
            kth = scores_k[i, -1]
            same = np.flatnonzero(scores[i] == kth)
            kept = set(ids_k[i][scores_k[i] == kth].tolist())
            tied_ids = sorted(ids[i, same].tolist())
            assert sorted(kept) == tied_ids[: len(kept)], i


def test_results_do_not_depend_on_thread_count(tmp_path):
    q, c = random_data(20, 64, 700, 24)
    np.save(tmp_path / "q.npy", q)
    np.save(tmp_path / "c.npy", c)
    script = (
        "import sys, numpy as np, metrics_rs\n"
        "d = sys.argv[1]\n"
        "q, c = np.load(d + '/q.npy'), np.load(d + '/c.npy')\n"
        "for metric in ('cosine', 'dot'):\n"
        "    ids, scores = metrics_rs.knn(q, c, 12, metric=metric, block_size=100)\n"
        "    np.save(f'{d}/ids_{metric}_' + sys.argv[2] + '.npy', ids)\n"
        "    np.save(f'{d}/scores_{metric}_' + sys.argv[2] + '.npy', scores)\n"
    )
    for threads in ("1", "3"):
        env = dict(os.environ, RAYON_NUM_THREADS=threads)
        subprocess.run(
            [sys.executable, "-c", script, str(tmp_path), threads], env=env, check=True, timeout=120
        )
    for metric in ("cosine", "dot"):
        ids, scores = metrics_rs.knn(q, c, 12, metric=metric, block_size=100)
        assert_knn_valid(ids, scores, ref_scores(q, c, metric), 12)
        for threads in ("1", "3"):
            ids_t = np.load(tmp_path / f"ids_{metric}_{threads}.npy")
            scores_t = np.load(tmp_path / f"scores_{metric}_{threads}.npy")
            np.testing.assert_array_equal(ids_t, ids)
            np.testing.assert_allclose(scores_t, scores, rtol=0, atol=1e-6)
