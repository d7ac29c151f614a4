//! The top-level keys of a scenario file: what `build` accepts at the top,
//! and what `tree` and `hierarchy` recognise when one is written nested by
//! mistake (a missing `[` or a table under the wrong header).

pub(crate) const TOP_KEYS: &[&str] = &[
    "name",
    "description",
    "horizon",
    "seed",
    "default",
    "machine",
    "scheduler",
    "thread",
    "script",
    "plugins",
    "domain",
    "mutex",
    "interrupt",
];
