//! The task-set generator: `n` periodic tasks at total utilisation `U`, for
//! acceptance-ratio sweeps.
//!
//! **Utilisations** by UUniFast (Bini & Buttazzo, "Measuring the performance
//! of schedulability tests", Real-Time Systems 30, 2005): `u_i` uniformly
//! distributed on the simplex `sum u_i = U`. On several CPUs, where `U` may
//! exceed 1, by UUniFast-Discard (Davis & Burns, 2009): sets with a task
//! above 1 are drawn again.
//!
//! **Periods** uniform or log-uniform on a range (log-uniform spreads them
//! evenly over orders of magnitude, as Emberson, Stafford & Davis recommend),
//! or drawn from a list, then rounded down to a multiple of `granularity`
//! (at least one granule), which keeps hyperperiods short. Everything after
//! the draw is integer nanoseconds: `wcet = max(1, floor(u_i * period))`,
//! `deadline = max(wcet, floor(f_i * period))` with `f_i` uniform on the
//! spec's `deadline` fractions (1 by default: implicit deadlines).
//!
//! **Placement.** Without a base scenario the tasks are the threads of a
//! one-scheduler scenario, `policy` with `params` at the root on `cpus`
//! CPUs. With one, they are added to its threads, under `parent`. Either
//! way each task's attachment is the spec's `attach` table, in which
//! `${task.rm}` is its rate-monotonic priority (shortest period highest:
//! `n` down to 1, ties by index), `${task.dm}` the deadline-monotonic one,
//! `${task.period}`, `${task.deadline}`, `${task.wcet}` are integer
//! nanoseconds, `${task.util}` its utilisation (6 decimals) and
//! `${task.index}` its index. The policy is only a name: any registered
//! policy whose child parameters can be written this way works (`fp` with
//! `prio = "${task.rm}"`; `res` with `amount = "${task.wcet}"`,
//! `period = "${task.period}"`; an `edf` with no attachment at all).
//!
//! The floating-point steps (UUniFast's powers, the log-uniform draw) use
//! `libm`, a pure-Rust libm, so a spec and seed give the same task sets on
//! every platform.
//!
//! **Exact sets** ([`draw_exact`]), for the SimSo cross-check and speed
//! comparison (`hsched bench --simso`), which must be exact in SimSo's float
//! milliseconds too: integers only, distinct whole-millisecond periods, the
//! utilisation split in permille at random cut points (uniform on the
//! simplex, as UUniFast, without floating point), each WCET a multiple of
//! a grain.

use crate::value::{Decimal, Value};
use rand::{Rng, RngCore};
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table};

/// A literal, or a `${name}` reference to a sweep parameter.
#[derive(Clone, Debug)]
pub enum Setting<T> {
    Lit(T),
    Param(String),
}

/// A scalar written into the scenario (a policy parameter, an attachment
/// parameter); strings may hold `${...}` references.
#[derive(Clone, Debug)]
pub enum Scalar {
    Text(String),
    Int(i64),
    Bool(bool),
}

#[derive(Clone, Debug)]
pub enum PeriodDist {
    Uniform(u64, u64),
    LogUniform(u64, u64),
    Choice(Vec<u64>),
}

#[derive(Clone, Debug)]
pub enum Placement {
    /// A scenario of its own: one scheduler running `policy`.
    Own {
        policy: String,
        params: Vec<(String, Scalar)>,
        cpus: u64,
    },
    /// The base scenario's hierarchy; `None`: its default scheduler.
    Under { parent: Option<String> },
}

#[derive(Clone, Debug)]
pub enum Horizon {
    Fixed(u64),
    /// `k` times the longest period, plus 1ns so that a job due exactly
    /// then is judged (a job unfinished at the horizon misses only if its
    /// deadline is before it).
    LongestPeriods(u64),
    /// The base scenario's.
    Base,
}

#[derive(Clone, Debug)]
pub struct TaskSet {
    pub tasks: Setting<u64>,
    pub utilisation: Setting<Decimal>,
    pub period: PeriodDist,
    pub granularity: u64,
    /// Deadline as a fraction of the period, drawn uniformly from this range.
    pub deadline: (Decimal, Decimal),
    pub placement: Placement,
    pub attach: Vec<(String, Scalar)>,
    pub horizon: Horizon,
    /// Thread name prefix: `task0`, `task1`, ...
    pub name: String,
}

