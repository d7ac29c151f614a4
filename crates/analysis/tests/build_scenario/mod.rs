//! Building scenarios in code for the analysis tests (the analysis crate
//! cannot use the scenario parser, which depends on it).

#![allow(dead_code)]

use hsched_analysis::compose::{analyse, Analysis, Edge};
use hsched_analysis::guarantee::Guarantee;
use hsched_analysis::rules::{RuleBook, Severity};
use hsched_core::{Duration, Instant, Msg, Params, Value};
use hsched_model::{Machine, Op, ParentLink, Program, Scenario, SchedulerSpec, Target, ThreadSpec};

pub fn ms(n: u64) -> Value {
    Value::Duration(Duration::from_millis(n))
}
pub fn int(n: i64) -> Value {
    Value::Int(n)
}
pub fn text(s: &str) -> Value {
    Value::Str(s.to_string())
}
pub fn params(kv: &[(&str, Value)]) -> Params {
    kv.iter()
        .fold(Params::new(), |p, (k, v)| p.with(k, v.clone()))
}
pub fn g(text: &str) -> Guarantee {
    Guarantee::parse(text).unwrap_or_else(|e| panic!("`{text}`: {e}"))
}

/// A scenario under construction.
pub struct Build {
    pub scn: Scenario,
}

pub fn scenario(cpus: u32) -> Build {
    Build {
        scn: Scenario {
            name: "test".into(),
            description: String::new(),
            machine: Machine {
                cpus,
                context_switch: Duration::ZERO,
                tick: None,
                watchdog: None,
            },
            horizon: Duration::from_secs(1),
            seed: 1,
            schedulers: Vec::new(),
            default_scheduler: String::new(),
            threads: Vec::new(),
            script: Vec::new(),
        },
    }
}

impl Build {
    /// A scheduler with its own parameters and its parents, each with its
    /// attachment parameters (one VP each).
    pub fn sched(
        mut self,
        name: &str,
        policy: &str,
        own: &[(&str, Value)],
        parents: &[(&str, &[(&str, Value)])],
    ) -> Build {
        if self.scn.schedulers.is_empty() {
            self.scn.default_scheduler = name.to_string();
        }
        self.scn.schedulers.push(SchedulerSpec {
            name: name.into(),
            policy: policy.into(),
            params: params(own),
            parents: parents
                .iter()
                .map(|(p, at)| ParentLink {
                    parent: p.to_string(),
                    vps: 1,
                    params: params(at),
                })
                .collect(),
        });
        self
    }

    /// Sets the VPs of `name`'s link to `parent`.
    pub fn vps(mut self, name: &str, parent: &str, vps: u32) -> Build {
        let s = self
            .scn
            .schedulers
            .iter_mut()
            .find(|s| s.name == name)
            .unwrap();
        s.parents
            .iter_mut()
            .find(|l| l.parent == parent)
            .unwrap()
            .vps = vps;
        self
    }

    pub fn thread(self, name: &str, parent: &str, at: &[(&str, Value)]) -> Build {
        self.thread_with(name, parent, at, None, vec![])
    }

    pub fn thread_with(
        mut self,
        name: &str,
        parent: &str,
        at: &[(&str, Value)],
        needs: Option<&str>,
        ops: Vec<Op>,
    ) -> Build {
        self.scn.threads.push(ThreadSpec {
            name: name.into(),
            parent: parent.into(),
            params: params(at),
            arrival: Instant::ZERO,
            program: Program::new(ops),
            needs: needs.map(str::to_string),
        });
        self
    }

    pub fn analyse(&self) -> Analysis {
        analyse(&self.scn, &RuleBook::standard())
    }

    pub fn analyse_with(&self, book: &RuleBook) -> Analysis {
        analyse(&self.scn, book)
    }
}

/// A message to the thread's parent.
/// Uses the CPU for `n` ms.
pub fn run_ms(n: u64) -> Op {
    Op::Run(hsched_model::Dist::Fixed(Duration::from_millis(n)))
}

pub fn msg(name: &str, args: &[(&str, Value)]) -> Op {
    Op::Msg {
        to: Target::Parent,
        msg: Msg {
            name: name.into(),
            args: params(args),
        },
    }
}

/// The edge `from -> to`, or a panic listing the edges.
pub fn edge<'a>(a: &'a Analysis, from: &str, to: &str) -> &'a Edge {
    a.edge(Some(from), to).unwrap_or_else(|| {
        panic!(
            "no edge {from} -> {to}; edges: {:?}",
            a.edges
                .iter()
                .map(|e| format!("{:?} -> {}", e.from, e.to))
                .collect::<Vec<_>>()
        )
    })
}

/// The label of `from -> to`, as the paper writes it.
pub fn label(a: &Analysis, from: &str, to: &str) -> String {
    edge(a, from, to).guarantee.to_string()
}

/// The messages of the problems of one severity.
pub fn messages(a: &Analysis, severity: Severity) -> Vec<String> {
    a.problems
        .iter()
        .filter(|p| p.severity == severity)
        .map(|p| p.message.clone())
        .collect()
}

/// The single error, or a panic showing them all.
pub fn only_error(a: &Analysis) -> String {
    let e = messages(a, Severity::Error);
    assert_eq!(e.len(), 1, "expected one error: {e:#?}");
    e[0].clone()
}
