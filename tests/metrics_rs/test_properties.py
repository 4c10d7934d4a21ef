"""Hypothesis property tests of ``metrics_rs.evaluate`` (and a pytrec_eval cross-check)."""

import numpy as np
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import metrics_rs

METRICS = ("mrr", "ndcg", "recall", "precision", "map", "hit")
EPS = 1e-12

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@st.composite
def ranking_cases(draw, require_relevant=True, max_width=15):
    """One query: a ranking (distinct doc ids), graded qrels incl. unretrieved docs, and ks."""
    pool = draw(st.integers(1, 40))
    width = draw(st.integers(1, min(pool, max_width)))
    perm = draw(st.permutations(range(pool)))
    ranking = list(perm[:width])
    judged = draw(st.lists(st.integers(0, pool - 1), unique=True, max_size=pool))
    grades = draw(st.lists(st.integers(0, 3), min_size=len(judged), max_size=len(judged)))
    qrels = dict(zip(judged, grades, strict=True))
    if require_relevant and not any(g >= 1 for g in qrels.values()):
        doc = draw(st.integers(0, pool - 1))
        qrels[doc] = draw(st.integers(1, 3))
    ks = draw(st.lists(st.integers(1, width), min_size=1, max_size=4, unique=True))
    return ranking, qrels, sorted(ks)


def evaluate_one(ranking, qrels, ks):
    """One ranking's metrics (``evaluate``'s means)."""
    return metrics_rs.evaluate(np.array([ranking], dtype=np.int64), [qrels], ks)["means"]


@SETTINGS
@given(ranking_cases())
def test_metrics_in_unit_interval(case):
    ranking, qrels, ks = case
    res = evaluate_one(ranking, qrels, ks)
    for m in METRICS:
        for k in ks:
            v = res[f"{m}@{k}"]
            assert 0.0 <= v <= 1.0, (m, k, v)
        # hit is 0 or 1; precision is a multiple of 1/k
        for k in ks:
            assert res[f"hit@{k}"] in (0.0, 1.0)
            assert abs(res[f"precision@{k}"] * k - round(res[f"precision@{k}"] * k)) < 1e-9


@SETTINGS
@given(ranking_cases())
def test_matches_pytrec_eval(case):
    ranking, qrels, ks = case
    res = evaluate_one(ranking, qrels, ks)
    width = len(ranking)
    qrels_t = {"q": {f"d{d}": g for d, g in qrels.items()}}
    run = {"q": {f"d{d}": float(width - r) for r, d in enumerate(ranking)}}
    kstr = ",".join(map(str, ks))
    ref = pytrec_eval.RelevanceEvaluator(
        qrels_t,
        {f"ndcg_cut.{kstr}", f"map_cut.{kstr}", f"P.{kstr}", f"recall.{kstr}", f"success.{kstr}"},
    ).evaluate(run)["q"]
    rr = pytrec_eval.RelevanceEvaluator(qrels_t, {"recip_rank"})
    for k in ks:
        cut = {"q": {d: s for d, s in run["q"].items() if s > width - k}}
        assert abs(res[f"mrr@{k}"] - rr.evaluate(cut)["q"]["recip_rank"]) < 1e-9
        assert abs(res[f"ndcg@{k}"] - ref[f"ndcg_cut_{k}"]) < 1e-9
        assert abs(res[f"map@{k}"] - ref[f"map_cut_{k}"]) < 1e-9
        assert abs(res[f"precision@{k}"] - ref[f"P_{k}"]) < 1e-9
        assert abs(res[f"recall@{k}"] - ref[f"recall_{k}"]) < 1e-9
        assert abs(res[f"hit@{k}"] - ref[f"success_{k}"]) < 1e-9


