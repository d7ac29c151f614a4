//! Reading a sweep spec file (`docs/sweep.md`) into a [`Spec`].
//!
//! Everything is checked before a point runs: types, ranges, parameter
//! names, every `${name}` in the base scenario, every key path against the
//! base scenario, every metric against the metrics `hsched-report` computes.
//! The first problem found is an error naming the file, line, column and key.

use crate::error::{Source, SpecError};
use crate::metric::Metric;
use crate::spec::{Base, Design, ReadScenario, Spec, MAX_POINTS};
use crate::value::Decimal;
use hsched_core::Duration;
use hsched_scenario::tree::{self, Kind, Node};
use std::path::Path;

mod check;
mod params;
mod taskset;

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

/// Parses spec text. `file` names it in messages; `read` fetches the base
/// scenario a `scenario = "path"` names.
pub fn parse(text: &str, file: &str, read: ReadScenario<'_>) -> Result<Spec, SpecError> {
    let src = Source { file, text };
    // The sweep's errors carry no hint: the syntax error's help is dropped.
    let root = tree::parse(text).map_err(|e| src.error(&e.span, "", e.message))?;
    Reader { src: &src }.spec(&root, read)
}

pub(crate) struct Reader<'a> {
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
        for e in table.entries() {
            if !known.contains(&e.key.as_str()) {
                return Err(self.err(
                    &e.value,
                    &join(prefix, &e.key),
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
            for e in table.entries() {
                if section == "random" && e.key == "samples" {
                    continue;
                }
                let key = format!("{section}.{}", e.key);
                params.push(self.param(&e.key, &e.value, &key, design)?);
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
        // A duration's column is `NAME_ns`, which another parameter may be.
        for (i, p) in params.iter().enumerate() {
            if let Some(q) = params[..i].iter().find(|q| q.column() == p.column()) {
                return Err(self.err(
                    root.get(section).unwrap_or(root),
                    &format!("{section}.{}", p.name),
                    format!(
                        "its column `{}` is parameter `{}`'s too: rename one",
                        p.column(),
                        q.name
                    ),
                ));
            }
        }
        for m in &metrics {
            if let Some(p) = params
                .iter()
                .find(|p| p.name == m.column() || p.column() == m.column())
            {
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
                for e in entries {
                    t.insert(&e.key, value(&e.value)?);
                }
                toml_edit::Value::InlineTable(t)
            }
        })
    }
    fn table(node: &Node) -> Result<toml_edit::Table, String> {
        let mut t = toml_edit::Table::new();
        for e in node.entries() {
            t.insert(&e.key, item(&e.value)?);
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
    for e in node.entries() {
        doc.insert(&e.key, item(&e.value)?);
    }
    Ok(doc.to_string())
}
