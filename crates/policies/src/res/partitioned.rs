//! `res` with `multiprocessor = "partitioned"`: one uniprocessor `res` per
//! VP ([`crate::partition::Parts`]), each child placed on one VP at
//! admission and running only there.
//!
//! **Placement** (`fit`), by utilization (`amount / period`, or a RESU
//! child's `rate`), exactly: `"first"` takes the lowest-index VP whose load
//! plus the child's stays at most 1 (that VP's EDF test); `"worst"` the VP
//! that keeps the most spare utilization after adding it (the least
//! loaded), ties to the lowest index. No VP fits: refused, naming the child,
//! what it asked and each VP's load. A `reserve` re-places its child the
//! same way, its old reservation no longer counted (it may move: refused
//! if no VP fits, and it keeps its old one); `release`, `deadline` and
//! `info` go to the child's VP.
//!
//! **Guarantee.** Each VP is a uniprocessor `res` whose utilizations sum to
//! at most 1: holding its VP throughout (ALL on every VP), a child gets its
//! RESBH amount, period (or RESU rate), as on one CPU. No migration: a
//! child runs only on its VP, since nothing is proven for moving it.

use super::job::Kind;
use super::rate::Util;
use super::scheduler::Res;
use crate::partition::{Fit, Parts};
use hsched_core::{ChildId, Cx, Msg, Params, Reject, Reply, Scheduler, Sender, Value};

/// Partitioned `res`; see the module documentation.
#[derive(Debug)]
pub struct ResParts {
    fit: Fit,
    parts: Parts<Res>,
}

impl ResParts {
    pub fn new(fit: Fit) -> Self {
        ResParts {
            fit,
            parts: Parts::new(Res::new(hsched_core::Share::ONE)),
        }
    }

    /// The VP each child lives on.
    pub fn home(&self, child: ChildId) -> Option<u32> {
        self.parts.home(child)
    }

    /// The admitted utilization of each VP.
    pub fn loads(&self) -> Vec<Util> {
        self.parts.subs.iter().map(Res::reserved).collect()
    }

    /// Where a child of utilization `u` goes (`leaving`: a child whose
    /// current utilization no longer counts), or why nowhere.
    fn place(&self, u: Util, leaving: Option<ChildId>, what: &str) -> Result<u32, String> {
        let mut loads = self.loads();
        if let Some(c) = leaving {
            if let Some(vp) = self.parts.home(c) {
                let sub = &self.parts.subs[vp as usize];
                let old = sub.children[c].kind.util();
                let l = &mut loads[vp as usize];
                *l = l.checked_sub(old).unwrap_or(*l);
            }
        }
        let mut best: Option<(u32, Util)> = None;
        for (vp, load) in loads.iter().enumerate() {
            let Some(after) = load.checked_add(u) else {
                continue;
            };
            if !after.at_most_one() {
                continue;
            }
            match self.fit {
                Fit::First => return Ok(vp as u32),
                Fit::Worst => {
                    let better =
                        best.is_none_or(|(_, b)| after.checked_cmp(b).is_some_and(|o| o.is_lt()));
                    if better {
                        best = Some((vp as u32, after));
                    }
                }
            }
        }
        best.map(|b| b.0).ok_or_else(|| {
            let each: Vec<String> = loads
                .iter()
                .enumerate()
                .map(|(vp, l)| format!("VP {vp} holds {l}"))
                .collect();
            format!(
                "res (partitioned, {}): {what} needs {u}, which fits on none of its {} VPs ({}): each VP admits a total of at most 1",
                self.fit.name(),
                loads.len(),
                each.join(", ")
            )
        })
    }

    /// The child a message is about (as the uniprocessor `res` reads it).
    fn target(&self, from: Sender, msg: &Msg) -> Result<ChildId, String> {
        super::messages::target_in(from, msg, |c| self.parts.home(c).is_some())
    }

    /// `reserve`: re-placed by `fit`, then reserved on its (new) VP.
    fn reserve(&mut self, cx: &mut Cx, from: Sender, msg: &Msg) -> Result<Params, String> {
        Res::msg_args(msg, &["amount", "period", "child"])?;
        let child = self.target(from, msg)?;
        let amount = Res::duration_arg(msg, "amount")?;
        let period = Res::duration_arg(msg, "period")?;
        Res::check_reservation(amount, period)?;
        let u = Util::of(amount, period);
        let what = format!("reservation {amount} per {period} for {child}");
        let to = self.place(u, Some(child), &what)?;
        let home = self.parts.home(child).unwrap_or(to);
        let sender = Sender {
            thread: from.thread,
            child: Some(child),
        };
        if to != home {
            let params = Params::new()
                .with("amount", Value::Duration(amount))
                .with("period", Value::Duration(period));
            self.parts
                .relocate(cx, child, to, |s, cx| s.register_vp(cx, child, &params))
                .map_err(|r| r.0)?;
            let mut p = self.parts.subs[to as usize].info(sender, &Msg::new("info"))?;
            p.set("utilization", Value::Str(u.to_string()));
            p.set("vp", Value::Int(i64::from(to)));
            return Ok(p);
        }
        let reply = self.parts.call(cx, to, |s, cx| s.msg(cx, sender, msg));
        match reply {
            Reply::Ok(mut p) => {
                p.set("vp", Value::Int(i64::from(to)));
                Ok(p)
            }
            Reply::Err(e) => Err(e),
        }
    }
}

impl Scheduler for ResParts {
    fn policy(&self) -> &'static str {
        "res"
    }

    /// Admission: placed by `fit`, then admitted by its VP's `res`.
    fn register_vp(&mut self, cx: &mut Cx, child: ChildId, params: &Params) -> Result<(), Reject> {
        self.parts.ensure(cx);
        let kind = Res::kind_from(params).map_err(Reject)?;
        let what = match &kind {
            Kind::Reserved { amount, period, .. } => format!("{child}'s RESBH {amount}, {period}"),
            Kind::Usp { rate, .. } => format!("{child}'s RESU {rate}"),
            Kind::Nothing => format!("{child}"),
        };
        let vp = self.place(kind.util(), None, &what).map_err(Reject)?;
        self.parts
            .register(cx, vp, child, |s, cx| s.register_vp(cx, child, params))
    }

    crate::partition::route_to_parts!();

    fn msg(&mut self, cx: &mut Cx, from: Sender, msg: &Msg) -> Reply {
        self.parts.ensure(cx);
        let result = match msg.name.as_str() {
            "reserve" => self.reserve(cx, from, msg),
            "release" | "deadline" | "info" => match self.target(from, msg) {
                Ok(child) => {
                    let vp = self.parts.home(child).unwrap_or(0);
                    let sender = Sender {
                        thread: from.thread,
                        child: Some(child),
                    };
                    return self.parts.call(cx, vp, |s, cx| s.msg(cx, sender, msg));
                }
                Err(e) => Err(e),
            },
            _ => return Reply::unknown(self.policy(), msg),
        };
        result.map_or_else(Reply::Err, Reply::Ok)
    }

    /// Every VP's `res` keeps its own rules (its load at most 1), and every
    /// child is on exactly the VP it was placed on.
    fn check_invariants(&self) -> Result<(), String> {
        self.parts.check_invariants(|s, c| s.children.contains(c))?;
        for (vp, l) in self.loads().iter().enumerate() {
            if !l.at_most_one() {
                return Err(format!("VP {vp} holds {l}, past 1"));
            }
        }
        Ok(())
    }
}
