//! Exact k-nearest-neighbour search by blocked matrix products.
//!
//! Work is split into tasks of (query block, corpus partition). A task multiplies
//! its query block with one corpus block at a time into a buffer it owns, so no
//! more than one `query_block x block_size` slice of the score matrix exists per
//! worker thread, and keeps a bounded candidate list per query. Candidates are
//! ordered by score descending, then corpus index ascending; that total order
//! makes the result independent of blocking and thread count.

use gemm::{gemm, Parallelism};
use rayon::prelude::*;

use crate::error::{ensure, InvalidArgument, Result};

/// Corpus rows multiplied at a time when the caller does not choose.
pub const DEFAULT_BLOCK_SIZE: usize = 2048;
/// Largest query block one task takes. Each query block repacks the corpus, so
/// larger blocks amortise that; 1024 x 2048 scores (8 MiB) per thread measured
/// best on a 2-core Zen 4 (benchmarks/bench_metrics.py).
const MAX_QUERY_BLOCK: usize = 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    Cosine,
    Dot,
}

impl Metric {
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "cosine" => Ok(Self::Cosine),
            "dot" => Ok(Self::Dot),
            other => Err(InvalidArgument::new(
                "metric",
                format!("unknown metric {other:?}; use \"cosine\" or \"dot\""),
            )),
        }
    }
}

/// A borrowed row-major matrix.
#[derive(Clone, Copy, Debug)]
pub struct Matrix<'a> {
    pub data: &'a [f32],
    pub rows: usize,
    pub cols: usize,
}

impl<'a> Matrix<'a> {
    fn row_block(&self, start: usize, end: usize) -> &'a [f32] {
        &self.data[start * self.cols..end * self.cols]
    }
}

/// Top-k neighbours of every query, row-major `[n_queries, k]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Neighbours {
    pub ids: Vec<i64>,
    pub scores: Vec<f32>,
    pub k: usize,
}

/// A candidate packed into one integer whose ascending order is the rank order:
/// score descending, then corpus index ascending. Selecting and sorting plain
/// integers is much faster than comparing `(score, index)` pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Candidate(u64);

impl Candidate {
    fn new(score: f32, index: u32) -> Self {
        // `+ 0.0` turns -0 into +0 so the two tie. The map below is monotone from
        // f32 to u32; inverting it puts higher scores first.
        let bits = (score + 0.0).to_bits();
        let ascending = if bits >> 31 == 1 {
            !bits
        } else {
            bits | 0x8000_0000
        };
        Self((u64::from(!ascending) << 32) | u64::from(index))
    }

    fn score(self) -> f32 {
        let ascending = !((self.0 >> 32) as u32);
        let bits = if ascending >> 31 == 1 {
            ascending & 0x7FFF_FFFF
        } else {
            !ascending
        };
        f32::from_bits(bits)
    }

    fn index(self) -> u32 {
        self.0 as u32
    }
}

/// The best `k` candidates seen so far for one query.
///
/// Candidates are appended until the buffer holds `2k`, then it is cut back to
/// the best `k` and the k-th score becomes the bar a new candidate must beat.
/// Within one task corpus indices arrive in ascending order, so a later candidate
/// that only ties the bar loses the tie and can be skipped with a strict `>`.
struct TopK {
    k: usize,
    buffer: Vec<Candidate>,
    bar: f32,
}

impl TopK {
    fn new(k: usize) -> Self {
        Self {
            k,
            buffer: Vec::with_capacity(2 * k),
            bar: f32::NEG_INFINITY,
        }
    }

    fn offer_row(&mut self, scores: &[f32], first_index: usize) {
        const LANES: usize = 16;
        let mut offset = 0;
        for chunk in scores.chunks(LANES) {
            // A branch-free bit mask of the lanes above the bar: it vectorises, most
            // chunks of a large corpus give 0, and the rest visit only their set bits.
            let bar = self.bar;
            let mut above = chunk
                .iter()
                .enumerate()
                .fold(0u32, |mask, (j, &s)| mask | (u32::from(s > bar) << j));
            while above != 0 {
                let j = above.trailing_zeros() as usize;
                above &= above - 1;
                // The bar may have risen since the mask was taken.
                if chunk[j] > self.bar {
                    self.push(chunk[j], first_index + offset + j);
                }
            }
            offset += chunk.len();
        }
    }

