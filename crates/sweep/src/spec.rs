//! The sweep spec file (`docs/sweep.md`): read, checked, and turned into a
//! [`Spec`] from which every point can be computed on its own.
//!
//! Everything is checked before a point runs: types, ranges, parameter
//! names, every `${name}` in the base scenario, every key path against the
//! base scenario, every metric against the metrics `hsched-report` computes.
//! The first problem found is an error naming the file, line, column and key.

use crate::edit::{self, KeyPath};
use crate::generator::{Horizon, PeriodDist, Placement, Scalar, Setting, TaskSet};
use crate::metric::Metric;
use crate::tree::{self, Kind, Node, Source, SpecError};
use crate::value::{Decimal, Value};
use hsched_core::Duration;
use std::path::Path;

/// More points than this are refused: a typo in a range, not a plan.
pub const MAX_POINTS: u64 = 1_000_000_000;

/// Column names the CSV uses itself; no parameter may take them.
pub const RESERVED: &[&str] = &["index", "seed", "replicate"];

/// A parsed, checked sweep spec.
#[derive(Clone, Debug)]
pub struct Spec {
    /// The spec file as given (for messages).
    pub file: String,
    /// The file name without extension: the default name of generated
    /// scenarios and of the output.
    pub name: String,
    pub description: String,
    /// The base seed: point `i`'s seed is derived from it and `i`.
    pub seed: u64,
    /// Points per parameter combination (grid) or per sample (random),
    /// each with its own seed.
    pub replicates: u64,
    pub design: Design,
    pub params: Vec<Param>,
    /// The base scenario (file or inline), if any.
    pub base: Option<Base>,
    /// The task-set generator, if any.
    pub taskset: Option<TaskSet>,
    /// The metric columns, in order.
    pub metrics: Vec<Metric>,
}

/// How parameter values are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Design {
    /// Every combination of the parameters' values (the first parameter
    /// varies slowest).
    Grid,
    /// `samples` independent draws of every parameter.
    Random { samples: u64 },
}

#[derive(Clone, Debug)]
pub struct Base {
    /// For messages: the scenario file as the spec names it, or
    /// `SPEC [scenario]` for an inline one.
    pub file: String,
    pub text: String,
}

#[derive(Clone, Debug)]
pub struct Param {
    pub name: String,
    pub domain: Domain,
    /// Key paths into the base scenario this parameter's value is written to.
    pub set: Vec<KeyPath>,
}

/// Where a parameter's values come from.
#[derive(Clone, Debug)]
pub enum Domain {
    /// Grid: these values, in order. Random: one of them, uniformly.
    List(Vec<Value>),
    /// Grid: `from, from + step, ...` up to `to` (exact decimals; integers
    /// when `from` and `step` are).
    Range {
        from: Decimal,
        step: Decimal,
        count: u64,
    },
    /// Grid: durations `from, from + step, ...` up to `to`, as nanoseconds.
    DurationRange { from: u64, step: u64, count: u64 },
    /// Random: uniform on `[lo, hi]`, rounded to `digits` decimals.
    Uniform { lo: f64, hi: f64, digits: u32 },
    /// Random: log-uniform on `[lo, hi]` (`lo > 0`), rounded to `digits`.
    LogUniform { lo: f64, hi: f64, digits: u32 },
    /// Random: an integer uniform on `[lo, hi]`.
    IntUniform { lo: i64, hi: i64 },
    /// Random: a duration uniform on `[lo, hi]`, as nanoseconds.
    DurationUniform { lo: u64, hi: u64 },
    /// Random: a duration log-uniform on `[lo, hi]` (`lo > 0`), as nanoseconds.
    DurationLogUniform { lo: u64, hi: u64 },
}

impl Domain {
    /// How many values a grid parameter takes.
    pub fn grid_len(&self) -> u64 {
        match self {
            Domain::List(v) => v.len() as u64,
            Domain::Range { count, .. } | Domain::DurationRange { count, .. } => *count,
            _ => 0,
        }
    }
}

/// Reads a spec file and the base scenario it names.
pub fn load(path: &Path) -> Result<Spec, SpecError> {
    let file = path.display().to_string();
    let text =
        hsched_scenario::input::read_text(path, "the sweep spec").map_err(|e| SpecError {
            file: file.clone(),
            at: None,
            key: String::new(),
            message: e,
        })?;
    let dir = path.parent().unwrap_or(Path::new(""));
    parse(&text, &file, &|rel: &str| {
        let p = dir.join(rel);
        hsched_scenario::input::read_text(&p, &format!("`{}`", p.display()))
            .map(|t| (p.display().to_string(), t))
    })
}

