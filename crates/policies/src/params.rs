//! Parameter declarations that several policies make the same way: one
//! kind and default for each, the description the policy's own (what a
//! quantum or a placement means differs from policy to policy).

use hsched_core::{Duration, ParamKind, ParamSpec, Value};

/// A duration of at least 1 ns (a quantum, a horizon), `default` when not given.
pub fn positive_duration(name: &'static str, default: Duration, doc: &'static str) -> ParamSpec {
    ParamSpec::new(
        name,
        ParamKind::Duration {
            min: Duration::from_nanos(1),
        },
        doc,
    )
    .with_default(Value::Duration(default))
}

/// `multiprocessor`: what the policy does on several VPs, "one" unless given.
pub fn multiprocessor(doc: &'static str) -> ParamSpec {
    ParamSpec::new("multiprocessor", ParamKind::Str, doc).with_default(Value::Str("one".into()))
}

/// `fit`: where partitioned placement puts a child, "first" unless given.
pub fn fit(doc: &'static str) -> ParamSpec {
    ParamSpec::new("fit", ParamKind::Str, doc).with_default(Value::Str("first".into()))
}

/// A string that may be left out: empty unless given (the policy's `doc`
/// says what empty means).
pub fn optional_str(name: &'static str, doc: &'static str) -> ParamSpec {
    ParamSpec::new(name, ParamKind::Str, doc).with_default(Value::Str(String::new()))
}