    fn push(&mut self, score: f32, index: usize) {
        self.buffer.push(Candidate::new(score, index as u32));
        if self.buffer.len() == 2 * self.k {
            self.shrink();
        }
    }

    fn shrink(&mut self) {
        if self.buffer.len() > self.k {
            self.buffer.select_nth_unstable(self.k - 1);
            self.buffer.truncate(self.k);
        }
        if self.buffer.len() == self.k {
            self.bar = self
                .buffer
                .iter()
                .max()
                .map_or(f32::NEG_INFINITY, |c| c.score());
        }
    }

    fn into_sorted(mut self) -> Vec<Candidate> {
        self.shrink();
        self.buffer.sort_unstable();
        self.buffer
    }
}

/// Euclidean norm of every row, accumulated in f64, which also validates the rows:
/// the sum of squares of finite f32 values cannot overflow f64, so a non-finite norm
/// means the row holds NaN or inf. One pass over the data does both jobs.
fn finite_row_norms(name: &'static str, matrix: &Matrix<'_>) -> Result<Vec<f64>> {
    let norms: Vec<f64> = matrix
        .data
        .par_chunks(matrix.cols)
        .map(|row| {
            row.iter()
                .map(|&x| f64::from(x) * f64::from(x))
                .sum::<f64>()
                .sqrt()
        })
        .collect();
    let bad_row = norms.iter().position(|n| !n.is_finite());
    ensure(bad_row.is_none(), name, || {
        format!(
            "row {} contains NaN or inf; embeddings must be finite",
            bad_row.unwrap_or_default()
        )
    })?;
    Ok(norms)
}

fn inverse(norms: &[f64]) -> Vec<f32> {
    norms
        .iter()
        .map(|&n| if n > 0.0 { (1.0 / n) as f32 } else { 0.0 })
        .collect()
}

fn validate(queries: &Matrix<'_>, corpus: &Matrix<'_>, k: usize, block_size: usize) -> Result<()> {
    ensure(queries.rows > 0, "queries", || "is empty (0 rows)".into())?;
    ensure(corpus.rows > 0, "corpus", || "is empty (0 rows)".into())?;
    ensure(queries.cols > 0, "queries", || "has 0 columns".into())?;
    ensure(queries.cols == corpus.cols, "corpus", || {
        format!(
            "dimension {} does not match the queries' dimension {}",
            corpus.cols, queries.cols
        )
    })?;
    ensure(corpus.rows <= u32::MAX as usize, "corpus", || {
        format!(
            "has {} rows; at most {} are supported",
            corpus.rows,
            u32::MAX
        )
    })?;
    ensure(k >= 1 && k <= corpus.rows, "k", || {
        format!(
            "must be between 1 and the corpus size {}, got {k}",
            corpus.rows
        )
    })?;
    ensure(block_size >= 1, "block_size", || {
        "must be at least 1".into()
    })?;
    for (name, matrix) in [("queries", queries), ("corpus", corpus)] {
        ensure(matrix.data.len() == matrix.rows * matrix.cols, name, || {
            format!(
                "holds {} values, not rows x cols = {} x {}",
                matrix.data.len(),
                matrix.rows,
                matrix.cols
            )
        })?;
    }
    Ok(())
}

