//! SimSo configurations (the XML files SimSo's GUI saves and its
//! `Configuration(filename)` reads) turned into scenario TOML:
//! `hsched import simso FILE.xml > scenario.toml`.
//!
//! What maps, and how:
//! - `<simulation duration cycles_per_ms etm>`: the horizon is `duration`
//!   cycles at `cycles_per_ms` (SimSo's defaults, 50000 and 1000000, when
//!   absent); `etm="wcet"` (the default) runs every job for its `WCET`;
//!   `etm="acet"` draws each job's time from a normal distribution of mean
//!   `ACET` and deviation `et_stddev`, capped at `WCET` as SimSo does (with
//!   hsched's own seeded generator, so the draws differ from SimSo's).
//! - `<sched class=...>` (or `className`): `EDF_mono` and `EDF` become the
//!   `edf` policy, `RM_mono` and `RM` `rm`, `FP` `fp` with each task's
//!   `priority` field as `prio`. The `_mono` schedulers use one processor
//!   (SimSo runs every task on the first), the others are global on all of
//!   them. Any other scheduler is refused, naming it.
//! - `<processors>`: how many CPUs; the context save and load overheads
//!   (cycles) become `context_switch` (hsched charges it on every switch
//!   between threads, SimSo on every save and every load: a note says so).
//! - `<task>`: `Periodic` tasks become a thread with one `periodic`
//!   operation (`period`, `deadline`, `offset` = `activationDate`), attached
//!   with `period`, `deadline` and `wcet` (what `edf` and `rm` schedule and
//!   analyse by). `Sporadic` tasks (`list_activation_dates`) become a
//!   worker running `sporadic` jobs and a releaser thread that sleeps to
//!   each date and signals it.
//!
//! Times are milliseconds written as decimals; they are read exactly (no
//! floating point) into integer nanoseconds, and a value that is not a whole
//! number of nanoseconds is an error. What has no equivalent is refused (an
//! error naming the line and element; every one is listed, not only the
//! first): `APeriodic` tasks and `followed_by` chains, processor speeds
//! other than 1, the cache execution-time models, the schedulers not named
//! above. What hsched models differently is imported with a note (printed
//! by the CLI on stderr and written as a comment at the top of the
//! scenario), never dropped silently: SimSo aborts a job at its deadline
//! when `abort_on_miss` is yes (its default), hsched lets it finish;
//! scheduler overheads; migration overheads; values SimSo truncates to
//! whole cycles.

use super::{toml_duration, toml_string};
use std::collections::BTreeSet;
use std::fmt;

/// A scenario made from a SimSo file: the TOML text and what was imported
/// with a difference (each note also opens the TOML as a comment).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Imported {
    pub toml: String,
    pub notes: Vec<String>,
}

/// One thing in the file that is wrong or cannot be imported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// 1-based line and column of the element (or attribute).
    pub line: u32,
    pub column: u32,
    /// The element, as `<task name="T1">`, and the attribute if any.
    pub element: String,
    pub message: String,
}