/// One generated task, integer nanoseconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    pub period: u64,
    pub wcet: u64,
    pub deadline: u64,
    /// Its share of the utilisation, as drawn (before rounding the wcet).
    pub util: Decimal,
    /// Rate-monotonic priority: `n` for the shortest period.
    pub rm: i64,
    /// Deadline-monotonic priority: `n` for the shortest deadline.
    pub dm: i64,
}

impl TaskSet {
    /// The sweep parameters this generator refers to: (key, name).
    pub fn references(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if let Setting::Param(p) = &self.tasks {
            out.push(("tasks".into(), p.clone()));
        }
        if let Setting::Param(p) = &self.utilisation {
            out.push(("utilisation".into(), p.clone()));
        }
        let mut scalars = |prefix: &str, list: &[(String, Scalar)]| {
            for (k, s) in list {
                if let Scalar::Text(t) = s {
                    for (_, name) in crate::edit::placeholders(t) {
                        if !name.starts_with("task.") {
                            out.push((format!("{prefix}.{k}"), name));
                        }
                    }
                }
            }
        };
        if let Placement::Own { params, .. } = &self.placement {
            scalars("params", params);
        }
        scalars("attach", &self.attach);
        out
    }

    /// The most utilisation a set may have: one CPU per task, and the
    /// generated scenario's CPUs (a base scenario's are its business).
    fn max_utilisation(&self, tasks: u64) -> f64 {
        match self.placement {
            Placement::Own { cpus, .. } => cpus.min(tasks) as f64,
            Placement::Under { .. } => tasks as f64,
        }
    }

    /// Draws the task set of one point.
    pub fn draw(
        &self,
        tasks: u64,
        utilisation: f64,
        rng: &mut impl RngCore,
    ) -> Result<Vec<Task>, String> {
        if tasks == 0 || tasks > 100_000 {
            return Err(format!(
                "taskset.tasks: {tasks} tasks (expected 1..=100000)"
            ));
        }
        if !(utilisation > 0.0 && utilisation.is_finite()) {
            return Err(format!("taskset.utilisation: {utilisation} (expected > 0)"));
        }
        let most = self.max_utilisation(tasks);
        if utilisation > most {
            return Err(format!(
                "taskset.utilisation: {utilisation} is more than {most} ({tasks} task(s), each at most 1, on the generated scenario's CPUs)"
            ));
        }
        let utils = uunifast_discard(tasks as usize, utilisation, rng)?;
        let mut out: Vec<Task> = Vec::with_capacity(utils.len());
        for u in utils {
            let raw = match &self.period {
                PeriodDist::Uniform(lo, hi) => rng.gen_range(*lo..=*hi),
                PeriodDist::LogUniform(lo, hi) => {
                    let (a, b) = (libm::log(*lo as f64), libm::log(*hi as f64));
                    let x: f64 = rng.gen();
                    (libm::exp(a + (b - a) * x) as u64).clamp(*lo, *hi)
                }
                PeriodDist::Choice(list) => list[rng.gen_range(0..list.len())],
            };
            let g = self.granularity;
            let period = (raw / g).max(1).saturating_mul(g);
            let wcet = ((u * period as f64) as u64).clamp(1, period);
            let (lo, hi) = (self.deadline.0.to_f64(), self.deadline.1.to_f64());
            let f = if lo < hi {
                lo + (hi - lo) * rng.gen::<f64>()
            } else {
                lo
            };
            let deadline = ((f * period as f64) as u64).clamp(wcet, period);
            out.push(Task {
                period,
                wcet,
                deadline,
                util: Decimal::from_f64_rounded(u, 6).unwrap_or(Decimal::from_int(0)),
                rm: 0,
                dm: 0,
            });
        }
        let n = out.len() as i64;
        let mut order: Vec<usize> = (0..out.len()).collect();
        order.sort_by_key(|&i| (out[i].period, i));
        for (rank, &i) in order.iter().enumerate() {
            out[i].rm = n - rank as i64;
        }
        order.sort_by_key(|&i| (out[i].deadline, i));
        for (rank, &i) in order.iter().enumerate() {
            out[i].dm = n - rank as i64;
        }
        Ok(out)
    }

