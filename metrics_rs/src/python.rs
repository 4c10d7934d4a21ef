//! The `metrics_rs._metrics_rs` extension module: argument conversion, error
//! mapping and GIL release around the pure functions. No logic lives here.

use std::borrow::Cow;
use std::panic::{catch_unwind, AssertUnwindSafe};

use numpy::{
    AllowTypeChange, IntoPyArray, PyArray2, PyArrayLike1, PyArrayMethods, PyReadonlyArray2,
    PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyMapping};

use crate::error::InvalidArgument;
use crate::knn::{Matrix, Metric};
use crate::metrics::{NoRelevant, Qrels, Ranking};
use crate::stats::Method;

impl From<InvalidArgument> for PyErr {
    fn from(err: InvalidArgument) -> Self {
        PyValueError::new_err(err.to_string())
    }
}

/// Runs `work` without the GIL; a panic inside becomes a `RuntimeError`, never an abort.
fn run_detached<T: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> Result<T, InvalidArgument> + Send,
) -> PyResult<T> {
    let outcome = py.detach(|| catch_unwind(AssertUnwindSafe(work)));
    match outcome {
        Ok(result) => result.map_err(PyErr::from),
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(PyRuntimeError::new_err(format!(
                "internal error in metrics_rs (please report it): {message}"
            )))
        }
    }
}

/// Describes a wrongly typed argument: its type, or its dimensions and dtype for an array.
fn describe(value: &Bound<'_, PyAny>) -> String {
    match value.cast::<PyUntypedArray>() {
        Ok(array) => format!("a {}-D {} array", array.ndim(), array.dtype()),
        Err(_) => value
            .get_type()
            .name()
            .map_or_else(|_| "?".to_string(), |n| n.to_string()),
    }
}

/// `(ids, scores)` as returned by `knn`.
type NeighbourArrays<'py> = (Bound<'py, PyArray2<i64>>, Bound<'py, PyArray2<f32>>);

/// A 2-D float32 array, borrowed without a copy when C-contiguous.
fn embeddings<'py>(
    name: &'static str,
    value: &Bound<'py, PyAny>,
) -> PyResult<PyReadonlyArray2<'py, f32>> {
    let array = value.cast::<PyArray2<f32>>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{name}: expected a 2-D float32 numpy array, got {}; convert with \
             np.ascontiguousarray({name}, dtype=np.float32) (float64 is refused rather than \
             silently rounded)",
            describe(value)
        ))
    })?;
    Ok(array.readonly())
}

/// The array's values in row-major order: borrowed when C-contiguous, else one copy
/// (strided or Fortran-ordered input, whose memory order is not row-major).
fn row_major<'a, T: numpy::Element + Copy>(array: &'a PyReadonlyArray2<'_, T>) -> Cow<'a, [T]> {
    match array.as_slice() {
        Ok(slice) if array.is_c_contiguous() => Cow::Borrowed(slice),
        _ => Cow::Owned(array.as_array().iter().copied().collect()),
    }
}

fn positive(name: &'static str, value: i64) -> Result<usize, InvalidArgument> {
    usize::try_from(value)
        .ok()
        .filter(|&v| v >= 1)
        .ok_or_else(|| InvalidArgument::new(name, format!("must be at least 1, got {value}")))
}

#[pyfunction]
#[pyo3(signature = (queries, corpus, k, *, metric = "cosine", block_size = None))]
fn knn<'py>(
    py: Python<'py>,
    queries: &Bound<'py, PyAny>,
    corpus: &Bound<'py, PyAny>,
    k: i64,
    metric: &str,
    block_size: Option<i64>,
) -> PyResult<NeighbourArrays<'py>> {
    let metric = Metric::parse(metric)?;
    let block_size = block_size.map(|b| positive("block_size", b)).transpose()?;
    let k_checked = usize::try_from(k).unwrap_or(0);
    let (queries, corpus) = (
        embeddings("queries", queries)?,
        embeddings("corpus", corpus)?,
    );
    let (q_shape, c_shape) = (queries.shape().to_vec(), corpus.shape().to_vec());
    let (q_data, c_data) = (row_major(&queries), row_major(&corpus));
    let found = run_detached(py, || {
        let q = Matrix {
            data: &q_data,
            rows: q_shape[0],
            cols: q_shape[1],
        };
        let c = Matrix {
            data: &c_data,
            rows: c_shape[0],
            cols: c_shape[1],
        };
        if k < 1 {
            return Err(InvalidArgument::new(
                "k",
                format!("must be at least 1, got {k}"),
            ));
        }
        crate::knn::knn(q, c, k_checked, metric, block_size)
    })?;
    let rows = found.ids.len() / found.k;
    let ids = found.ids.into_pyarray(py).reshape([rows, found.k])?;
    let scores = found.scores.into_pyarray(py).reshape([rows, found.k])?;
    Ok((ids, scores))
}

