//! A spec's parameters: their names, value domains (`[grid]` and
//! `[random]`) and the key paths they set.

use super::Reader;
use crate::edit::KeyPath;
use crate::error::SpecError;
use crate::spec::{Design, Domain, Param, MAX_POINTS, RESERVED};
use crate::value::Value;
use hsched_core::Duration;
use hsched_scenario::tree::{Kind, Node};

impl Reader<'_> {
    pub(super) fn param(
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

    pub(super) fn list(&self, node: &Node, key: &str) -> Result<Domain, SpecError> {
        let Kind::Array(items) = &node.kind else {
            return Err(self.expected(node, key, "a list of values"));
        };
        if items.is_empty() {
            return Err(self.err(node, key, "expected at least one value"));
        }
        // Durations with a unit are durations, in integer nanoseconds as
        // every duration of the file; a list that mixes them with other
        // values is a list of texts.
        if items.iter().all(has_unit) {
            let ns = items
                .iter()
                .enumerate()
                .map(|(i, item)| self.duration(item, &format!("{key}[{i}]")))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Domain::Durations(ns));
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

    pub(super) fn domain(
        &self,
        node: &Node,
        key: &str,
        design: Design,
    ) -> Result<Domain, SpecError> {
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
                if has_unit(from) || has_unit(to) || has_unit(step) {
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

    pub(super) fn key_paths(&self, node: &Node, key: &str) -> Result<Vec<KeyPath>, SpecError> {
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
}

/// A string that is a duration with a unit (`"5ms"`, not `"5"` or `"0.5"`).
fn has_unit(n: &Node) -> bool {
    match &n.kind {
        Kind::Str(s) => {
            s.trim().ends_with(|c: char| c.is_alphabetic()) && Duration::parse(s).is_ok()
        }
        _ => false,
    }
}