@st.composite
def perfect_cases(draw):
    """A ranking with every relevant doc first, in descending grade order."""
    n_rel = draw(st.integers(1, 8))
    rel_grades = sorted(
        draw(st.lists(st.integers(1, 3), min_size=n_rel, max_size=n_rel)), reverse=True
    )
    n_nonrel = draw(st.integers(0, 8))
    nonrel_judged = draw(st.lists(st.booleans(), min_size=n_nonrel, max_size=n_nonrel))
    ids = draw(st.permutations(range(n_rel + n_nonrel + 5)))
    rel_ids = list(ids[:n_rel])
    nonrel_ids = list(ids[n_rel : n_rel + n_nonrel])
    ranking = rel_ids + nonrel_ids
    qrels = dict(zip(rel_ids, rel_grades, strict=True))
    qrels.update({d: 0 for d, judged in zip(nonrel_ids, nonrel_judged, strict=True) if judged})
    # judged-irrelevant docs that are not retrieved do not change anything either
    qrels.update(
        dict.fromkeys(ids[n_rel + n_nonrel : n_rel + n_nonrel + draw(st.integers(0, 5))], 0)
    )
    ks = draw(st.lists(st.integers(1, len(ranking)), min_size=1, max_size=5, unique=True))
    return ranking, qrels, n_rel, sorted(ks)


@SETTINGS
@given(perfect_cases())
def test_perfect_ranking_scores_one(case):
    ranking, qrels, n_rel, ks = case
    res = evaluate_one(ranking, qrels, ks)
    for k in ks:
        assert abs(res[f"mrr@{k}"] - 1.0) < EPS
        assert abs(res[f"ndcg@{k}"] - 1.0) < EPS
        assert res[f"hit@{k}"] == 1.0
        assert abs(res[f"precision@{k}"] - min(n_rel, k) / k) < EPS
        if k >= n_rel:
            assert abs(res[f"recall@{k}"] - 1.0) < EPS
            assert abs(res[f"map@{k}"] - 1.0) < EPS
        else:
            assert abs(res[f"recall@{k}"] - k / n_rel) < EPS
            assert abs(res[f"map@{k}"] - k / n_rel) < EPS


@st.composite
def swap_cases(draw):
    """A case plus a relevant doc at position i and a non-relevant doc at position j < i."""
    ranking, qrels, _ = draw(ranking_cases(max_width=20))
    rel_pos = [i for i, d in enumerate(ranking) if qrels.get(d, 0) >= 1]
    nonrel_pos = [i for i, d in enumerate(ranking) if qrels.get(d, 0) < 1]
    pairs = [(j, i) for i in rel_pos for j in nonrel_pos if j < i]
    if not pairs:
        # force one: put a relevant doc behind a non-relevant one
        ranking = ranking + [max(ranking) + 1000]
        qrels = dict(qrels)
        qrels[ranking[-1]] = draw(st.integers(1, 3))
        if qrels.get(ranking[0], 0) >= 1:
            qrels[ranking[0]] = 0
        pairs = [(0, len(ranking) - 1)]
    j, i = draw(st.sampled_from(pairs))
    return ranking, qrels, j, i


@SETTINGS
@given(swap_cases())
def test_moving_relevant_doc_up_never_hurts(case):
    ranking, qrels, j, i = case
    assert qrels.get(ranking[i], 0) >= 1 and qrels.get(ranking[j], 0) < 1 and j < i
    better = list(ranking)
    better[i], better[j] = better[j], better[i]
    ks = list(range(1, len(ranking) + 1))
    before = evaluate_one(ranking, qrels, ks)
    after = evaluate_one(better, qrels, ks)
    for m in METRICS:
        for k in ks:
            key = f"{m}@{k}"
            assert after[key] >= before[key] - EPS, (key, before[key], after[key])
    # and at the cut-off that includes the moved doc only after the swap, it strictly helps
    k = j + 1
    for m in ("ndcg", "recall", "precision", "map"):
        assert after[f"{m}@{k}"] > before[f"{m}@{k}"], m


@SETTINGS
@given(st.lists(ranking_cases(), min_size=1, max_size=6))
def test_batch_equals_rows_evaluated_alone(cases):
    # pad/crop every ranking to a common width so they can form one 2-D array
    width = min(len(r) for r, _, _ in cases)
    rankings = [r[:width] for r, _, _ in cases]
    qrels = [q for _, q, _ in cases]
    ks = sorted({min(k, width) for _, _, ks in cases for k in ks})
    batch = metrics_rs.evaluate(np.array(rankings, dtype=np.int64), qrels, ks, per_query=True)
    for row, (ranking, qr) in enumerate(zip(rankings, qrels, strict=True)):
        alone = evaluate_one(ranking, qr, ks)
        for key in batch["per_query"]:
            assert abs(batch["per_query"][key][row] - alone[key]) < EPS, key
    for key in batch["per_query"]:
        assert abs(batch["means"][key] - float(np.mean(batch["per_query"][key]))) < 1e-12
