//! Reading a scheduler's or a child's parameters defensively: a scenario
//! built in code may leave out a parameter the file parser would have
//! defaulted, or give another type.

use hsched_core::{Duration, Params, Value};

/// An integer parameter, `default` when absent.
pub(crate) fn int_param(params: &Params, key: &str, default: i64) -> Result<i64, String> {
    match params.get(key) {
        None => Ok(default),
        Some(Value::Int(i)) => Ok(*i),
        Some(v) => Err(format!("`{key}` = {v}: expected an integer")),
    }
}

/// A duration parameter (a duration, integer nanoseconds, or text such as
/// "10ms"), `default` when absent.
pub(crate) fn duration_param(
    params: &Params,
    key: &str,
    default: Option<Duration>,
) -> Result<Option<Duration>, String> {
    match params.get(key) {
        None => Ok(default),
        Some(Value::Duration(d)) => Ok(Some(*d)),
        Some(Value::Int(i)) if *i >= 0 => Ok(Some(Duration(*i as u64))),
        Some(Value::Str(s)) => Duration::parse(s)
            .map(Some)
            .map_err(|e| format!("`{key}` = {s:?}: {e}")),
        Some(v) => Err(format!("`{key}` = {v}: expected a duration")),
    }
}

/// A string parameter, `None` when absent.
pub(crate) fn str_param<'p>(params: &'p Params, key: &str) -> Result<Option<&'p str>, String> {
    match params.get(key) {
        None => Ok(None),
        Some(Value::Str(s)) => Ok(Some(s)),
        Some(v) => Err(format!("`{key}` = {v}: expected a string")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_read_defensively() {
        let p = Params::new()
            .with("q", Value::Str("10ms".into()))
            .with("n", Value::Int(3))
            .with("b", Value::Bool(true));
        assert_eq!(
            duration_param(&p, "q", None),
            Ok(Some(Duration::from_millis(10)))
        );
        assert_eq!(duration_param(&p, "n", None), Ok(Some(Duration(3))));
        assert!(duration_param(&p, "b", None).is_err());
        assert_eq!(int_param(&p, "n", 0), Ok(3));
        assert_eq!(int_param(&p, "absent", 7), Ok(7));
        assert!(int_param(&p, "q", 0).is_err());
        assert_eq!(str_param(&p, "q"), Ok(Some("10ms")));
    }
}