    /// Writes the tasks into `doc`: a new scenario (placement `Own`) or the
    /// base scenario's threads. `lookup` gives a sweep parameter's value.
    pub fn write(
        &self,
        doc: &mut DocumentMut,
        name: &str,
        tasks: &[Task],
        lookup: &dyn Fn(&str) -> Option<Value>,
    ) -> Result<(), String> {
        let parent = match &self.placement {
            Placement::Own {
                policy,
                params,
                cpus,
            } => {
                doc.insert("name", toml_edit::value(name));
                let mut machine = Table::new();
                machine.insert("cpus", toml_edit::value(*cpus as i64));
                doc.insert("machine", Item::Table(machine));
                let mut sched = Table::new();
                sched.insert("name", toml_edit::value("sched"));
                sched.insert("policy", toml_edit::value(policy.as_str()));
                for (k, v) in params {
                    let v = scalar(v, &|n| lookup(n))
                        .map_err(|e| format!("taskset.params.{k}: {e}"))?;
                    sched.insert(k, Item::Value(v));
                }
                let mut list = toml_edit::ArrayOfTables::new();
                list.push(sched);
                doc.insert("scheduler", Item::ArrayOfTables(list));
                Some("sched".to_string())
            }
            Placement::Under { parent } => parent.clone(),
        };
        let longest = tasks.iter().map(|t| t.period).max().unwrap_or(1);
        match self.horizon {
            Horizon::Fixed(ns) => {
                doc.insert("horizon", toml_edit::value(ns as i64));
            }
            Horizon::LongestPeriods(k) => {
                let ns = longest
                    .saturating_mul(k)
                    .saturating_add(1)
                    .min(i64::MAX as u64);
                doc.insert("horizon", toml_edit::value(ns as i64));
            }
            Horizon::Base => {}
        }
        if !doc.contains_key("thread") {
            doc.insert(
                "thread",
                Item::ArrayOfTables(toml_edit::ArrayOfTables::new()),
            );
        }
        let Some(threads) = doc["thread"].as_array_of_tables_mut() else {
            return Err(
                "the base scenario's `thread` is not an array of tables ([[thread]])".into(),
            );
        };
        for (i, task) in tasks.iter().enumerate() {
            let mut t = Table::new();
            t.insert("name", toml_edit::value(format!("{}{i}", self.name)));
            if let Some(p) = &parent {
                t.insert("parent", toml_edit::value(p.as_str()));
            }
            if !self.attach.is_empty() {
                let mut at = InlineTable::new();
                for (k, v) in &self.attach {
                    let per_task = |n: &str| match n {
                        "task.rm" => Some(Value::Int(task.rm)),
                        "task.dm" => Some(Value::Int(task.dm)),
                        "task.period" => Some(Value::Int(task.period as i64)),
                        "task.deadline" => Some(Value::Int(task.deadline as i64)),
                        "task.wcet" => Some(Value::Int(task.wcet as i64)),
                        "task.util" => Some(Value::Decimal(task.util)),
                        "task.index" => Some(Value::Int(i as i64)),
                        _ if n.starts_with("task.") => None,
                        _ => lookup(n),
                    };
                    let v = scalar(v, &per_task).map_err(|e| format!("taskset.attach.{k}: {e}"))?;
                    at.insert(k, v);
                }
                t.insert("at", toml_edit::value(at));
            }
            let mut periodic = InlineTable::new();
            periodic.insert("period", (task.period as i64).into());
            if task.deadline != task.period {
                periodic.insert("deadline", (task.deadline as i64).into());
            }
            periodic.insert("run", (task.wcet as i64).into());
            let mut op = InlineTable::new();
            op.insert("periodic", toml_edit::Value::InlineTable(periodic));
            let mut program = Array::new();
            program.push(op);
            t.insert("program", toml_edit::value(program));
            threads.push(t);
        }
        Ok(())
    }
}

/// A scalar with its references resolved: a string that is exactly one
/// `${name}` takes the value's own type (an integer stays an integer).
fn scalar(s: &Scalar, lookup: &dyn Fn(&str) -> Option<Value>) -> Result<toml_edit::Value, String> {
    let unknown = |n: &str| format!("`${{{n}}}` is not known here");
    Ok(match s {
        Scalar::Int(i) => (*i).into(),
        Scalar::Bool(b) => (*b).into(),
        Scalar::Text(t) => {
            let whole = t.strip_prefix("${").and_then(|r| r.strip_suffix('}'));
            if let Some(name) = whole.filter(|r| !r.contains(['$', '{', '}'])) {
                let name = name.trim();
                return lookup(name)
                    .map(|v| v.to_toml())
                    .ok_or_else(|| unknown(name));
            }
            let mut out = String::new();
            let mut rest = t.as_str();
            while let Some(start) = rest.find("${") {
                out.push_str(&rest[..start]);
                let after = &rest[start + 2..];
                let end = after.find('}').ok_or("a `${` without its closing `}`")?;
                let name = after[..end].trim();
                out.push_str(&lookup(name).ok_or_else(|| unknown(name))?.to_string());
                rest = &after[end + 1..];
            }
            out.push_str(rest);
            out.into()
        }
    })
}