/// One mapping per query row: document id -> integer grade.
fn judgements(qrels: &Bound<'_, PyAny>) -> PyResult<Qrels> {
    let type_error = |what: String| {
        PyTypeError::new_err(format!(
            "qrels: {what}; expected a sequence with one mapping {{doc_id: grade}} (int -> int) \
             per query row"
        ))
    };
    let mut all = Qrels::default();
    let mut judged = Vec::new();
    for (row, item) in qrels.try_iter()?.enumerate() {
        let item = item?;
        judged.clear();
        if let Ok(dict) = item.cast::<PyDict>() {
            for (doc, grade) in dict.iter() {
                judged.push(grade_pair(row, &doc, &grade).map_err(type_error)?);
            }
        } else if let Ok(mapping) = item.cast::<PyMapping>() {
            for pair in mapping.items()?.iter() {
                let (doc, grade) = pair.extract::<(Bound<'_, PyAny>, Bound<'_, PyAny>)>()?;
                judged.push(grade_pair(row, &doc, &grade).map_err(type_error)?);
            }
        } else {
            return Err(type_error(format!("entry {row} is {}", describe(&item))));
        }
        all.push_query(judged.drain(..));
    }
    Ok(all)
}

fn grade_pair(
    row: usize,
    doc: &Bound<'_, PyAny>,
    grade: &Bound<'_, PyAny>,
) -> Result<(i64, i64), String> {
    let doc = doc
        .extract::<i64>()
        .map_err(|_| format!("entry {row} has a non-integer document id {doc}"))?;
    let grade = grade
        .extract::<i64>()
        .map_err(|_| format!("entry {row} has a non-integer grade {grade} for document {doc}"))?;
    Ok((doc, grade))
}

#[pyfunction]
#[pyo3(signature = (ranked_ids, qrels, ks, *, per_query = false, no_relevant = "error", n_docs = None))]
fn evaluate<'py>(
    py: Python<'py>,
    ranked_ids: &Bound<'py, PyAny>,
    qrels: &Bound<'py, PyAny>,
    ks: Vec<i64>,
    per_query: bool,
    no_relevant: &str,
    n_docs: Option<i64>,
) -> PyResult<Bound<'py, PyDict>> {
    let policy = NoRelevant::parse(no_relevant)?;
    let ranked = ranked_ids
        .cast::<PyArray2<i64>>()
        .map_err(|_| {
            PyTypeError::new_err(format!(
                "ranked_ids: expected a 2-D int64 numpy array (as returned by knn), got {}; \
                 convert with np.asarray(ranked_ids, dtype=np.int64)",
                describe(ranked_ids)
            ))
        })?
        .readonly();
    let shape = ranked.shape().to_vec();
    let judged = judgements(qrels)?;
    let ids = row_major(&ranked);
    let result = run_detached(py, || {
        let ranking = Ranking {
            ids: &ids,
            n_queries: shape[0],
            width: shape[1],
        };
        crate::metrics::evaluate(ranking, judged, &ks, policy, n_docs)
    })?;

    let means = PyDict::new(py);
    for (name, mean) in result.names.iter().zip(&result.means) {
        means.set_item(name, mean)?;
    }
    let out = PyDict::new(py);
    out.set_item("means", means)?;
    out.set_item("n_queries", result.n_evaluated)?;
    out.set_item("n_skipped", result.n_skipped)?;
    if per_query {
        let arrays = PyDict::new(py);
        for (name, values) in result.names.into_iter().zip(result.per_query) {
            arrays.set_item(name, values.into_pyarray(py))?;
        }
        out.set_item("per_query", arrays)?;
    }
    Ok(out)
}

/// A 1-D sequence of per-query scores as f64 (lists and any numeric dtype accepted).
fn scores(name: &'static str, value: &Bound<'_, PyAny>) -> PyResult<Vec<f64>> {
    let array = value
        .extract::<PyArrayLike1<'_, f64, AllowTypeChange>>()
        .map_err(|_| {
            PyTypeError::new_err(format!(
                "{name}: expected a 1-D sequence of numbers (one score per query), got {}",
                describe(value)
            ))
        })?;
    Ok(array.as_array().to_vec())
}

#[pyfunction]
#[pyo3(signature = (a, b, *, method = "randomization", n_resamples = 10000, seed = 0, confidence = 0.95))]
fn paired_test<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    method: &str,
    n_resamples: i64,
    seed: u64,
    confidence: f64,
) -> PyResult<Bound<'py, PyDict>> {
    let method = Method::parse(method)?;
    let n_resamples = positive("n_resamples", n_resamples)?;
    let (a, b) = (scores("a", a)?, scores("b", b)?);
    let result = run_detached(py, || {
        crate::stats::paired_test(&a, &b, method, n_resamples, seed, confidence)
    })?;
    let out = PyDict::new(py);
    out.set_item("delta", result.delta)?;
    out.set_item("p_value", result.p_value)?;
    out.set_item("ci_low", result.ci_low)?;
    out.set_item("ci_high", result.ci_high)?;
    Ok(out)
}

/// Deliberately panics in Rust; lets the tests prove a panic reaches Python as an exception.
#[pyfunction]
fn _panic(py: Python<'_>, message: String) -> PyResult<()> {
    run_detached(py, || -> Result<(), InvalidArgument> {
        panic!("{message}")
    })
}

#[pymodule]
fn _metrics_rs(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add_function(wrap_pyfunction!(knn, module)?)?;
    module.add_function(wrap_pyfunction!(evaluate, module)?)?;
    module.add_function(wrap_pyfunction!(paired_test, module)?)?;
    module.add_function(wrap_pyfunction!(_panic, module)?)?;
    Ok(())
}