/// Exact top-`k` corpus rows for every query row.
///
/// `block_size` is the number of corpus rows scored at a time per task
/// (default [`DEFAULT_BLOCK_SIZE`]). With [`Metric::Cosine`] a zero vector has
/// cosine 0 with everything.
pub fn knn(
    queries: Matrix<'_>,
    corpus: Matrix<'_>,
    k: usize,
    metric: Metric,
    block_size: Option<usize>,
) -> Result<Neighbours> {
    let block_size = block_size.unwrap_or(DEFAULT_BLOCK_SIZE);
    validate(&queries, &corpus, k, block_size)?;

    let query_norms = finite_row_norms("queries", &queries)?;
    let corpus_norms = finite_row_norms("corpus", &corpus)?;
    // Cauchy-Schwarz bounds every partial sum of a dot product by the product of
    // the norms, so checking it once rules out overflow (and NaN) in the GEMM.
    let max_q = query_norms.iter().copied().fold(0.0, f64::max);
    let max_c = corpus_norms.iter().copied().fold(0.0, f64::max);
    ensure(max_q * max_c < f64::from(f32::MAX) / 2.0, "queries", || {
        "norms are so large that dot products overflow float32; normalise the embeddings".into()
    })?;
    let scale = match metric {
        Metric::Cosine => Some((inverse(&query_norms), inverse(&corpus_norms))),
        Metric::Dot => None,
    };

    let threads = rayon::current_num_threads().max(1);
    let query_block = queries.rows.div_ceil(threads).clamp(1, MAX_QUERY_BLOCK);
    let n_query_blocks = queries.rows.div_ceil(query_block);
    // Few query blocks (e.g. one query): split the corpus too, so every thread works.
    let n_parts = threads
        .div_ceil(n_query_blocks)
        .min(corpus.rows.div_ceil(block_size));
    let part_len = corpus.rows.div_ceil(n_parts);

    let partial: Vec<Vec<TopK>> = (0..n_query_blocks * n_parts)
        .into_par_iter()
        .map(|task| {
            let (qb, part) = (task / n_parts, task % n_parts);
            let q_start = qb * query_block;
            let q_end = (q_start + query_block).min(queries.rows);
            let c_start = part * part_len;
            let c_end = (c_start + part_len).min(corpus.rows);
            search_block(
                &queries,
                q_start..q_end,
                &corpus,
                c_start..c_end,
                k,
                block_size,
                scale
                    .as_ref()
                    .map(|(q, c)| (&q[q_start..q_end], c.as_slice())),
            )
        })
        .collect();

    let mut ids = vec![0i64; queries.rows * k];
    let mut scores = vec![0f32; queries.rows * k];
    let mut partial = partial.into_iter();
    for qb in 0..n_query_blocks {
        let parts: Vec<Vec<TopK>> = partial.by_ref().take(n_parts).collect();
        let q_start = qb * query_block;
        for (row, top) in merge_parts(parts, k).into_iter().enumerate() {
            let q = q_start + row;
            for (slot, c) in top.iter().enumerate() {
                ids[q * k + slot] = i64::from(c.index());
                scores[q * k + slot] = c.score();
            }
        }
    }
    Ok(Neighbours { ids, scores, k })
}

/// Merges the per-partition candidate lists of one query block.
fn merge_parts(parts: Vec<Vec<TopK>>, k: usize) -> Vec<Vec<Candidate>> {
    let mut parts = parts.into_iter();
    let first = parts.next().unwrap_or_default();
    let mut merged: Vec<Vec<Candidate>> = first.into_iter().map(TopK::into_sorted).collect();
    for part in parts {
        for (row, top) in part.into_iter().enumerate() {
            let mut all = std::mem::take(&mut merged[row]);
            all.extend(top.into_sorted());
            all.sort_unstable();
            all.truncate(k);
            merged[row] = all;
        }
    }
    merged
}

