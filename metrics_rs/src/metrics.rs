//! IR metrics of ranked lists against graded relevance judgements.
//!
//! Definitions follow trec_eval, so results can be checked against it:
//! relevant means grade >= 1; `ndcg@k` uses gain = grade, discount 1/log2(rank+1)
//! and the ideal DCG of all judged documents cut at k (`ndcg_cut`); `mrr@k` is
//! `recip_rank` on the run cut at k; `recall@k` divides by the number of relevant
//! documents; `precision@k` divides by k (`P`); `map@k` sums precision at each
//! relevant rank up to k and divides by the number of relevant documents
//! (`map_cut`); `hit@k` is 1 when any relevant document is in the top k.

use rayon::prelude::*;

use crate::error::{ensure, InvalidArgument, Result};

/// Metric names in the order they are reported at each cut-off.
pub const METRIC_NAMES: [&str; 6] = ["mrr", "ndcg", "recall", "precision", "map", "hit"];

/// What to do with a query that has no relevant document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoRelevant {
    /// Refuse: such a query usually means broken qrels.
    Error,
    /// Score it 0 on every metric and count it in the means.
    Zero,
    /// Leave it out of the means; its per-query values are NaN.
    Skip,
}

impl NoRelevant {
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "error" => Ok(Self::Error),
            "zero" => Ok(Self::Zero),
            "skip" => Ok(Self::Skip),
            other => Err(InvalidArgument::new(
                "no_relevant",
                format!("unknown policy {other:?}; use \"error\", \"zero\" or \"skip\""),
            )),
        }
    }
}

/// A borrowed row-major `[n_queries, width]` matrix of ranked document ids.
#[derive(Clone, Copy, Debug)]
pub struct Ranking<'a> {
    pub ids: &'a [i64],
    pub n_queries: usize,
    pub width: usize,
}

impl<'a> Ranking<'a> {
    fn row(&self, q: usize) -> &'a [i64] {
        &self.ids[q * self.width..(q + 1) * self.width]
    }
}

/// Graded judgements of every query row, stored flat: row `q` owns
/// `pairs[offsets[q]..offsets[q + 1]]`, each `(document id, grade)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Qrels {
    offsets: Vec<usize>,
    pairs: Vec<(i64, i64)>,
}

impl Default for Qrels {
    fn default() -> Self {
        Self {
            offsets: vec![0],
            pairs: Vec::new(),
        }
    }
}

impl Qrels {
    /// Appends the judgements of the next query row.
    pub fn push_query(&mut self, judgements: impl IntoIterator<Item = (i64, i64)>) {
        self.pairs.extend(judgements);
        self.offsets.push(self.pairs.len());
    }

    pub fn n_queries(&self) -> usize {
        self.offsets.len() - 1
    }

    fn query(&self, q: usize) -> &[(i64, i64)] {
        &self.pairs[self.offsets[q]..self.offsets[q + 1]]
    }

    /// Sorts every row's judgements by document id and checks them.
    fn sort_and_check(&mut self, n_docs: Option<i64>) -> Result<()> {
        let upper = n_docs.unwrap_or(i64::MAX);
        for q in 0..self.n_queries() {
            let judgements = &mut self.pairs[self.offsets[q]..self.offsets[q + 1]];
            judgements.sort_unstable();
            for pair in judgements.windows(2) {
                ensure(pair[0].0 != pair[1].0, "qrels", || {
                    format!("query row {q} judges document {} twice", pair[0].0)
                })?;
            }
            for &(doc, grade) in judgements.iter() {
                ensure(doc >= 0 && doc < upper, "qrels", || {
                    format!("query row {q}: document id {doc} is out of range")
                })?;
                ensure(grade >= 0, "qrels", || {
                    format!(
                        "query row {q}: document {doc} has negative grade {grade}; grades are >= 0"
                    )
                })?;
            }
        }
        Ok(())
    }
}

