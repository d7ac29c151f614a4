//! How `hsched bench` and the timing reproductions read repeated
//! measurements on a shared machine: the least disturbed one.

/// Element-wise best of several repetitions of a series.
pub(crate) fn best_series(runs: &[Vec<f64>]) -> Vec<f64> {
    let n = runs.iter().map(Vec::len).min().unwrap_or(0);
    (0..n)
        .map(|i| best(&runs.iter().map(|r| r[i]).collect::<Vec<_>>()))
        .collect()
}

/// The least disturbed of several repetitions: on a shared machine noise
/// only ever adds time.
pub(crate) fn best(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}