/// Scores one query block against a corpus range, one corpus block at a time.
/// `cosine_scale` holds the inverse norms of the block's queries and of the whole
/// corpus; the value ranked is exactly the value returned, so ties seen by the
/// caller are ordered by index.
fn search_block(
    queries: &Matrix<'_>,
    query_rows: std::ops::Range<usize>,
    corpus: &Matrix<'_>,
    corpus_rows: std::ops::Range<usize>,
    k: usize,
    block_size: usize,
    cosine_scale: Option<(&[f32], &[f32])>,
) -> Vec<TopK> {
    let m = query_rows.len();
    let dim = queries.cols;
    let lhs = queries.row_block(query_rows.start, query_rows.end);
    let mut tops: Vec<TopK> = (0..m).map(|_| TopK::new(k)).collect();
    let mut buffer = vec![0f32; m * block_size.min(corpus_rows.len())];

    let mut c_start = corpus_rows.start;
    while c_start < corpus_rows.end {
        let c_end = (c_start + block_size).min(corpus_rows.end);
        let n = c_end - c_start;
        let rhs = corpus.row_block(c_start, c_end);
        let out = &mut buffer[..m * n];
        // SAFETY: `out` is m x n row-major (row stride n); `lhs` is m x dim row-major
        // (row stride dim); the right operand is the corpus block transposed, dim x n,
        // read with row stride 1 and column stride dim. All three slices have exactly
        // these sizes, and `read_dst = false` means `out` is only written.
        unsafe {
            gemm(
                m,
                n,
                dim,
                out.as_mut_ptr(),
                1,
                n as isize,
                false,
                lhs.as_ptr(),
                1,
                dim as isize,
                rhs.as_ptr(),
                dim as isize,
                1,
                0.0,
                1.0,
                false,
                false,
                false,
                Parallelism::None,
            );
        }
        for (i, (row, top)) in out.chunks_exact_mut(n).zip(tops.iter_mut()).enumerate() {
            if let Some((query_scale, corpus_scale)) = cosine_scale {
                let q = query_scale[i];
                for (s, &c) in row.iter_mut().zip(&corpus_scale[c_start..c_end]) {
                    *s = *s * q * c;
                }
            }
            top.offer_row(row, c_start);
        }
        c_start = c_end;
    }
    tops
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix(data: &[f32], cols: usize) -> Matrix<'_> {
        Matrix {
            data,
            rows: data.len() / cols,
            cols,
        }
    }

    /// Straightforward reference: every score in f64, fully sorted by the same order.
    fn brute_force(q: &Matrix<'_>, c: &Matrix<'_>, metric: Metric) -> Vec<Vec<(f64, usize)>> {
        let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
        (0..q.rows)
            .map(|i| {
                let qi = &q.data[i * q.cols..(i + 1) * q.cols];
                let mut scored: Vec<(f64, usize)> = (0..c.rows)
                    .map(|j| {
                        let cj = &c.data[j * c.cols..(j + 1) * c.cols];
                        let dot: f64 = qi
                            .iter()
                            .zip(cj)
                            .map(|(a, b)| f64::from(*a) * f64::from(*b))
                            .sum();
                        let s = match metric {
                            Metric::Dot => dot,
                            Metric::Cosine if norm(qi) * norm(cj) == 0.0 => 0.0,
                            Metric::Cosine => dot / (norm(qi) * norm(cj)),
                        };
                        (s, j)
                    })
                    .collect();
                scored.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap().then(a.1.cmp(&b.1)));
                scored
            })
            .collect()
    }

    /// Small integers: dot products are exact in f32, so exact ties are common and real.
    fn small_integers(n: usize, seed: u64) -> Vec<f32> {
        let mut rng = crate::rng::Rng::new(seed, 0);
        (0..n).map(|_| rng.below(7) as f32 - 3.0).collect()
    }

    #[test]
    fn matches_brute_force_for_every_block_size() {
        let dim = 5;
        let k = 7;
        let q = small_integers(9 * dim, 1);
        let c = small_integers(40 * dim, 2);
        let (q, c) = (matrix(&q, dim), matrix(&c, dim));
        for metric in [Metric::Dot, Metric::Cosine] {
            let expected = brute_force(&q, &c, metric);
            for block in [1, 3, 16, 40, 1000] {
                let got = knn(q, c, k, metric, Some(block)).unwrap();
                for (i, want) in expected.iter().enumerate() {
                    let row = i * k..(i + 1) * k;
                    let ids: Vec<usize> =
                        got.ids[row.clone()].iter().map(|&x| x as usize).collect();
                    let want_ids: Vec<usize> = want[..k].iter().map(|&(_, j)| j).collect();
                    if metric == Metric::Dot {
                        assert_eq!(ids, want_ids, "block {block} query {i}");
                    }
                    // Cosine ties may be broken by f32 rounding: compare the scores instead.
                    for (slot, &s) in got.scores[row].iter().enumerate() {
                        assert!(
                            (f64::from(s) - want[slot].0).abs() < 1e-6,
                            "{metric:?} block {block} query {i}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn candidate_keys_order_by_score_then_index_and_round_trip() {
        let scores = [
            f32::MIN,
            -2.5,
            -1e-30,
            -0.0,
            0.0,
            1e-30,
            0.75,
            3.0,
            f32::MAX,
        ];
        let mut keys = Vec::new();
        for &s in &scores {
            for index in [0, 7, u32::MAX] {
                let c = Candidate::new(s, index);
                assert_eq!((c.score(), c.index()), (s + 0.0, index));
                keys.push(c);
            }
        }
        keys.sort();
        let order: Vec<(f32, u32)> = keys.iter().map(|c| (c.score(), c.index())).collect();
        let mut expected: Vec<(f32, u32)> = order.clone();
        expected.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap().then(a.1.cmp(&b.1)));
        assert_eq!(order, expected);
        assert_eq!(Candidate::new(-0.0, 1), Candidate::new(0.0, 1));
    }

    #[test]
    fn ties_come_out_in_ascending_index() {
        let c = [1.0, 0.0, 1.0, 0.0, 0.5, 0.0, 1.0, 0.0];
        let q = [1.0, 0.0];
        let got = knn(matrix(&q, 2), matrix(&c, 2), 4, Metric::Dot, Some(1)).unwrap();
        assert_eq!(got.ids, vec![0, 1, 3, 2]);
        assert_eq!(got.scores, vec![1.0, 1.0, 1.0, 0.5]);
    }

    #[test]
    fn zero_vectors_have_cosine_zero() {
        let c = [0.0, 0.0, 1.0, 0.0, -1.0, 0.0];
        let q = [0.0, 0.0, 2.0, 0.0];
        let got = knn(matrix(&q, 2), matrix(&c, 2), 3, Metric::Cosine, None).unwrap();
        assert_eq!(got.ids, vec![0, 1, 2, 1, 0, 2]);
        assert_eq!(got.scores, vec![0.0, 0.0, 0.0, 1.0, 0.0, -1.0]);
    }

    #[test]
    fn rejects_bad_arguments() {
        let c = [1.0, 0.0, 0.0, 1.0];
        let q = [1.0, 0.0];
        let err = |r: Result<Neighbours>| r.unwrap_err().argument;
        assert_eq!(
            err(knn(matrix(&q, 2), matrix(&c, 2), 0, Metric::Dot, None)),
            "k"
        );
        assert_eq!(
            err(knn(matrix(&q, 2), matrix(&c, 2), 3, Metric::Dot, None)),
            "k"
        );
        assert_eq!(
            err(knn(matrix(&q, 2), matrix(&c, 1), 1, Metric::Dot, None)),
            "corpus"
        );
        assert_eq!(
            err(knn(matrix(&[], 2), matrix(&c, 2), 1, Metric::Dot, None)),
            "queries"
        );
        assert_eq!(
            err(knn(matrix(&q, 2), matrix(&c, 2), 1, Metric::Dot, Some(0))),
            "block_size"
        );
        let nan = [f32::NAN, 0.0];
        assert_eq!(
            err(knn(matrix(&nan, 2), matrix(&c, 2), 1, Metric::Dot, None)),
            "queries"
        );
        let huge = [3e38, 3e38];
        assert_eq!(
            err(knn(
                matrix(&huge, 2),
                matrix(&huge, 2),
                1,
                Metric::Dot,
                None
            )),
            "queries"
        );
        assert_eq!(Metric::parse("l2").unwrap_err().argument, "metric");
    }
}