/// Reads a base scenario named by the spec: its path relative to the spec
/// -> (the name to show in messages, its text).
pub type ReadScenario<'a> = &'a dyn Fn(&str) -> Result<(String, String), String>;

/// Parses spec text. `file` names it in messages; `read` fetches the base
/// scenario a `scenario = "path"` names.
pub fn parse(text: &str, file: &str, read: ReadScenario<'_>) -> Result<Spec, SpecError> {
    let src = Source { file, text };
    let root = tree::parse(&src)?;
    Reader { src: &src }.spec(&root, read)
}

struct Reader<'a> {
    src: &'a Source<'a>,
}

const TOP_KEYS: &[&str] = &[
    "description",
    "seed",
    "replicates",
    "scenario",
    "metrics",
    "grid",
    "random",
    "taskset",
];

impl Reader<'_> {
    fn err(&self, node: &Node, key: &str, msg: impl Into<String>) -> SpecError {
        self.src.error(&node.span, key, msg)
    }

    fn expected(&self, node: &Node, key: &str, what: &str) -> SpecError {
        self.err(
            node,
            key,
            format!("expected {what}, found {}", node.type_name()),
        )
    }

    fn unknown_keys(&self, table: &Node, prefix: &str, known: &[&str]) -> Result<(), SpecError> {
        for (k, v) in table.entries() {
            if !known.contains(&k.as_str()) {
                return Err(self.err(
                    v,
                    &join(prefix, k),
                    format!("unknown key (expected one of: {})", known.join(", ")),
                ));
            }
        }
        Ok(())
    }

    fn str<'n>(&self, node: &'n Node, key: &str, what: &str) -> Result<&'n str, SpecError> {
        match &node.kind {
            Kind::Str(s) => Ok(s),
            _ => Err(self.expected(node, key, what)),
        }
    }

    fn uint(&self, node: &Node, key: &str, min: u64) -> Result<u64, SpecError> {
        match node.kind {
            Kind::Int(i) if i >= 0 && i as u64 >= min => Ok(i as u64),
            Kind::Int(i) => Err(self.err(
                node,
                key,
                format!("expected an integer >= {min}, found {i}"),
            )),
            _ => Err(self.expected(node, key, &format!("an integer >= {min}"))),
        }
    }

    fn decimal(&self, node: &Node, key: &str) -> Result<Decimal, SpecError> {
        let parsed = match &node.kind {
            Kind::Int(i) => Some(Decimal::from_int(*i)),
            Kind::Float(t) | Kind::Str(t) => Decimal::parse(t),
            _ => return Err(self.expected(node, key, "a number")),
        };
        parsed.ok_or_else(|| {
            self.err(
                node,
                key,
                "expected a number (e.g. 0.05, \"0.05\", 3), at most 18 decimals",
            )
        })
    }

    fn duration(&self, node: &Node, key: &str) -> Result<u64, SpecError> {
        match &node.kind {
            Kind::Int(i) if *i >= 0 => Ok(*i as u64),
            Kind::Str(s) => Duration::parse(s)
                .map(Duration::as_nanos)
                .map_err(|e| self.err(node, key, e)),
            _ => Err(self.expected(
                node,
                key,
                "a duration (a string with a unit, \"10ms\", or integer nanoseconds)",
            )),
        }
    }

    fn pair<'n>(&self, node: &'n Node, key: &str) -> Result<(&'n Node, &'n Node), SpecError> {
        match &node.kind {
            Kind::Array(a) if a.len() == 2 => Ok((&a[0], &a[1])),
            _ => Err(self.expected(node, key, "a pair [low, high]")),
        }
    }

    fn spec(&self, root: &Node, read: ReadScenario<'_>) -> Result<Spec, SpecError> {
        self.unknown_keys(root, "", TOP_KEYS)?;
        let file = self.src.file.to_string();
        let name = Path::new(&file)
            .file_stem()
            .map_or_else(|| "sweep".to_string(), |s| s.to_string_lossy().into_owned());
        let description = match root.get("description") {
            Some(n) => self.str(n, "description", "a string")?.to_string(),
            None => String::new(),
        };
        let seed = match root.get("seed") {
            Some(n) => self.uint(n, "seed", 0)?,
            None => 0,
        };
        let replicates = match root.get("replicates") {
            Some(n) => self.uint(n, "replicates", 1)?,
            None => 1,
        };

        let (design, table, section) = match (root.get("grid"), root.get("random")) {
            (Some(g), Some(r)) => {
                let later = if r.span.start > g.span.start { r } else { g };
                return Err(self.err(
                    later,
                    "",
                    "a spec has a [grid] or a [random] section, not both",
                ));
            }
            (Some(g), None) => (Design::Grid, Some(g), "grid"),
            (None, Some(r)) => {
                let samples = r.get("samples").ok_or_else(|| {
                    self.err(
                        r,
                        "random",
                        "missing key `samples` (how many points to draw)",
                    )
                })?;
                let samples = self.uint(samples, "random.samples", 1)?;
                (Design::Random { samples }, Some(r), "random")
            }
            (None, None) => (Design::Grid, None, "grid"),
        };
        let mut params = Vec::new();
        if let Some(table) = table {
            if !matches!(table.kind, Kind::Table(_)) {
                return Err(self.expected(table, section, "a table of parameters"));
            }
            for (pname, node) in table.entries() {
                if section == "random" && pname == "samples" {
                    continue;
                }
                let key = format!("{section}.{pname}");
                params.push(self.param(pname, node, &key, design)?);
            }
        }
        let count = match design {
            Design::Grid => params
                .iter()
                .try_fold(1u64, |acc, p| acc.checked_mul(p.domain.grid_len())),
            Design::Random { samples } => Some(samples),
        }
        .and_then(|c| c.checked_mul(replicates))
        .filter(|&c| c <= MAX_POINTS);
        if count.is_none() {
            return Err(self.err(
                table.unwrap_or(root),
                section,
                format!("more than {MAX_POINTS} points: narrow a range or raise a step"),
            ));
        }

        let base = match root.get("scenario") {
            None => None,
            Some(n) => Some(match &n.kind {
                Kind::Str(rel) => {
                    let (file, text) = read(rel).map_err(|e| self.err(n, "scenario", e))?;
                    Base { file, text }
                }
                Kind::Table(_) => Base {
                    file: format!("{} [scenario]", self.src.file),
                    text: inline_scenario(n).map_err(|e| self.err(n, "scenario", e))?,
                },
                _ => {
                    return Err(self.expected(
                        n,
                        "scenario",
                        "a path to a scenario file (relative to this spec) or a table",
                    ))
                }
            }),
        };
        let taskset = root
            .get("taskset")
            .map(|n| self.taskset(n, base.is_some()))
            .transpose()?;
        if base.is_none() && taskset.is_none() {
            return Err(self.err(
                root,
                "",
                "no scenario: give `scenario = \"FILE\"` (relative to this spec), a [scenario] table, or a [taskset] generator",
            ));
        }
        let metrics = match root.get("metrics") {
            None => crate::metric::DEFAULT
                .iter()
                .map(|m| Metric::parse(m).expect("the default metrics parse"))
                .collect(),
            Some(n) => {
                let Kind::Array(items) = &n.kind else {
                    return Err(self.expected(n, "metrics", "an array of metric names"));
                };
                if items.is_empty() {
                    return Err(self.err(n, "metrics", "expected at least one metric"));
                }
                let mut out: Vec<Metric> = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let key = format!("metrics[{i}]");
                    let text = self.str(item, &key, "a metric name")?;
                    let m = Metric::parse(text).map_err(|e| self.err(item, &key, e))?;
                    if out.iter().any(|o| o.column() == m.column()) {
                        return Err(self.err(item, &key, format!("`{text}` is listed twice")));
                    }
                    out.push(m);
                }
                out
            }
        };
        for m in &metrics {
            if let Some(p) = params.iter().find(|p| p.name == m.column()) {
                return Err(self.err(
                    root.get(section).unwrap_or(root),
                    &format!("{section}.{}", p.name),
                    "a parameter may not have the name of a metric column",
                ));
            }
        }

        let spec = Spec {
            file,
            name,
            description,
            seed,
            replicates,
            design,
            params,
            base,
            taskset,
            metrics,
        };
        self.check_uses(&spec, root, section)?;
        Ok(spec)
    }

    fn param(
        &self,
        name: &str,
        node: &Node,
        key: &str,
        design: Design,
    ) -> Result<Param, SpecError> {
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(self.err(
                node,
                key,
                "a parameter name is letters, digits and `_`, not starting with a digit",
            ));
        }
        if RESERVED.contains(&name) {
            return Err(self.err(
                node,
                key,
                format!("`{name}` is a column of its own; name the parameter otherwise"),
            ));
        }
        let (domain, set) =
            match &node.kind {
                Kind::Array(_) => (self.list(node, key)?, Vec::new()),
                Kind::Table(_) => {
                    let set = match node.get("set") {
                        None => Vec::new(),
                        Some(s) => self.key_paths(s, &format!("{key}.set"))?,
                    };
                    (self.domain(node, key, design)?, set)
                }
                _ => return Err(self.expected(
                    node,
                    key,
                    "a list of values or a table (`values`, `from`/`to`/`step`, or a distribution)",
                )),
            };
        if domain.grid_len() == 0 && design == Design::Grid {
            return Err(self.err(
                node,
                key,
                "a [grid] parameter is a list or a range; distributions belong in [random]",
            ));
        }
        Ok(Param {
            name: name.to_string(),
            domain,
            set,
        })
    }

    fn list(&self, node: &Node, key: &str) -> Result<Domain, SpecError> {
        let Kind::Array(items) = &node.kind else {
            return Err(self.expected(node, key, "a list of values"));
        };
        if items.is_empty() {
            return Err(self.err(node, key, "expected at least one value"));
        }
        let values = items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let k = format!("{key}[{i}]");
                Ok(match &item.kind {
                    Kind::Int(v) => Value::Int(*v),
                    Kind::Float(_) => Value::Decimal(self.decimal(item, &k)?),
                    Kind::Str(s) => Value::Text(s.clone()),
                    Kind::Bool(b) => Value::Text(b.to_string()),
                    _ => return Err(self.expected(item, &k, "an integer, number or string")),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Domain::List(values))
    }

    fn domain(&self, node: &Node, key: &str, design: Design) -> Result<Domain, SpecError> {
        const FORMS: &[&str] = &[
            "values",
            "from",
            "uniform",
            "log_uniform",
            "int_uniform",
            "choice",
        ];
        let known: &[&str] = &[
            "values",
            "from",
            "to",
            "step",
            "uniform",
            "log_uniform",
            "int_uniform",
            "choice",
            "digits",
            "set",
        ];
        self.unknown_keys(node, key, known)?;
        let forms: Vec<&str> = FORMS
            .iter()
            .copied()
            .filter(|f| node.get(f).is_some())
            .collect();
        let form = match forms.as_slice() {
            [one] => *one,
            [] => {
                return Err(self.err(
                    node,
                    key,
                    "expected one of `values`, `from`/`to`/`step` (grid) or `uniform`, `log_uniform`, `int_uniform`, `choice` (random)",
                ))
            }
            [a, b, ..] => {
                return Err(self.err(
                    node,
                    key,
                    format!("`{a}` and `{b}` are two ways of giving values: keep one"),
                ))
            }
        };
        let grid_only = matches!(form, "from");
        let random_only = matches!(form, "uniform" | "log_uniform" | "int_uniform" | "choice");
        if grid_only && design != Design::Grid {
            return Err(self.err(
                node,
                &format!("{key}.from"),
                "a range is a [grid] parameter; in [random] use `uniform`, `int_uniform` or `log_uniform`",
            ));
        }
        if random_only && design == Design::Grid {
            return Err(self.err(
                node,
                &format!("{key}.{form}"),
                "a distribution is a [random] parameter; in [grid] use `values` or `from`/`to`/`step`",
            ));
        }
        for (k, only) in [("to", "from"), ("step", "from"), ("digits", "uniform")] {
            if let Some(n) = node.get(k) {
                let fits = form == only || (k == "digits" && form == "log_uniform");
                if !fits {
                    return Err(self.err(
                        n,
                        &format!("{key}.{k}"),
                        format!("`{k}` goes with `{only}`"),
                    ));
                }
            }
        }
        let digits = match node.get("digits") {
            Some(n) => {
                let d = self.uint(n, &format!("{key}.digits"), 0)?;
                if d > 12 {
                    return Err(self.err(n, &format!("{key}.digits"), "at most 12 digits"));
                }
                d as u32
            }
            None => 6,
        };
        let sub = |k: &str| format!("{key}.{k}");
        match form {
            "values" | "choice" => self.list(node.get(form).expect("checked"), &sub(form)),
            "from" => {
                let (Some(from), Some(to), Some(step)) =
                    (node.get("from"), node.get("to"), node.get("step"))
                else {
                    return Err(self.err(node, key, "a range needs `from`, `to` and `step`"));
                };
                let is_duration = |n: &Node| match &n.kind {
                    Kind::Str(s) => {
                        s.trim().ends_with(|c: char| c.is_alphabetic())
                            && Duration::parse(s).is_ok()
                    }
                    _ => false,
                };
                if is_duration(from) || is_duration(to) || is_duration(step) {
                    let f = self.duration(from, &sub("from"))?;
                    let t = self.duration(to, &sub("to"))?;
                    let s = self.duration(step, &sub("step"))?;
                    if s == 0 {
                        return Err(self.err(step, &sub("step"), "expected a step > 0"));
                    }
                    if t < f {
                        return Err(self.err(to, &sub("to"), "expected `to` >= `from`"));
                    }
                    return Ok(Domain::DurationRange {
                        from: f,
                        step: s,
                        count: (t - f) / s + 1,
                    });
                }
                let f = self.decimal(from, &sub("from"))?;
                let t = self.decimal(to, &sub("to"))?;
                let s = self.decimal(step, &sub("step"))?;
                if !s.is_positive() {
                    return Err(self.err(step, &sub("step"), "expected a step > 0"));
                }
                if t < f {
                    return Err(self.err(to, &sub("to"), "expected `to` >= `from`"));
                }
                let count = f
                    .steps_to(t, s)
                    .filter(|&c| c <= MAX_POINTS)
                    .ok_or_else(|| {
                        self.err(
                            node,
                            key,
                            format!("more than {MAX_POINTS} values: raise the step"),
                        )
                    })?;
                Ok(Domain::Range {
                    from: f,
                    step: s,
                    count,
                })
            }
            "int_uniform" => {
                let n = node.get(form).expect("checked");
                let (lo, hi) = self.pair(n, &sub(form))?;
                let int = |x: &Node, k: &str| match x.kind {
                    Kind::Int(i) => Ok(i),
                    _ => Err(self.expected(x, k, "an integer")),
                };
                let (lo, hi) = (int(lo, &sub(form))?, int(hi, &sub(form))?);
                if hi < lo {
                    return Err(self.err(n, &sub(form), "expected [low, high] with low <= high"));
                }
                Ok(Domain::IntUniform { lo, hi })
            }
            _ => {
                let n = node.get(form).expect("checked");
                let (lo_n, hi_n) = self.pair(n, &sub(form))?;
                let log = form == "log_uniform";
                if matches!(lo_n.kind, Kind::Str(_))
                    && Duration::parse(self.str(lo_n, "", "")?).is_ok()
                {
                    let lo = self.duration(lo_n, &sub(form))?;
                    let hi = self.duration(hi_n, &sub(form))?;
                    if hi < lo || (log && lo == 0) {
                        return Err(self.err(
                            n,
                            &sub(form),
                            "expected [low, high] with low <= high (and low > 0 for log_uniform)",
                        ));
                    }
                    return Ok(if log {
                        Domain::DurationLogUniform { lo, hi }
                    } else {
                        Domain::DurationUniform { lo, hi }
                    });
                }
                let lo = self.decimal(lo_n, &sub(form))?.to_f64();
                let hi = self.decimal(hi_n, &sub(form))?.to_f64();
                if hi < lo || (log && lo <= 0.0) {
                    return Err(self.err(
                        n,
                        &sub(form),
                        "expected [low, high] with low <= high (and low > 0 for log_uniform)",
                    ));
                }
                Ok(if log {
                    Domain::LogUniform { lo, hi, digits }
                } else {
                    Domain::Uniform { lo, hi, digits }
                })
            }
        }
    }

    fn key_paths(&self, node: &Node, key: &str) -> Result<Vec<KeyPath>, SpecError> {
        let one = |n: &Node, k: &str| -> Result<KeyPath, SpecError> {
            let text = self.str(
                n,
                k,
                "a key path such as \"thread[0].program[0].periodic.run\"",
            )?;
            KeyPath::parse(text).map_err(|e| self.err(n, k, e))
        };
        match &node.kind {
            Kind::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, n)| one(n, &format!("{key}[{i}]")))
                .collect(),
            _ => Ok(vec![one(node, key)?]),
        }
    }

    fn taskset(&self, node: &Node, has_base: bool) -> Result<TaskSet, SpecError> {
        const KEYS: &[&str] = &[
            "tasks",
            "utilisation",
            "period",
            "granularity",
            "deadline",
            "policy",
            "params",
            "cpus",
            "parent",
            "attach",
            "horizon",
            "name",
        ];
        let k = |s: &str| format!("taskset.{s}");
        if !matches!(node.kind, Kind::Table(_)) {
            return Err(self.expected(node, "taskset", "a table"));
        }
        self.unknown_keys(node, "taskset", KEYS)?;
        let required = |key: &str| {
            node.get(key)
                .ok_or_else(|| self.err(node, "taskset", format!("missing key `{key}`")))
        };
        let tasks = {
            let n = required("tasks")?;
            match &n.kind {
                Kind::Str(s) => Setting::Param(self.reference(n, &k("tasks"), s)?),
                _ => Setting::Lit(self.uint(n, &k("tasks"), 1)?),
            }
        };
        let utilisation = {
            let n = required("utilisation")?;
            match &n.kind {
                Kind::Str(s) if s.contains("${") => {
                    Setting::Param(self.reference(n, &k("utilisation"), s)?)
                }
                _ => {
                    let d = self.decimal(n, &k("utilisation"))?;
                    if !d.is_positive() {
                        return Err(self.err(n, &k("utilisation"), "expected a utilisation > 0"));
                    }
                    Setting::Lit(d)
                }
            }
        };
        let period = {
            let n = required("period")?;
            let key = k("period");
            match &n.kind {
                Kind::Array(items) => {
                    if items.is_empty() {
                        return Err(self.err(n, &key, "expected at least one period"));
                    }
                    let ps = items
                        .iter()
                        .enumerate()
                        .map(|(i, p)| self.positive_duration(p, &format!("{key}[{i}]")))
                        .collect::<Result<Vec<_>, _>>()?;
                    PeriodDist::Choice(ps)
                }
                Kind::Table(_) => {
                    self.unknown_keys(n, &key, &["uniform", "log_uniform"])?;
                    let (form, pair) = match (n.get("uniform"), n.get("log_uniform")) {
                        (Some(p), None) => ("uniform", p),
                        (None, Some(p)) => ("log_uniform", p),
                        _ => {
                            return Err(self.err(
                                n,
                                &key,
                                "expected one of `uniform` or `log_uniform` = [low, high]",
                            ))
                        }
                    };
                    let pk = format!("{key}.{form}");
                    let (lo, hi) = self.pair(pair, &pk)?;
                    let (lo, hi) = (
                        self.positive_duration(lo, &pk)?,
                        self.positive_duration(hi, &pk)?,
                    );
                    if hi < lo {
                        return Err(self.err(pair, &pk, "expected [low, high] with low <= high"));
                    }
                    if form == "uniform" {
                        PeriodDist::Uniform(lo, hi)
                    } else {
                        PeriodDist::LogUniform(lo, hi)
                    }
                }
                _ => {
                    return Err(self.expected(
                        n,
                        &key,
                        "a list of periods or { uniform = [lo, hi] } / { log_uniform = [lo, hi] }",
                    ))
                }
            }
        };
        let granularity = match node.get("granularity") {
            Some(n) => self.positive_duration(n, &k("granularity"))?,
            None => 1,
        };
        let deadline = match node.get("deadline") {
            None => (Decimal::from_int(1), Decimal::from_int(1)),
            Some(n) => {
                let key = k("deadline");
                let bad = || {
                    self.err(
                        n,
                        &key,
                        "expected [low, high]: each task's deadline is a fraction of its period drawn uniformly from it, 0 < low <= high <= 1 (default [1, 1]: implicit deadlines)",
                    )
                };
                let (lo, hi) = self.pair(n, &key).map_err(|_| bad())?;
                let (lo, hi) = (self.decimal(lo, &key)?, self.decimal(hi, &key)?);
                if !lo.is_positive() || hi < lo || hi > Decimal::from_int(1) {
                    return Err(bad());
                }
                (lo, hi)
            }
        };
        let scalar_table = |n: &Node, key: &str| -> Result<Vec<(String, Scalar)>, SpecError> {
            if !matches!(n.kind, Kind::Table(_)) {
                return Err(self.expected(n, key, "a table"));
            }
            n.entries()
                .iter()
                .map(|(name, v)| {
                    let kk = format!("{key}.{name}");
                    let s = match &v.kind {
                        Kind::Str(s) => Scalar::Text(s.clone()),
                        Kind::Int(i) => Scalar::Int(*i),
                        Kind::Bool(b) => Scalar::Bool(*b),
                        _ => return Err(self.expected(v, &kk, "a string, integer or boolean")),
                    };
                    Ok((name.clone(), s))
                })
                .collect()
        };
        let own = ["policy", "params", "cpus"];
        let placement = if has_base {
            if let Some(key) = own.iter().find(|key| node.get(key).is_some()) {
                return Err(self.err(
                    node.get(key).expect("found"),
                    &k(key),
                    "with a base scenario the tasks join its hierarchy: name their scheduler with `parent` (default: the scenario's default scheduler)",
                ));
            }
            let parent = node
                .get("parent")
                .map(|n| {
                    self.str(n, &k("parent"), "a scheduler name")
                        .map(str::to_string)
                })
                .transpose()?;
            Placement::Under { parent }
        } else {
            if let Some(n) = node.get("parent") {
                return Err(self.err(
                    n,
                    &k("parent"),
                    "`parent` names a scheduler of a base scenario; without one, give `policy`",
                ));
            }
            let policy = {
                let n = required("policy")?;
                self.str(n, &k("policy"), "a policy name, e.g. \"fp\"")?
                    .to_string()
            };
            let params = node
                .get("params")
                .map(|n| scalar_table(n, &k("params")))
                .transpose()?
                .unwrap_or_default();
            let cpus = match node.get("cpus") {
                Some(n) => self.uint(n, &k("cpus"), 1)?,
                None => 1,
            };
            Placement::Own {
                policy,
                params,
                cpus,
            }
        };
        let attach = node
            .get("attach")
            .map(|n| scalar_table(n, &k("attach")))
            .transpose()?
            .unwrap_or_default();
        let horizon = match node.get("horizon") {
            None if has_base => Horizon::Base,
            None => Horizon::LongestPeriods(1),
            Some(n) => match &n.kind {
                Kind::Table(_) => {
                    self.unknown_keys(n, &k("horizon"), &["longest_periods"])?;
                    let lp = n.get("longest_periods").ok_or_else(|| {
                        self.err(
                            n,
                            &k("horizon"),
                            "expected a duration or { longest_periods = K }",
                        )
                    })?;
                    Horizon::LongestPeriods(self.uint(lp, &k("horizon.longest_periods"), 1)?)
                }
                _ => Horizon::Fixed(self.positive_duration(n, &k("horizon"))?),
            },
        };
        let name = match node.get("name") {
            Some(n) => {
                let s = self.str(n, &k("name"), "a thread name prefix")?;
                if s.is_empty() || s.contains('.') {
                    return Err(self.err(n, &k("name"), "expected a non-empty prefix without `.`"));
                }
                s.to_string()
            }
            None => "task".into(),
        };
        Ok(TaskSet {
            tasks,
            utilisation,
            period,
            granularity,
            deadline,
            placement,
            attach,
            horizon,
            name,
        })
    }

    fn positive_duration(&self, n: &Node, key: &str) -> Result<u64, SpecError> {
        let d = self.duration(n, key)?;
        if d == 0 {
            return Err(self.err(n, key, "expected a duration > 0"));
        }
        Ok(d)
    }

    /// `"${name}"`: a reference to a parameter, by name.
    fn reference(&self, n: &Node, key: &str, text: &str) -> Result<String, SpecError> {
        text.strip_prefix("${")
            .and_then(|r| r.strip_suffix('}'))
            .filter(|r| !r.contains(['$', '{', '}']))
            .map(|r| r.trim().to_string())
            .ok_or_else(|| {
                self.err(
                    n,
                    key,
                    format!(
                        "expected a number or a parameter reference \"${{name}}\", found `{text}`"
                    ),
                )
            })
    }

    /// Every parameter is used (set by key path, named in the base
    /// scenario, or referenced by the generator) and every name used is a
    /// parameter; every key path exists in the base scenario.
    fn check_uses(&self, spec: &Spec, root: &Node, section: &str) -> Result<(), SpecError> {
        let param_node = |name: &str| root.get(section).and_then(|t| t.get(name)).unwrap_or(root);
        let mut used: Vec<String> = Vec::new();
        if let Some(base) = &spec.base {
            for (at, name) in edit::placeholders(&base.text) {
                if spec.params.iter().all(|p| p.name != name) {
                    let src = Source {
                        file: &base.file,
                        text: &base.text,
                    };
                    return Err(src.error(
                        &(at..at),
                        "",
                        format!(
                            "`${{{name}}}` names no parameter of the sweep{}",
                            known(&spec.params)
                        ),
                    ));
                }
                used.push(name);
            }
        }
        if let Some(ts) = &spec.taskset {
            for (key, name) in ts.references() {
                if spec.params.iter().all(|p| p.name != name) {
                    // Point at the key itself (`attach.prio`), else the table.
                    let node = key
                        .split('.')
                        .try_fold(root.get("taskset").unwrap_or(root), |n, k| n.get(k))
                        .or(root.get("taskset"))
                        .unwrap_or(root);
                    return Err(self.err(
                        node,
                        &format!("taskset.{key}"),
                        format!(
                            "`${{{name}}}` names no parameter of the sweep{}",
                            known(&spec.params)
                        ),
                    ));
                }
                used.push(name);
            }
        }
        for p in &spec.params {
            if !p.set.is_empty() {
                if spec.base.is_none() {
                    return Err(self.err(
                        param_node(&p.name),
                        &format!("{section}.{}.set", p.name),
                        "`set` writes into the base scenario, and there is none (`scenario = ...`)",
                    ));
                }
                continue;
            }
            if !used.contains(&p.name) {
                return Err(self.err(
                    param_node(&p.name),
                    &format!("{section}.{}", p.name),
                    format!(
                        "parameter `{0}` changes nothing: give it `set = \"key.path\"`, write `${{{0}}}` in the base scenario, or use it in [taskset]",
                        p.name
                    ),
                ));
            }
        }
        // Key paths are checked on the base scenario with the first point's
        // values; a path that exists there exists at every point unless a
        // placeholder changes the document's shape.
        if let Some(base) = &spec.base {
            if spec.params.iter().any(|p| !p.set.is_empty()) {
                let first = crate::points::values_of(spec, 0);
                let text =
                    edit::substitute(&base.text, &spec.params, &first).map_err(|e| SpecError {
                        file: base.file.clone(),
                        at: None,
                        key: String::new(),
                        message: e,
                    })?;
                let mut doc: toml_edit::DocumentMut =
                    text.parse().map_err(|e: toml_edit::TomlError| SpecError {
                        file: base.file.clone(),
                        at: None,
                        key: String::new(),
                        message: format!(
                            "invalid TOML (with the first point's values): {}",
                            e.message().trim()
                        ),
                    })?;
                for (p, v) in spec.params.iter().zip(&first) {
                    for (i, path) in p.set.iter().enumerate() {
                        edit::set(&mut doc, path, v).map_err(|e| {
                            let node = param_node(&p.name).get("set").unwrap_or(root);
                            let key = if p.set.len() == 1 {
                                format!("{section}.{}.set", p.name)
                            } else {
                                format!("{section}.{}.set[{i}]", p.name)
                            };
                            self.err(node, &key, format!("{e} in {}", base.file))
                        })?;
                    }
                }
            }
        }
        Ok(())
    }
}