/// An exact task set: `n` tasks with distinct periods of whole
/// milliseconds in `min_ms..=max_ms` (widened to `min_ms + n` if that is
/// too narrow), the total utilisation `permille`/1000 split among them at
/// `n - 1` random cut points, each WCET rounded to the nearest multiple of
/// `grain_ns` (at least one grain, at most the period). Returns each
/// task's (period, wcet) in nanoseconds, in the order drawn.
pub fn draw_exact(
    n: usize,
    permille: u64,
    (min_ms, max_ms): (u64, u64),
    grain_ns: u64,
    rng: &mut impl RngCore,
) -> Vec<(u64, u64)> {
    let mut periods: Vec<u64> = Vec::with_capacity(n);
    while periods.len() < n {
        let p = rng.gen_range(min_ms..=max_ms.max(min_ms + n as u64));
        if !periods.contains(&p) {
            periods.push(p);
        }
    }
    let mut cuts: Vec<u64> = (1..n).map(|_| rng.gen_range(0..=permille)).collect();
    cuts.push(0);
    cuts.push(permille);
    cuts.sort_unstable();
    let shares = cuts.windows(2).map(|w| w[1] - w[0]);
    periods
        .iter()
        .zip(shares)
        .map(|(&period_ms, share)| {
            let period_ns = period_ms * 1_000_000;
            let grains = (period_ns * share / 1000 + grain_ns / 2) / grain_ns;
            (period_ns, (grains.max(1) * grain_ns).min(period_ns))
        })
        .collect()
}

/// UUniFast (Bini & Buttazzo), redrawn while a task would exceed one CPU.
fn uunifast_discard(n: usize, total: f64, rng: &mut impl RngCore) -> Result<Vec<f64>, String> {
    const ATTEMPTS: usize = 10_000;
    for _ in 0..ATTEMPTS {
        let mut utils = Vec::with_capacity(n);
        let mut sum = total;
        for i in 1..n {
            let x: f64 = rng.gen();
            let next = sum * libm::pow(x, 1.0 / (n - i) as f64);
            utils.push(sum - next);
            sum = next;
        }
        utils.push(sum);
        if utils.iter().all(|&u| u <= 1.0) {
            return Ok(utils);
        }
    }
    Err(format!(
        "taskset: no set of {n} tasks at utilisation {total} with every task at most 1 in {ATTEMPTS} draws (UUniFast-Discard): lower the utilisation or add tasks"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn uunifast_sums_to_the_target_and_stays_on_the_simplex() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for n in [1, 2, 5, 20] {
            for total in [0.1, 0.75, 1.0] {
                let u = uunifast_discard(n, total, &mut rng).unwrap();
                assert_eq!(u.len(), n);
                assert!(u.iter().all(|&x| (0.0..=1.0).contains(&x)), "{u:?}");
                let sum: f64 = u.iter().sum();
                assert!((sum - total).abs() < 1e-9, "{sum} vs {total}");
            }
        }
    }

    #[test]
    fn an_exact_set_has_distinct_periods_and_whole_grains() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let set = draw_exact(6, 900, (4, 60), 125_000, &mut rng);
        assert_eq!(set.len(), 6);
        let mut periods: Vec<u64> = set.iter().map(|t| t.0).collect();
        periods.dedup();
        assert_eq!(periods.len(), 6);
        for (period, wcet) in set {
            assert_eq!(period % 1_000_000, 0);
            assert_eq!(wcet % 125_000, 0);
            assert!(wcet >= 125_000 && wcet <= period);
        }
    }

    #[test]
    fn uunifast_discard_keeps_every_task_below_one_cpu() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let u = uunifast_discard(4, 3.0, &mut rng).unwrap();
        assert!(u.iter().all(|&x| x <= 1.0), "{u:?}");
        assert!(uunifast_discard(2, 2.5, &mut rng).is_err());
    }
}