/// Why a file could not be imported: every problem found, with its place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportError {
    pub file: String,
    pub problems: Vec<Problem>,
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(
                f,
                "{}:{}:{}: {}: {}",
                self.file, p.line, p.column, p.element, p.message
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for ImportError {}

/// SimSo schedulers that map to a policy: (class name, policy, uses one CPU).
const SCHEDULERS: &[(&str, &str, bool)] = &[
    ("EDF_mono", "edf", true),
    ("EDF", "edf", false),
    ("RM_mono", "rm", true),
    ("RM", "rm", false),
    ("FP", "fp", false),
];

/// SimSo's defaults when `<simulation>` leaves them out.
const DEFAULT_DURATION_CYCLES: u64 = 50_000;
const DEFAULT_CYCLES_PER_MS: u64 = 1_000_000;
const NS_PER_MS: u128 = 1_000_000;
/// `fp`'s priority range.
const PRIO_LIMIT: i64 = 1_000_000;

/// Imports SimSo XML `text`; `file_name` names it in errors, notes and the
/// scenario's description.
pub fn import(text: &str, file_name: &str) -> Result<Imported, ImportError> {
    let fail = |problems| ImportError {
        file: file_name.to_string(),
        problems,
    };
    let doc = roxmltree::Document::parse(text).map_err(|e| {
        let pos = e.pos();
        fail(vec![Problem {
            line: pos.row,
            column: pos.col,
            element: "XML".into(),
            message: e.to_string(),
        }])
    })?;
    let mut r = Reader {
        doc: &doc,
        problems: Vec::new(),
        notes: Vec::new(),
    };
    let model = r.model();
    match model {
        Some(m) if r.problems.is_empty() => Ok(write(&m, file_name, r.notes)),
        _ => {
            if r.problems.is_empty() {
                r.problem(doc.root_element(), None, "nothing could be imported".into());
            }
            Err(fail(r.problems))
        }
    }
}

/// What the file says, in nanoseconds.
#[derive(Debug)]
struct Model {
    horizon_ns: u64,
    cpus: u32,
    policy: &'static str,
    class: String,
    context_switch_ns: u64,
    run: RunModel,
    tasks: Vec<Task>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RunModel {
    Wcet,
    Acet,
}

#[derive(Debug)]
struct Task {
    name: String,
    kind: TaskKind,
    deadline_ns: u64,
    wcet_ns: u64,
    acet_ns: u64,
    stddev_ns: u64,
    priority: i64,
}

#[derive(Debug)]
enum TaskKind {
    Periodic { period_ns: u64, offset_ns: u64 },
    Sporadic { dates_ns: Vec<u64> },
}

struct Reader<'a, 'input> {
    doc: &'a roxmltree::Document<'input>,
    problems: Vec<Problem>,
    notes: Vec<String>,
}

/// `<task name="T1">`, `<sched>`: how an element is named in messages.
fn describe(node: roxmltree::Node<'_, '_>) -> String {
    let tag = node.tag_name().name();
    match node.attribute("name") {
        Some(name) => format!("<{tag} name={name:?}>"),
        None => format!("<{tag}>"),
    }
}

impl<'a, 'input> Reader<'a, 'input> {
    fn problem(&mut self, node: roxmltree::Node<'_, '_>, attr: Option<&str>, message: String) {
        let (pos, element) = match attr.and_then(|a| node.attribute_node(a)) {
            Some(a) => (
                a.range().start,
                format!("{} attribute `{}`", describe(node), a.name()),
            ),
            None => (
                node.range().start,
                match attr {
                    Some(a) => format!("{} attribute `{a}`", describe(node)),
                    None => describe(node),
                },
            ),
        };
        let at = self.doc.text_pos_at(pos);
        self.problems.push(Problem {
            line: at.row,
            column: at.col,
            element,
            message,
        });
    }

    fn note(&mut self, text: String) {
        if !self.notes.contains(&text) {
            self.notes.push(text);
        }
    }

    /// The first child element named `tag`.
    fn child(
        &self,
        parent: roxmltree::Node<'a, 'input>,
        tag: &str,
    ) -> Option<roxmltree::Node<'a, 'input>> {
        parent
            .children()
            .find(|n| n.is_element() && n.tag_name().name() == tag)
    }

    /// An attribute that must be an integer >= 0 (SimSo reads cycles and
    /// counts as Python `int`s; `int(float(...))` for overheads).
    fn cycles(
        &mut self,
        node: roxmltree::Node<'_, '_>,
        attr: &str,
        default: u64,
        float_ok: bool,
    ) -> Option<u64> {
        let Some(text) = node.attribute(attr) else {
            return Some(default);
        };
        let parsed = if float_ok {
            // Overheads: SimSo truncates a decimal to whole cycles.
            parse_decimal(text, 0).map(|(whole, _)| whole)
        } else {
            text.trim()
                .parse::<u128>()
                .map_err(|_| "expected a whole number".to_string())
        };
        match parsed {
            Ok(v) => u64::try_from(v).ok().or_else(|| {
                self.problem(node, Some(attr), format!("`{text}` is too large"));
                None
            }),
            Err(e) => {
                self.problem(node, Some(attr), format!("`{text}`: {e}"));
                None
            }
        }
    }

    /// A time in milliseconds, to whole nanoseconds. `required`: an absent
    /// attribute is an error (else 0).
    fn millis(
        &mut self,
        node: roxmltree::Node<'_, '_>,
        attr: &str,
        required: bool,
        cycles_per_ms: u64,
    ) -> Option<u64> {
        let Some(text) = node.attribute(attr) else {
            if required {
                self.problem(
                    node,
                    None,
                    format!("attribute `{attr}` is missing (milliseconds)"),
                );
                return None;
            }
            return Some(0);
        };
        match ms_text_to_ns(text) {
            Ok(ns) => {
                if (u128::from(ns) * u128::from(cycles_per_ms)) % NS_PER_MS != 0 {
                    self.note(format!(
                        "{} `{attr}` = {text} ms is not a whole number of cycles at {cycles_per_ms} cycles/ms: \
                         SimSo truncates it to whole cycles, hsched keeps it exact",
                        describe(node)
                    ));
                }
                Some(ns)
            }
            Err(e) => {
                self.problem(node, Some(attr), format!("`{text}`: {e}"));
                None
            }
        }
    }

    fn model(&mut self) -> Option<Model> {
        let root = self.doc.root_element();
        if root.tag_name().name() != "simulation" {
            self.problem(
                root,
                None,
                "expected a SimSo configuration, whose root element is <simulation>".into(),
            );
            return None;
        }
        let cycles_per_ms = self.cycles(root, "cycles_per_ms", DEFAULT_CYCLES_PER_MS, false)?;
        if cycles_per_ms == 0 {
            self.problem(root, Some("cycles_per_ms"), "must be more than 0".into());
            return None;
        }
        let duration = self.cycles(root, "duration", DEFAULT_DURATION_CYCLES, false);
        let horizon_ns = duration.and_then(|cycles| {
            let ns = u128::from(cycles) * NS_PER_MS;
            let whole = ns.div_ceil(u128::from(cycles_per_ms));
            if ns % u128::from(cycles_per_ms) != 0 {
                self.note(format!(
                    "<simulation> `duration` = {cycles} cycles is not a whole number of nanoseconds: \
                     the horizon is rounded up to {whole}ns"
                ));
            }
            match u64::try_from(whole) {
                Ok(0) | Err(_) => {
                    self.problem(
                        root,
                        Some("duration"),
                        "must be more than 0 and fit in 64-bit nanoseconds".into(),
                    );
                    None
                }
                Ok(v) => Some(v),
            }
        });
        let run = self.run_model(root);
        let (policy, class, mono) = self.scheduler(root).unzip3();
        let (cpus, context_switch_ns) = self.processors(root, cycles_per_ms).unzip();
        let tasks = self.tasks(root, cycles_per_ms, policy == Some("fp"));
        for other in root.children().filter(|n| n.is_element()) {
            let tag = other.tag_name().name();
            if !["sched", "caches", "processors", "tasks"].contains(&tag) {
                self.note(format!(
                    "<{tag}> is not part of SimSo's format as hsched knows it: ignored"
                ));
            }
        }
        let mut cpus = cpus?;
        if mono? && cpus > 1 {
            self.note(format!(
                "{} runs every task on the first of the {cpus} processors: the scenario has 1 CPU",
                class.as_deref().unwrap_or("the scheduler")
            ));
            cpus = 1;
        }
        Some(Model {
            horizon_ns: horizon_ns?,
            cpus,
            policy: policy?,
            class: class?,
            context_switch_ns: context_switch_ns?,
            run: run?,
            tasks: tasks?,
        })
    }

    fn run_model(&mut self, root: roxmltree::Node<'_, '_>) -> Option<RunModel> {
        let etm = match root.attribute("etm") {
            Some(etm) => etm.trim().to_string(),
            None => match root.attribute("use_wcet") {
                Some(v) if !["true", "yes"].contains(&v) => "cache".to_string(),
                _ => "wcet".to_string(),
            },
        };
        match etm.as_str() {
            "wcet" => Some(RunModel::Wcet),
            "acet" => {
                self.note(
                    "etm = acet: each job's time is drawn from a normal distribution (mean ACET, \
                     deviation et_stddev, capped at WCET) by hsched's seeded generator: the same \
                     distribution as SimSo's, not the same draws"
                        .into(),
                );
                Some(RunModel::Acet)
            }
            other => {
                let attr = if root.has_attribute("etm") {
                    "etm"
                } else {
                    "use_wcet"
                };
                self.problem(
                    root,
                    Some(attr),
                    format!(
                        "execution time model `{other}` has no hsched equivalent (cache and \
                         penalty models depend on SimSo's cache simulation); supported: wcet, acet"
                    ),
                );
                None
            }
        }
    }

    /// (policy, SimSo class name, uses one CPU).
    fn scheduler(
        &mut self,
        root: roxmltree::Node<'a, 'input>,
    ) -> Option<(&'static str, String, bool)> {
        let Some(sched) = self.child(root, "sched") else {
            self.problem(root, None, "no <sched> element: which scheduler?".into());
            return None;
        };
        let (attr, named) = match (sched.attribute("class"), sched.attribute("className")) {
            (Some(c), _) if !c.trim().is_empty() => ("class", c.trim()),
            (_, Some(f)) if !f.trim().is_empty() => ("className", f.trim()),
            _ => {
                self.problem(
                    sched,
                    None,
                    "neither `class` nor `className` names the scheduler".into(),
                );
                return None;
            }
        };
        // "simso.schedulers.EDF_mono" or "schedulers/EDF_mono.py".
        let base = named.rsplit(['.', '/', '\\']).next().unwrap_or(named);
        let base = if named.ends_with(".py") {
            named
                .trim_end_matches(".py")
                .rsplit(['/', '\\'])
                .next()
                .unwrap_or(base)
        } else {
            base
        };
        let Some(&(class, policy, mono)) = SCHEDULERS.iter().find(|(c, _, _)| *c == base) else {
            let known: Vec<&str> = SCHEDULERS.iter().map(|s| s.0).collect();
            self.problem(
                sched,
                Some(attr),
                format!(
                    "scheduler `{named}` has no hsched equivalent (supported: {})",
                    known.join(", ")
                ),
            );
            return None;
        };
        for overhead in ["overhead", "overhead_activate", "overhead_terminate"] {
            if let Some(v) = sched.attribute(overhead) {
                if parse_decimal(v, 0).map(|(w, _)| w != 0).unwrap_or(true) {
                    self.note(format!(
                        "<sched> `{overhead}` = {v} cycles: hsched charges no time for a scheduling \
                         decision: ignored"
                    ));
                }
            }
        }
        Some((policy, class.to_string(), mono))
    }

    /// (CPUs, context switch ns).
    fn processors(
        &mut self,
        root: roxmltree::Node<'a, 'input>,
        cycles_per_ms: u64,
    ) -> Option<(u32, u64)> {
        let Some(procs) = self.child(root, "processors") else {
            self.problem(root, None, "no <processors> element".into());
            return None;
        };
        if let Some(m) = procs.attribute("migration_overhead") {
            if parse_decimal(m, 0).map(|(w, _)| w != 0).unwrap_or(true) {
                self.note(format!(
                    "<processors> `migration_overhead` = {m} cycles: hsched charges no migration cost: ignored"
                ));
            }
        }
        let cpus: Vec<_> = procs
            .children()
            .filter(|n| n.is_element() && n.tag_name().name() == "processor")
            .collect();
        if cpus.is_empty() {
            self.problem(procs, None, "no <processor> in it".into());
            return None;
        }
        let mut switch_cycles: Option<u64> = None;
        let mut ok = true;
        for cpu in &cpus {
            if let Some(speed) = cpu.attribute("speed") {
                match parse_decimal(speed, 6) {
                    Ok((1_000_000, _)) => {}
                    _ => {
                        self.problem(
                            *cpu,
                            Some("speed"),
                            format!("speed {speed}: hsched's CPUs all run at speed 1"),
                        );
                        ok = false;
                    }
                }
            }
            let cs = self.cycles(*cpu, "cs_overhead", 0, true);
            let cl = self.cycles(*cpu, "cl_overhead", 0, true);
            let (Some(cs), Some(cl)) = (cs, cl) else {
                ok = false;
                continue;
            };
            let total = cs.saturating_add(cl);
            match switch_cycles {
                None => switch_cycles = Some(total),
                Some(first) if first != total => {
                    self.problem(
                        *cpu,
                        None,
                        format!(
                            "its context overheads ({total} cycles) differ from the first processor's \
                             ({first}): hsched has one context-switch cost for the machine"
                        ),
                    );
                    ok = false;
                }
                _ => {}
            }
        }
        let cycles = switch_cycles.unwrap_or(0);
        let ns = u128::from(cycles) * NS_PER_MS / u128::from(cycles_per_ms);
        if cycles != 0 {
            self.note(format!(
                "context save + load overheads of {cycles} cycles become `context_switch` = {ns}ns: \
                 hsched charges it on each switch between threads, SimSo on each save and each load"
            ));
        }
        let n = u32::try_from(cpus.len()).ok().filter(|&n| n <= 4096);
        if n.is_none() {
            self.problem(procs, None, "more than 4096 processors".into());
        }
        (ok && n.is_some()).then(|| (n.unwrap_or(1), u64::try_from(ns).unwrap_or(u64::MAX)))
    }

    fn tasks(
        &mut self,
        root: roxmltree::Node<'a, 'input>,
        cycles_per_ms: u64,
        fixed_priority: bool,
    ) -> Option<Vec<Task>> {
        let Some(tasks_el) = self.child(root, "tasks") else {
            self.problem(root, None, "no <tasks> element".into());
            return None;
        };
        let nodes: Vec<_> = tasks_el
            .children()
            .filter(|n| n.is_element() && n.tag_name().name() == "task")
            .collect();
        if nodes.is_empty() {
            self.problem(tasks_el, None, "no <task> in it".into());
            return None;
        }
        let mut out = Vec::with_capacity(nodes.len());
        let mut names = BTreeSet::new();
        let mut aborting = Vec::new();
        let before = self.problems.len();
        for (i, node) in nodes.iter().enumerate() {
            let node = *node;
            if node
                .attribute("abort_on_miss")
                .is_none_or(|v| v.trim() == "yes")
            {
                aborting.push(node.attribute("name").unwrap_or("?").to_string());
            }
            if let Some(t) = self.task(node, i, cycles_per_ms, fixed_priority, &mut names) {
                out.push(t);
            }
        }
        if !aborting.is_empty() {
            self.note(format!(
                "abort_on_miss (SimSo's default) on {}: SimSo aborts a job still running at its \
                 deadline; hsched lets it finish, so the runs differ after a task's first miss",
                aborting.join(", ")
            ));
        }
        (self.problems.len() == before).then_some(out)
    }

    fn task(
        &mut self,
        node: roxmltree::Node<'_, '_>,
        index: usize,
        cycles_per_ms: u64,
        fixed_priority: bool,
        names: &mut BTreeSet<String>,
    ) -> Option<Task> {
        let before = self.problems.len();
        let kind_text = match node.attribute("task_type") {
            Some(k) => k.trim().to_string(),
            None if node.attribute("periodic") == Some("no") => "APeriodic".into(),
            None => "Periodic".into(),
        };
        if node.has_attribute("followed_by") {
            self.problem(
                node,
                Some("followed_by"),
                "task chains (a job released by another task's end) have no hsched equivalent"
                    .into(),
            );
        }
        let deadline_ns = self.millis(node, "deadline", true, cycles_per_ms);
        let wcet_ns = self.millis(node, "WCET", true, cycles_per_ms);
        let acet_ns = self.millis(node, "ACET", false, cycles_per_ms);
        let stddev_ns = self.millis(node, "et_stddev", false, cycles_per_ms);
        let kind = match kind_text.as_str() {
            "Periodic" => {
                let period = self.millis(node, "period", true, cycles_per_ms);
                let offset = self.millis(node, "activationDate", false, cycles_per_ms);
                if period == Some(0) {
                    self.problem(
                        node,
                        Some("period"),
                        "a periodic task needs a period above 0".into(),
                    );
                }
                match (period, offset) {
                    (Some(period_ns), Some(offset_ns)) => Some(TaskKind::Periodic {
                        period_ns,
                        offset_ns,
                    }),
                    _ => None,
                }
            }
            "Sporadic" => self
                .dates(node)
                .map(|dates_ns| TaskKind::Sporadic { dates_ns }),
            other => {
                self.problem(
                    node,
                    Some("task_type"),
                    format!(
                        "`{other}` tasks have no hsched equivalent (supported: Periodic, Sporadic)"
                    ),
                );
                None
            }
        };
        if deadline_ns == Some(0) {
            self.problem(node, Some("deadline"), "must be more than 0".into());
        }
        if wcet_ns == Some(0) {
            self.problem(node, Some("WCET"), "must be more than 0".into());
        }
        let priority = if fixed_priority {
            match node.attribute("priority").map(|p| p.trim().parse::<i64>()) {
                None => 0,
                Some(Ok(p)) if p.abs() <= PRIO_LIMIT => p,
                Some(_) => {
                    self.problem(
                        node,
                        Some("priority"),
                        format!("expected a whole number in -{PRIO_LIMIT}..={PRIO_LIMIT}"),
                    );
                    0
                }
            }
        } else {
            0
        };
        for (attr, default) in [("preemption_cost", "0"), ("stack", "")] {
            if let Some(v) = node.attribute(attr) {
                if v.trim() != default && !(attr == "preemption_cost" && is_zero(v)) {
                    self.note(format!(
                        "{} `{attr}` = {v}: SimSo's cache model only: ignored",
                        describe(node)
                    ));
                }
            }
        }
        if self.problems.len() != before {
            return None;
        }
        let given = node.attribute("name").unwrap_or("").trim().to_string();
        let name = if !given.is_empty() && !names.contains(&given) {
            given
        } else {
            let id = node.attribute("id").unwrap_or("").trim();
            let mut fallback = if id.is_empty() {
                format!("task{index}")
            } else {
                format!("task{id}")
            };
            if names.contains(&fallback) {
                fallback = format!("task-{index}");
            }
            self.note(format!(
                "{} has {}: its thread is named `{fallback}`",
                describe(node),
                if given.is_empty() {
                    "no name"
                } else {
                    "the name of an earlier task"
                }
            ));
            fallback
        };
        names.insert(name.clone());
        names.insert(format!("{name}-releases"));
        Some(Task {
            name,
            kind: kind?,
            deadline_ns: deadline_ns?,
            wcet_ns: wcet_ns?,
            acet_ns: acet_ns?,
            stddev_ns: stddev_ns?,
            priority,
        })
    }

    /// A sporadic task's activation dates, sorted as SimSo sorts them.
    fn dates(&mut self, node: roxmltree::Node<'_, '_>) -> Option<Vec<u64>> {
        let text = node.attribute("list_activation_dates").unwrap_or("");
        let mut dates = Vec::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match ms_text_to_ns(item) {
                Ok(ns) => dates.push(ns),
                Err(e) => {
                    self.problem(
                        node,
                        Some("list_activation_dates"),
                        format!("`{item}`: {e}"),
                    );
                    return None;
                }
            }
        }
        dates.sort_unstable();
        if dates.is_empty() {
            self.note(format!(
                "{}: a sporadic task without activation dates releases no job",
                describe(node)
            ));
        }
        if dates.windows(2).any(|w| w[0] == w[1]) {
            self.note(format!(
                "{}: two activations at the same date; hsched's release semaphore keeps one (SimSo queues both)",
                describe(node)
            ));
        }
        Some(dates)
    }
}

/// `Option<(A, B, C)>` into three options (for reporting every problem
/// before giving up).
trait Unzip3<A, B, C> {
    fn unzip3(self) -> (Option<A>, Option<B>, Option<C>);
}

impl<A, B, C> Unzip3<A, B, C> for Option<(A, B, C)> {
    fn unzip3(self) -> (Option<A>, Option<B>, Option<C>) {
        match self {
            Some((a, b, c)) => (Some(a), Some(b), Some(c)),
            None => (None, None, None),
        }
    }
}

fn is_zero(text: &str) -> bool {
    parse_decimal(text, 0).is_ok_and(|(w, exact)| w == 0 && exact)
}

/// Milliseconds written as a decimal (`12`, `2.5`, `1e-05`, as Python's
/// `str(float)` writes them) to whole nanoseconds, exactly.
pub fn ms_text_to_ns(text: &str) -> Result<u64, String> {
    match parse_decimal(text, 6) {
        Ok((ns, true)) => u64::try_from(ns).map_err(|_| "too large".to_string()),
        Ok((_, false)) => Err("not a whole number of nanoseconds".into()),
        Err(e) => Err(e),
    }
}

/// Parses a non-negative decimal and scales it by `10^scale`: (the whole
/// part, whether it was exact). Errors say what was expected.
fn parse_decimal(text: &str, scale: i32) -> Result<(u128, bool), String> {
    const EXPECTED: &str = "expected a non-negative decimal number";
    let t = text.trim();
    let t = t.strip_prefix('+').unwrap_or(t);
    let (mantissa, exponent) = match t.find(['e', 'E']) {
        Some(i) => {
            let e: i32 = t[i + 1..].parse().map_err(|_| EXPECTED.to_string())?;
            (&t[..i], e)
        }
        None => (t, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits_ok = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (int_part.is_empty() && frac_part.is_empty())
        || !digits_ok(int_part)
        || !digits_ok(frac_part)
    {
        return Err(EXPECTED.into());
    }
    let digits = format!("{int_part}{frac_part}");
    let digits = digits.trim_start_matches('0');
    let shift = i64::from(scale) + i64::from(exponent) - frac_part.len() as i64;
    if digits.is_empty() {
        return Ok((0, true));
    }
    let too_large = || "too large".to_string();
    if digits.len() > 38 || shift > 38 {
        return if shift + (digits.len() as i64) < -38 {
            Ok((0, false))
        } else {
            Err(too_large())
        };
    }
    let value: u128 = digits.parse().map_err(|_| too_large())?;
    if shift >= 0 {
        let pow = 10u128.checked_pow(shift as u32).ok_or_else(too_large)?;
        return value
            .checked_mul(pow)
            .map(|v| (v, true))
            .ok_or_else(too_large);
    }
    if -shift > 38 {
        return Ok((0, false));
    }
    let pow = 10u128.pow((-shift) as u32);
    Ok((value / pow, value % pow == 0))
}

/// The run of one job: its WCET, or the ACET distribution capped at WCET.
fn run_text(m: &Model, t: &Task) -> String {
    match m.run {
        RunModel::Wcet => toml_duration(t.wcet_ns),
        RunModel::Acet if t.stddev_ns == 0 => toml_duration(t.acet_ns.min(t.wcet_ns)),
        RunModel::Acet => format!(
            "{{ normal = {}, sd = {}, max = {} }}",
            toml_duration(t.acet_ns.min(t.wcet_ns)),
            toml_duration(t.stddev_ns),
            toml_duration(t.wcet_ns)
        ),
    }
}

/// The attachment parameters under the scheduler's policy.
fn attach(m: &Model, t: &Task) -> String {
    let period = match t.kind {
        TaskKind::Periodic { period_ns, .. } => period_ns,
        TaskKind::Sporadic { .. } => 0,
    };
    match m.policy {
        "edf" => format!(
            "{{ period = {}, deadline = {}, wcet = {} }}",
            toml_duration(period),
            toml_duration(t.deadline_ns),
            toml_duration(t.wcet_ns)
        ),
        "rm" => format!(
            "{{ period = {}, wcet = {} }}",
            toml_duration(period),
            toml_duration(t.wcet_ns)
        ),
        _ => format!("{{ prio = {} }}", t.priority),
    }
}

fn write(m: &Model, file_name: &str, notes: Vec<String>) -> Imported {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "# Imported by `hsched import simso` from {file_name}.");
    if !notes.is_empty() {
        let _ = writeln!(s, "#\n# Imported with differences:");
        for n in &notes {
            let _ = writeln!(s, "# - {}", n.replace('\n', " "));
        }
    }
    let stem = std::path::Path::new(file_name)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "simso".into());
    let _ = writeln!(s, "\nname = {}", toml_string(&stem));
    let _ = writeln!(
        s,
        "description = {}",
        toml_string(&format!(
            "SimSo configuration: {} task(s) under {} on {} CPU(s)",
            m.tasks.len(),
            m.class,
            m.cpus
        ))
    );
    let _ = writeln!(s, "horizon = {}", toml_duration(m.horizon_ns));
    let _ = writeln!(s, "seed = 0");
    let _ = writeln!(s, "\n[machine]\ncpus = {}", m.cpus);
    if m.context_switch_ns != 0 {
        let _ = writeln!(s, "context_switch = {}", toml_duration(m.context_switch_ns));
    }
    let _ = writeln!(
        s,
        "\n[[scheduler]]\nname = \"sched\"\npolicy = {}",
        toml_string(m.policy)
    );
    for t in &m.tasks {
        let _ = writeln!(s, "\n[[thread]]\nname = {}", toml_string(&t.name));
        let _ = writeln!(s, "at = {}", attach(m, t));
        match &t.kind {
            TaskKind::Periodic {
                period_ns,
                offset_ns,
            } => {
                let _ = writeln!(
                    s,
                    "program = [ {{ periodic = {{ period = {}, deadline = {}, offset = {}, run = {} }} }} ]",
                    toml_duration(*period_ns),
                    toml_duration(t.deadline_ns),
                    toml_duration(*offset_ns),
                    run_text(m, t)
                );
            }
            TaskKind::Sporadic { dates_ns } if dates_ns.is_empty() => {
                let _ = writeln!(s, "program = [ {{ exit = true }} ]");
            }
            TaskKind::Sporadic { dates_ns } => {
                let semaphore = toml_string(&format!("{}-release", t.name));
                let _ = writeln!(
                    s,
                    "program = [ {{ sporadic = {{ on = {semaphore}, deadline = {}, jobs = {}, run = {} }} }} ]",
                    toml_duration(t.deadline_ns),
                    dates_ns.len(),
                    run_text(m, t)
                );
                // The releaser needs no CPU: it sleeps to each date and signals.
                let _ = writeln!(
                    s,
                    "\n[[thread]]\nname = {}\nprogram = [",
                    toml_string(&format!("{}-releases", t.name))
                );
                let mut at = 0;
                for &d in dates_ns {
                    let _ = writeln!(
                        s,
                        "  {{ sleep = {} }}, {{ signal = {semaphore} }},",
                        toml_duration(d - at)
                    );
                    at = d;
                }
                let _ = writeln!(s, "]");
            }
        }
    }
    Imported { toml: s, notes }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_are_read_exactly() {
        assert_eq!(ms_text_to_ns("12"), Ok(12_000_000));
        assert_eq!(ms_text_to_ns("2.5"), Ok(2_500_000));
        assert_eq!(ms_text_to_ns(" 0.000001 "), Ok(1));
        assert_eq!(ms_text_to_ns("1e-05"), Ok(10));
        assert_eq!(ms_text_to_ns("1.25E2"), Ok(125_000_000));
        assert_eq!(ms_text_to_ns("0"), Ok(0));
        assert_eq!(ms_text_to_ns(".5"), Ok(500_000));
        assert!(ms_text_to_ns("0.0000001").unwrap_err().contains("whole"));
        assert!(ms_text_to_ns("-1").unwrap_err().contains("non-negative"));
        assert!(ms_text_to_ns("1.2.3").is_err());
        assert!(ms_text_to_ns("").is_err());
        assert!(ms_text_to_ns("1e400").unwrap_err().contains("too large"));
        assert!(ms_text_to_ns("99999999999999999999999").is_err());
    }
}
