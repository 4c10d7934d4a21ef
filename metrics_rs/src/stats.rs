//! Paired significance tests on per-query scores of two systems.
//!
//! All tests are two-sided on the mean difference d = a - b:
//! - randomization: Fisher's sign-flip test; exact enumeration of all 2^n sign
//!   patterns when that is no more than `n_resamples`, else Monte Carlo with
//!   p = (hits + 1) / (n_resamples + 1);
//! - bootstrap: resamples of the centred differences, p as above;
//! - t: the paired Student t-test.
//!
//! The confidence interval of the mean difference is Student's for `t` and the
//! percentile bootstrap (same seed) for the other two.

use rayon::prelude::*;

use crate::error::{ensure, InvalidArgument, Result};
use crate::rng::Rng;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Randomization,
    Bootstrap,
    T,
}

impl Method {
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "randomization" => Ok(Self::Randomization),
            "bootstrap" => Ok(Self::Bootstrap),
            "t" => Ok(Self::T),
            other => Err(InvalidArgument::new(
                "method",
                format!("unknown method {other:?}; use \"randomization\", \"bootstrap\" or \"t\""),
            )),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairedTest {
    pub delta: f64,
    pub p_value: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

/// Resamples handled by one parallel chunk; each chunk has its own RNG stream,
/// so results do not depend on the number of threads.
const CHUNK: usize = 256;
/// Relative tolerance for "at least as extreme" comparisons of sums that are
/// mathematically equal but computed in a different order.
const TIE_TOLERANCE: f64 = 1e-12;

pub fn paired_test(
    a: &[f64],
    b: &[f64],
    method: Method,
    n_resamples: usize,
    seed: u64,
    confidence: f64,
) -> Result<PairedTest> {
    ensure(a.len() == b.len(), "b", || {
        format!(
            "has {} scores but a has {}; pass per-query scores of the same queries",
            b.len(),
            a.len()
        )
    })?;
    ensure(!a.is_empty(), "a", || "is empty".into())?;
    for (name, values) in [("a", a), ("b", b)] {
        let bad = values.iter().position(|x| !x.is_finite());
        ensure(bad.is_none(), name, || {
            format!("value at index {} is NaN or inf", bad.unwrap_or_default())
        })?;
    }
    ensure(n_resamples >= 1, "n_resamples", || {
        "must be at least 1".into()
    })?;
    ensure(confidence > 0.0 && confidence < 1.0, "confidence", || {
        format!("must be strictly between 0 and 1, got {confidence}")
    })?;
    if method == Method::T {
        ensure(a.len() >= 2, "a", || {
            "a t-test needs at least 2 paired scores".into()
        })?;
    }

    let diffs: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let n = diffs.len() as f64;
    let delta = diffs.iter().sum::<f64>() / n;
    let result = match method {
        Method::T => t_test(&diffs, delta, confidence),
        Method::Randomization => {
            let (ci_low, ci_high) = bootstrap_interval(&diffs, n_resamples, seed, confidence);
            PairedTest {
                delta,
                p_value: sign_flip_p(&diffs, n_resamples, seed),
                ci_low,
                ci_high,
            }
        }
        Method::Bootstrap => {
            let means = bootstrap_means(&diffs, n_resamples, seed);
            let observed = delta.abs() * (1.0 - TIE_TOLERANCE);
            let hits = means
                .iter()
                .filter(|&&m| (m - delta).abs() >= observed)
                .count();
            let (ci_low, ci_high) = percentile_interval(means, confidence);
            PairedTest {
                delta,
                p_value: (hits + 1) as f64 / (n_resamples + 1) as f64,
                ci_low,
                ci_high,
            }
        }
    };
    Ok(result)
}

fn sign_flip_p(diffs: &[f64], n_resamples: usize, seed: u64) -> f64 {
    let n = diffs.len();
    let observed = diffs.iter().sum::<f64>().abs() * (1.0 - TIE_TOLERANCE);
    let flipped_sum = |signs: u64, values: &[f64]| -> f64 {
        values
            .iter()
            .enumerate()
            .map(|(i, &d)| if signs >> (i % 64) & 1 == 1 { -d } else { d })
            .sum()
    };
    if n < 63 && (1u64 << n) <= n_resamples as u64 {
        let total = 1u64 << n;
        let hits = (0..total)
            .into_par_iter()
            .filter(|&signs| flipped_sum(signs, diffs).abs() >= observed)
            .count();
        return hits as f64 / total as f64;
    }
    let hits: usize = (0..n_resamples.div_ceil(CHUNK))
        .into_par_iter()
        .map(|chunk| {
            let mut rng = Rng::new(seed, chunk as u64);
            let count = CHUNK.min(n_resamples - chunk * CHUNK);
            (0..count)
                .filter(|_| {
                    let sum: f64 = diffs
                        .chunks(64)
                        .map(|block| flipped_sum(rng.next_u64(), block))
                        .sum();
                    sum.abs() >= observed
                })
                .count()
        })
        .sum();
    (hits + 1) as f64 / (n_resamples + 1) as f64
}

fn bootstrap_means(diffs: &[f64], n_resamples: usize, seed: u64) -> Vec<f64> {
    let n = diffs.len();
    // A stream offset keeps these draws independent of the sign-flip draws.
    let stream_base = 1u64 << 40;
    (0..n_resamples.div_ceil(CHUNK))
        .into_par_iter()
        .flat_map_iter(|chunk| {
            let mut rng = Rng::new(seed, stream_base + chunk as u64);
            let count = CHUNK.min(n_resamples - chunk * CHUNK);
            (0..count)
                .map(|_| (0..n).map(|_| diffs[rng.below(n)]).sum::<f64>() / n as f64)
                .collect::<Vec<_>>()
        })
        .collect()
}

fn bootstrap_interval(diffs: &[f64], n_resamples: usize, seed: u64, confidence: f64) -> (f64, f64) {
    percentile_interval(bootstrap_means(diffs, n_resamples, seed), confidence)
}

/// Percentiles (1-c)/2 and (1+c)/2 with linear interpolation, as numpy's default.
fn percentile_interval(mut values: Vec<f64>, confidence: f64) -> (f64, f64) {
    values.sort_unstable_by(f64::total_cmp);
    let quantile = |q: f64| {
        let position = q * (values.len() - 1) as f64;
        let (low, high) = (position.floor() as usize, position.ceil() as usize);
        values[low] + (values[high] - values[low]) * (position - low as f64)
    };
    let tail = (1.0 - confidence) / 2.0;
    (quantile(tail), quantile(1.0 - tail))
}

fn t_test(diffs: &[f64], delta: f64, confidence: f64) -> PairedTest {
    let n = diffs.len() as f64;
    let df = n - 1.0;
    let variance = diffs.iter().map(|d| (d - delta).powi(2)).sum::<f64>() / df;
    let standard_error = (variance / n).sqrt();
    if standard_error == 0.0 {
        // Every difference is the same: no doubt about the mean either way.
        let p_value = if delta == 0.0 { 1.0 } else { 0.0 };
        return PairedTest {
            delta,
            p_value,
            ci_low: delta,
            ci_high: delta,
        };
    }
    let t = delta / standard_error;
    let critical = t_quantile_two_sided(1.0 - confidence, df);
    PairedTest {
        delta,
        p_value: t_two_sided_p(t, df),
        ci_low: delta - critical * standard_error,
        ci_high: delta + critical * standard_error,
    }
}

/// P(|T| >= |t|) for Student's t with `df` degrees of freedom.
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    regularized_incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
}

/// The t > 0 with P(|T| >= t) = `alpha`, by bisection (the p-value falls monotonically in t).
fn t_quantile_two_sided(alpha: f64, df: f64) -> f64 {
    let (mut low, mut high) = (0.0f64, 1.0f64);
    while t_two_sided_p(high, df) > alpha {
        high *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (low + high);
        if t_two_sided_p(mid, df) > alpha {
            low = mid;
        } else {
            high = mid;
        }
        if high - low <= f64::EPSILON * high {
            break;
        }
    }
    0.5 * (low + high)
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9; relative error below 1e-15).
fn ln_gamma(x: f64) -> f64 {
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection keeps the series in its accurate range.
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = COEFFICIENTS[0];
    for (i, &c) in COEFFICIENTS.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// I_x(a, b), by the continued fraction (modified Lentz) on the side where it converges fast.
fn regularized_incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let log_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    if x < (a + 1.0) / (a + b + 2.0) {
        log_front.exp() * beta_continued_fraction(a, b, x) / a
    } else {
        1.0 - log_front.exp() * beta_continued_fraction(b, a, 1.0 - x) / b
    }
}

fn beta_continued_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let clamp = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / clamp(1.0 - (a + b) * x / (a + 1.0));
    let mut h = d;
    for m in 1..10_000 {
        let m = f64::from(m);
        let even = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        d = 1.0 / clamp(1.0 + even * d);
        c = clamp(1.0 + even / c);
        h *= d * c;
        let odd = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        d = 1.0 / clamp(1.0 + odd * d);
        c = clamp(1.0 + odd / c);
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < 1e-16 {
            break;
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_distribution_matches_known_values() {
        // Two-sided tail probabilities from standard tables.
        assert!((t_two_sided_p(2.228_138_851_986_274, 10.0) - 0.05).abs() < 1e-12);
        assert!((t_two_sided_p(1.959_963_984_540_054, 1e9) - 0.05).abs() < 1e-7);
        assert!((t_two_sided_p(12.706_204_736_174_7, 1.0) - 0.05).abs() < 1e-12);
        assert_eq!(t_two_sided_p(0.0, 5.0), 1.0);
        assert!((t_quantile_two_sided(0.05, 10.0) - 2.228_138_851_986_274).abs() < 1e-9);
    }

    #[test]
    fn ln_gamma_matches_factorials() {
        let mut factorial = 1.0f64;
        for n in 1..20 {
            assert!(
                (ln_gamma(f64::from(n)) - factorial.ln()).abs() < 1e-12,
                "n = {n}"
            );
            factorial *= f64::from(n);
        }
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-14);
    }

    #[test]
    fn exact_randomization_counts_every_sign_pattern() {
        // d = [1, 2, 3]: sums over the 8 patterns are ±6, ±4, ±2, ±0 -> |sum| >= 6 twice.
        let r = paired_test(
            &[1.0, 2.0, 3.0],
            &[0.0; 3],
            Method::Randomization,
            8,
            0,
            0.95,
        )
        .unwrap();
        assert_eq!(r.p_value, 2.0 / 8.0);
        assert_eq!(r.delta, 2.0);
    }

    #[test]
    fn resampling_is_reproducible_and_seed_dependent() {
        let a: Vec<f64> = (0..200).map(|i| f64::from(i % 7) / 7.0).collect();
        let b: Vec<f64> = (0..200).map(|i| f64::from(i % 5) / 5.0).collect();
        for method in [Method::Randomization, Method::Bootstrap] {
            let x = paired_test(&a, &b, method, 1000, 1, 0.95).unwrap();
            let y = paired_test(&a, &b, method, 1000, 1, 0.95).unwrap();
            let z = paired_test(&a, &b, method, 1000, 2, 0.95).unwrap();
            assert_eq!(x, y);
            assert_ne!(x, z);
            assert!(x.ci_low <= x.delta && x.delta <= x.ci_high);
        }
    }

    #[test]
    fn rejects_bad_arguments() {
        let arg = |r: Result<PairedTest>| r.unwrap_err().argument;
        assert_eq!(
            arg(paired_test(&[1.0], &[1.0, 2.0], Method::T, 10, 0, 0.95)),
            "b"
        );
        assert_eq!(arg(paired_test(&[], &[], Method::T, 10, 0, 0.95)), "a");
        assert_eq!(
            arg(paired_test(&[1.0], &[2.0], Method::T, 10, 0, 0.95)),
            "a"
        );
        assert_eq!(
            arg(paired_test(
                &[f64::NAN],
                &[2.0],
                Method::Bootstrap,
                10,
                0,
                0.95
            )),
            "a"
        );
        assert_eq!(
            arg(paired_test(&[1.0], &[2.0], Method::Bootstrap, 0, 0, 0.95)),
            "n_resamples"
        );
        assert_eq!(
            arg(paired_test(&[1.0], &[2.0], Method::Bootstrap, 10, 0, 1.0)),
            "confidence"
        );
        assert_eq!(Method::parse("wilcoxon").unwrap_err().argument, "method");
    }
}
