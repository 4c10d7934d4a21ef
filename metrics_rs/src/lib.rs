//! metrics_rs: exact kNN, IR metrics and paired significance tests for mathembed.
//!
//! The pure functions live in [`knn`], [`metrics`] and [`stats`] and are tested
//! with plain `cargo test`; [`python`] is the thin pyo3 layer that converts
//! arrays and errors and releases the GIL around the work.

pub mod error;
pub mod knn;
pub mod metrics;
mod python;
mod rng;
pub mod stats;