fn known(params: &[Param]) -> String {
    if params.is_empty() {
        " (it has none)".into()
    } else {
        let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
        format!(" (parameters: {})", names.join(", "))
    }
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

/// An inline `[scenario]` table as scenario text of its own, its keys
/// moved up one level (comments are not kept; `{ ... }` stays inline and
/// `[table]`s stay tables).
fn inline_scenario(node: &Node) -> Result<String, String> {
    fn value(node: &Node) -> Result<toml_edit::Value, String> {
        Ok(match &node.kind {
            Kind::Str(s) => s.as_str().into(),
            Kind::Int(i) => (*i).into(),
            Kind::Bool(b) => (*b).into(),
            Kind::Float(t) => t
                .replace('_', "")
                .parse::<f64>()
                .map_err(|_| format!("float `{t}`"))?
                .into(),
            Kind::Datetime => return Err("a date-time has no place in a scenario".into()),
            Kind::Array(items) => {
                toml_edit::Value::Array(items.iter().map(value).collect::<Result<_, _>>()?)
            }
            Kind::Table(entries) => {
                let mut t = toml_edit::InlineTable::new();
                for (k, v) in entries {
                    t.insert(k, value(v)?);
                }
                toml_edit::Value::InlineTable(t)
            }
        })
    }
    fn table(node: &Node) -> Result<toml_edit::Table, String> {
        let mut t = toml_edit::Table::new();
        for (k, v) in node.entries() {
            t.insert(k, item(v)?);
        }
        Ok(t)
    }
    fn item(node: &Node) -> Result<toml_edit::Item, String> {
        Ok(match &node.kind {
            Kind::Table(_) if !node.inline => toml_edit::Item::Table(table(node)?),
            Kind::Array(items) if !node.inline => {
                let mut a = toml_edit::ArrayOfTables::new();
                for i in items {
                    a.push(table(i)?);
                }
                toml_edit::Item::ArrayOfTables(a)
            }
            _ => toml_edit::Item::Value(value(node)?),
        })
    }
    let mut doc = toml_edit::DocumentMut::new();
    for (k, v) in node.entries() {
        doc.insert(k, item(v)?);
    }
    Ok(doc.to_string())
}
