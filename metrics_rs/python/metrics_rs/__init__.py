"""Exact kNN, IR metrics and paired significance tests, computed in Rust.

The one place where mathembed defines its retrieval metrics. Public API:

``knn(queries, corpus, k, *, metric="cosine", block_size=None) -> (ids, scores)``
    Exact top-``k`` corpus rows for every query row. ``ids`` is ``int64[n_q, k]``,
    ``scores`` is ``float32[n_q, k]``. Ties are broken deterministically: score
    descending, then corpus index ascending. The score matrix is computed one block
    (``block_size`` corpus rows, default 2048, per worker thread) at a time, never
    whole. With ``metric="cosine"`` a zero vector has cosine 0 with everything.
    Embeddings must be ``float32`` (a ``float64`` array is refused with a
    ``TypeError`` rather than silently rounded or copied); non-contiguous
    ``float32`` arrays are accepted and copied once. NaN or inf is a ``ValueError``.

``evaluate(ranked_ids, qrels, ks, *, per_query=False, no_relevant="error", n_docs=None)``
    Metrics at every ``k`` in ``ks`` with trec_eval's definitions: ``mrr@k``
    (recip_rank on the run cut at k), ``ndcg@k`` (gain = grade, discount
    1/log2(rank+1), ideal DCG from all judged documents, cut at k), ``recall@k``,
    ``precision@k`` (divides by k), ``map@k`` (map_cut: divides by the number of
    relevant documents) and ``hit@k``. ``qrels[i]`` maps document id to an integer
    grade for query row ``i``; grade >= 1 is relevant, 0 is judged non-relevant.
    A query with no relevant document is an error by default; ``no_relevant="zero"``
    scores it 0 on every metric, ``"skip"`` leaves it out of the means (its
    per-query values are NaN). Returns an ``Evaluation`` (a TypedDict in the stub):
    ``{"means": {"mrr@10": ..., ...}, "n_queries": evaluated, "n_skipped": skipped}`` and,
    with ``per_query=True``, ``"per_query"``: a dict of ``float64[n_q]`` arrays aligned
    with the rows of ``ranked_ids``. ``n_docs``, when
    given, bounds every document id. Duplicate ids within a ranking are an error.

``paired_test(a, b, *, method="randomization", n_resamples=10000, seed=0, confidence=0.95)``
    Two-sided test of mean(a - b) = 0 on per-query scores of two systems.
    ``randomization`` is Fisher's sign-flip test (exact enumeration when
    2**n <= n_resamples, else Monte Carlo with p = (hits + 1) / (n_resamples + 1));
    ``bootstrap`` resamples the centred differences; ``t`` is the paired t-test.
    ``ci_low``/``ci_high`` bound the mean difference: Student-t interval for ``t``,
    percentile bootstrap for the other two. Returns a ``PairedTest`` (a TypedDict in the
    stub): ``{delta, p_value, ci_low, ci_high}``.

Bad input raises ``ValueError`` or ``TypeError`` naming the argument; an internal
Rust panic surfaces as ``RuntimeError``, never as an abort.
"""

from metrics_rs._metrics_rs import __version__, evaluate, knn, paired_test

__all__ = ["__version__", "evaluate", "knn", "paired_test"]
