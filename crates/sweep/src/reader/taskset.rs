//! A spec's `[taskset]` table: the generated task set's size,
//! utilisation, periods and placement.

use super::Reader;
use crate::error::SpecError;
use crate::generator::{Horizon, PeriodDist, Placement, Scalar, Setting, TaskSet};
use crate::value::Decimal;
use hsched_scenario::tree::{Kind, Node};

impl Reader<'_> {
    pub(super) fn taskset(&self, node: &Node, has_base: bool) -> Result<TaskSet, SpecError> {
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
                .map(|e| {
                    let (name, v) = (&e.key, &e.value);
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

    pub(super) fn positive_duration(&self, n: &Node, key: &str) -> Result<u64, SpecError> {
        let d = self.duration(n, key)?;
        if d == 0 {
            return Err(self.err(n, key, "expected a duration > 0"));
        }
        Ok(d)
    }

    /// `"${name}"`: a reference to a parameter, by name.
    pub(super) fn reference(&self, n: &Node, key: &str, text: &str) -> Result<String, SpecError> {
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
}