impl<J: IntoIterator<Item = (i64, i64)>> FromIterator<J> for Qrels {
    fn from_iter<I: IntoIterator<Item = J>>(rows: I) -> Self {
        let mut qrels = Self::default();
        for judgements in rows {
            qrels.push_query(judgements);
        }
        qrels
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// `"<metric>@<k>"` for every cut-off (ascending) and metric.
    pub names: Vec<String>,
    /// Mean over evaluated queries, aligned with `names`.
    pub means: Vec<f64>,
    /// `per_query[m][q]`: metric `m` of query row `q` (NaN for a skipped query).
    pub per_query: Vec<Vec<f64>>,
    pub n_evaluated: usize,
    pub n_skipped: usize,
}

/// Evaluates every ranking row against its judgements at every cut-off in `ks`.
pub fn evaluate(
    ranking: Ranking<'_>,
    mut qrels: Qrels,
    ks: &[i64],
    no_relevant: NoRelevant,
    n_docs: Option<i64>,
) -> Result<Evaluation> {
    let cutoffs = validate_cutoffs(ks, ranking.width)?;
    validate_ranking(&ranking, n_docs)?;
    ensure(qrels.n_queries() == ranking.n_queries, "qrels", || {
        format!(
            "has {} entries but ranked_ids has {} rows; give one mapping per query row",
            qrels.n_queries(),
            ranking.n_queries
        )
    })?;
    qrels.sort_and_check(n_docs)?;
    let relevant: Vec<usize> = (0..qrels.n_queries())
        .map(|q| relevant_count(qrels.query(q)))
        .collect();
    if no_relevant == NoRelevant::Error {
        let first_empty = relevant.iter().position(|&r| r == 0);
        ensure(first_empty.is_none(), "qrels", || {
            format!(
                "query row {} has no relevant document (grade >= 1); fix the qrels, or pass \
                 no_relevant=\"zero\" to score such queries 0 or \"skip\" to leave them out",
                first_empty.unwrap_or_default()
            )
        })?;
    }

    let n_metrics = cutoffs.len() * METRIC_NAMES.len();
    let max_k = *cutoffs.last().unwrap_or(&0);
    // discounts[rank] = 1 / log2(rank + 1), computed once instead of per document.
    let discounts: Vec<f64> = (0..=max_k)
        .map(|rank| 1.0 / ((rank + 1) as f64).log2())
        .collect();
    let mut rows = vec![0.0f64; ranking.n_queries * n_metrics];
    rows.par_chunks_mut(n_metrics)
        .enumerate()
        .for_each_init(Vec::new, |ideal, (q, out)| {
            if relevant[q] == 0 {
                let value = if no_relevant == NoRelevant::Skip {
                    f64::NAN
                } else {
                    0.0
                };
                out.fill(value);
            } else {
                let judgements = qrels.query(q);
                ideal.clear();
                ideal.extend(judgements.iter().map(|&(_, g)| g).filter(|&g| g > 0));
                ideal.sort_unstable_by(|a, b| b.cmp(a));
                score_query(ranking.row(q), judgements, ideal, &cutoffs, &discounts, out);
            }
        });

    let n_skipped = if no_relevant == NoRelevant::Skip {
        relevant.iter().filter(|&&r| r == 0).count()
    } else {
        0
    };
    let n_evaluated = ranking.n_queries - n_skipped;
    let per_query: Vec<Vec<f64>> = (0..n_metrics)
        .map(|m| rows.iter().skip(m).step_by(n_metrics).copied().collect())
        .collect();
    let means = per_query
        .iter()
        .map(|values| {
            let sum: f64 = values.iter().filter(|v| !v.is_nan()).sum();
            if n_evaluated == 0 {
                f64::NAN
            } else {
                sum / n_evaluated as f64
            }
        })
        .collect();
    let names = cutoffs
        .iter()
        .flat_map(|k| METRIC_NAMES.iter().map(move |m| format!("{m}@{k}")))
        .collect();
    Ok(Evaluation {
        names,
        means,
        per_query,
        n_evaluated,
        n_skipped,
    })
}

fn relevant_count(judgements: &[(i64, i64)]) -> usize {
    judgements.iter().filter(|&&(_, grade)| grade >= 1).count()
}

/// Cut-offs sorted ascending without repeats.
fn validate_cutoffs(ks: &[i64], width: usize) -> Result<Vec<usize>> {
    ensure(!ks.is_empty(), "ks", || {
        "is empty; give at least one cut-off such as [10]".into()
    })?;
    let bad = ks.iter().find(|&&k| k < 1 || k as u64 > width as u64);
    ensure(bad.is_none(), "ks", || {
        format!(
            "cut-off {} is outside 1..={width} (the ranking width)",
            bad.copied().unwrap_or_default()
        )
    })?;
    let mut cutoffs: Vec<usize> = ks.iter().map(|&k| k as usize).collect();
    cutoffs.sort_unstable();
    cutoffs.dedup();
    Ok(cutoffs)
}

/// Largest id for which duplicate detection uses a bitmap instead of sorting.
const BITMAP_LIMIT: i64 = 1 << 26;

fn validate_ranking(ranking: &Ranking<'_>, n_docs: Option<i64>) -> Result<()> {
    ensure(
        ranking.ids.len() == ranking.n_queries * ranking.width,
        "ranked_ids",
        || "length does not match its shape".into(),
    )?;
    ensure(ranking.n_queries > 0, "ranked_ids", || {
        "has no rows (no queries)".into()
    })?;
    if let Some(n) = n_docs {
        ensure(n >= 1, "n_docs", || format!("must be at least 1, got {n}"))?;
    }
    ensure(ranking.width > 0, "ranked_ids", || {
        "has no columns (empty rankings)".into()
    })?;
    let upper = n_docs.unwrap_or(i64::MAX);
    let max_id = ranking
        .ids
        .par_chunks(ranking.width)
        .map(|row| row.iter().copied().max().unwrap_or(0))
        .max()
        .unwrap_or(0);
    let bitmap_words = if (0..BITMAP_LIMIT).contains(&max_id) {
        max_id as usize / 64 + 1
    } else {
        0
    };
    // One pass per row, rows in parallel; collecting keeps row order, so the error
    // reported is always the first bad row.
    let problems: Vec<Option<String>> = ranking
        .ids
        .par_chunks(ranking.width)
        .enumerate()
        .map_init(
            || vec![0u64; bitmap_words],
            |bitmap, (q, row)| row_problem(q, row, upper, bitmap),
        )
        .collect();
    match problems.into_iter().flatten().next() {
        Some(message) => Err(InvalidArgument::new("ranked_ids", message)),
        None => Ok(()),
    }
}

/// What is wrong with ranking row `q`, if anything: an id outside `0..upper`, or a repeat.
fn row_problem(q: usize, row: &[i64], upper: i64, bitmap: &mut [u64]) -> Option<String> {
    if let Some(rank) = row.iter().position(|&id| id < 0 || id >= upper) {
        let allowed = if upper == i64::MAX {
            "ids must be non-negative".to_string()
        } else {
            format!("ids must be in 0..{upper} (n_docs)")
        };
        return Some(format!(
            "id {} at row {q}, rank {} is out of range: {allowed}",
            row[rank],
            rank + 1
        ));
    }
    has_duplicate(row, bitmap)
        .then(|| format!("row {q} lists the same document twice; a ranking must not repeat ids"))
}

/// Whether `row` repeats an id. Uses `bitmap` (left all-zero) when it is large
/// enough for every id, else sorts a copy.
fn has_duplicate(row: &[i64], bitmap: &mut [u64]) -> bool {
    if bitmap.is_empty() {
        let mut sorted = row.to_vec();
        sorted.sort_unstable();
        return sorted.windows(2).any(|w| w[0] == w[1]);
    }
    let mut found = false;
    let mut marked = 0;
    for &id in row {
        let (word, bit) = (id as usize / 64, 1u64 << (id % 64));
        if bitmap[word] & bit != 0 {
            found = true;
            break;
        }
        bitmap[word] |= bit;
        marked += 1;
    }
    for &id in &row[..marked] {
        bitmap[id as usize / 64] = 0;
    }
    found
}

/// Writes every metric at every cut-off for one query with at least one relevant document.
/// `judgements` are sorted by document id; `ideal` holds the positive grades, highest first.
fn score_query(
    row: &[i64],
    judgements: &[(i64, i64)],
    ideal: &[i64],
    cutoffs: &[usize],
    discounts: &[f64],
    out: &mut [f64],
) {
    let n_relevant = relevant_count(judgements) as f64;

    let (mut found, mut dcg, mut ideal_dcg, mut precision_sum) = (0usize, 0.0f64, 0.0f64, 0.0f64);
    let mut first_relevant: Option<usize> = None;
    let mut next_cutoff = cutoffs.iter().enumerate().peekable();
    for (rank, &discount) in discounts.iter().enumerate().skip(1) {
        let doc = row[rank - 1];
        let grade = judgements
            .binary_search_by_key(&doc, |&(d, _)| d)
            .map_or(0, |i| judgements[i].1);
        if grade > 0 {
            dcg += grade as f64 * discount;
        }
        if grade >= 1 {
            found += 1;
            precision_sum += found as f64 / rank as f64;
            first_relevant.get_or_insert(rank);
        }
        if let Some(&g) = ideal.get(rank - 1) {
            ideal_dcg += g as f64 * discount;
        }
        while let Some(&(slot, &k)) = next_cutoff.peek() {
            if k != rank {
                break;
            }
            let values = [
                first_relevant.map_or(0.0, |r| 1.0 / r as f64),
                dcg / ideal_dcg,
                found as f64 / n_relevant,
                found as f64 / k as f64,
                precision_sum / n_relevant,
                if found > 0 { 1.0 } else { 0.0 },
            ];
            out[slot * METRIC_NAMES.len()..(slot + 1) * METRIC_NAMES.len()]
                .copy_from_slice(&values);
            next_cutoff.next();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(
        ids: &[i64],
        width: usize,
        qrels: &[Vec<(i64, i64)>],
        ks: &[i64],
        policy: NoRelevant,
    ) -> Result<Evaluation> {
        let ranking = Ranking {
            ids,
            n_queries: ids.len() / width,
            width,
        };
        evaluate(ranking, qrels.iter().cloned().collect(), ks, policy, None)
    }

    fn metric(e: &Evaluation, name: &str) -> f64 {
        e.means[e.names.iter().position(|n| n == name).unwrap()]
    }

    #[test]
    fn hand_computed_example() {
        // Relevant: doc 7 (grade 2) at rank 2, doc 9 (grade 1) at rank 4, doc 5 (grade 1) not retrieved.
        let ids = [1, 7, 3, 9];
        let qrels = vec![vec![(7, 2), (9, 1), (5, 1), (3, 0)]];
        let e = run(&ids, 4, &qrels, &[2, 4], NoRelevant::Error).unwrap();
        assert_eq!(metric(&e, "mrr@2"), 0.5);
        assert_eq!(metric(&e, "recall@4"), 2.0 / 3.0);
        assert_eq!(metric(&e, "precision@4"), 0.5);
        assert_eq!(metric(&e, "map@4"), (1.0 / 2.0 + 2.0 / 4.0) / 3.0);
        assert_eq!(metric(&e, "hit@2"), 1.0);
        let dcg = 2.0 / 3f64.log2() + 1.0 / 5f64.log2();
        let ideal = 2.0 + 1.0 / 3f64.log2() + 1.0 / 4f64.log2() + 0.0;
        assert!((metric(&e, "ndcg@4") - dcg / ideal).abs() < 1e-15);
        let ideal2 = 2.0 + 1.0 / 3f64.log2();
        assert!((metric(&e, "ndcg@2") - (2.0 / 3f64.log2()) / ideal2).abs() < 1e-15);
    }

    #[test]
    fn perfect_ranking_scores_one() {
        let ids = [4, 2, 8, 0];
        let qrels = vec![vec![(4, 3), (2, 1)]];
        let e = run(&ids, 4, &qrels, &[2], NoRelevant::Error).unwrap();
        for name in [
            "mrr@2",
            "ndcg@2",
            "recall@2",
            "precision@2",
            "map@2",
            "hit@2",
        ] {
            assert_eq!(metric(&e, name), 1.0, "{name}");
        }
    }

    #[test]
    fn queries_without_relevant_documents_follow_the_policy() {
        let ids = [0, 1, 0, 1];
        let qrels = vec![vec![(0, 1)], vec![(1, 0)]];
        assert_eq!(
            run(&ids, 2, &qrels, &[1], NoRelevant::Error)
                .unwrap_err()
                .argument,
            "qrels"
        );
        let zero = run(&ids, 2, &qrels, &[1], NoRelevant::Zero).unwrap();
        assert_eq!((metric(&zero, "hit@1"), zero.n_evaluated), (0.5, 2));
        let skip = run(&ids, 2, &qrels, &[1], NoRelevant::Skip).unwrap();
        assert_eq!(
            (metric(&skip, "hit@1"), skip.n_evaluated, skip.n_skipped),
            (1.0, 1, 1)
        );
        assert!(skip.per_query[0][1].is_nan());
    }

    #[test]
    fn rejects_bad_rankings_and_qrels() {
        let q = vec![vec![(0, 1)]];
        let arg = |r: Result<Evaluation>| r.unwrap_err().argument;
        assert_eq!(
            arg(run(&[0, 0], 2, &q, &[1], NoRelevant::Error)),
            "ranked_ids"
        );
        assert_eq!(
            arg(run(&[0, -1], 2, &q, &[1], NoRelevant::Error)),
            "ranked_ids"
        );
        assert_eq!(arg(run(&[0, 1], 2, &q, &[3], NoRelevant::Error)), "ks");
        assert_eq!(arg(run(&[0, 1], 2, &q, &[], NoRelevant::Error)), "ks");
        assert_eq!(arg(run(&[0, 1], 2, &[], &[1], NoRelevant::Error)), "qrels");
        assert_eq!(
            arg(run(&[0, 1], 2, &[vec![(0, -1)]], &[1], NoRelevant::Error)),
            "qrels"
        );
        let big = [0, BITMAP_LIMIT + 5, BITMAP_LIMIT + 5];
        assert_eq!(arg(run(&big, 3, &q, &[1], NoRelevant::Error)), "ranked_ids");
        let ranking = Ranking {
            ids: &[0, 5],
            n_queries: 1,
            width: 2,
        };
        assert_eq!(
            evaluate(
                ranking,
                q.iter().cloned().collect(),
                &[1],
                NoRelevant::Error,
                Some(5)
            )
            .unwrap_err()
            .argument,
            "ranked_ids"
        );
    }
}
