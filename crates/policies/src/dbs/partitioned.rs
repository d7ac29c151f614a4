//! `dbs` with `multiprocessor = "partitioned"`: one uniprocessor `dbs` per
//! VP ([`crate::partition::Parts`]); each child lives on one VP and runs
//! only there (reserved, overrun and leftover tiers alike).
//!
//! **Placement.** A child joins the VP with the fewest children (ties to
//! the lowest index): it has no reservation yet, so load says nothing. A
//! `reserve` from a child that holds no reservation in force places it by
//! `fit`, by the EDF demand-bound test of each VP with the new window
//! added: `"first"` takes the lowest-index VP that passes; `"worst"` the VP
//! whose peak load after it (the largest `demand / (b - a)` over the
//! intervals the test checks) is lowest, ties to the lowest index. No VP
//! passes: refused, naming the child, the window and each VP's load. A child
//! that holds reservations in force stays on its VP (they were admitted
//! there) and its request is tested there only. `cancel` goes to its VP.
//!
//! **Guarantee.** Each VP is a uniprocessor `dbs`: holding its VP
//! throughout (ALL on every VP), every accepted reservation of a child that
//! stays runnable through its window receives its amount by its deadline,
//! as on one CPU. A child moves only at a `reserve` while it holds nothing
//! in force, so no promise is ever migrated: nothing is proven for that.

use super::messages::window;
use super::scheduler::Dbs;
use crate::partition::{Fit, Parts};
use hsched_core::{ChildId, Cx, Duration, Msg, Params, Reject, Reply, Scheduler, Sender};

/// Partitioned `dbs`; see the module documentation.
#[derive(Debug)]
pub struct DbsParts {
    fit: Fit,
    parts: Parts<Dbs>,
}

/// `demand / room` as a percentage with two decimals, in integers.
fn percent((d, r): (u64, u64)) -> String {
    let bp = u128::from(d) * 10_000 / u128::from(r.max(1));
    format!("{}.{:02}%", bp / 100, bp % 100)
}

impl DbsParts {
    /// Partitioned over copies of `one` (an empty uniprocessor `dbs`).
    pub fn new(fit: Fit, one: Dbs) -> Self {
        DbsParts {
            fit,
            parts: Parts::new(one),
        }
    }

    /// The VP each child lives on.
    pub fn home(&self, child: ChildId) -> Option<u32> {
        self.parts.home(child)
    }

    /// Where a child with nothing in force goes for `window`, or why
    /// nowhere.
    fn place(
        &self,
        now: Instant,
        child: ChildId,
        window: (Instant, Instant, Duration),
    ) -> Result<u32, String> {
        let (start, deadline, amount) = window;
        let mut best: Option<(u32, (u64, u64))> = None;
        let mut each = Vec::new();
        for (vp, sub) in self.parts.subs.iter().enumerate() {
            let (ok, after) = sub.load_with(now, Some((deadline, start.max(now), amount)));
            match ok {
                Err(why) => {
                    // Its load without the window: only a refusal says it.
                    let before = sub.load_with(now, None).1;
                    each.push(format!("VP {vp} (peak load {}): {why}", percent(before)));
                }
                Ok(()) => {
                    if self.fit == Fit::First {
                        return Ok(vp as u32);
                    }
                    let lower = |b: (u64, u64)| {
                        u128::from(after.0) * u128::from(b.1)
                            < u128::from(b.0) * u128::from(after.1)
                    };
                    if best.is_none_or(|(_, b)| lower(b)) {
                        best = Some((vp as u32, after));
                    }
                }
            }
        }
        best.map(|b| b.0).ok_or_else(|| {
            format!(
                "dbs (partitioned, {}): {child}'s reservation of {amount} in [{start}, {deadline}] fits on none of its {} VPs: {}",
                self.fit.name(),
                self.parts.subs.len(),
                each.join("; ")
            )
        })
    }

    fn reserve(&mut self, cx: &mut Cx, child: ChildId, msg: &Msg) -> Reply {
        let now = cx.now();
        let home = self.parts.home(child).unwrap_or(0);
        let sender = Sender {
            thread: None,
            child: Some(child),
        };
        let holds = self.parts.subs[home as usize].holds_reservations(child);
        let window = window(now, &msg.args);
        let to = match window {
            // Bad arguments, a zero amount, or a child whose reservations
            // keep it where it is: its own VP answers.
            Err(_) => home,
            Ok((_, _, amount)) if amount.is_zero() || holds => home,
            Ok(w) => match self.place(now, child, w) {
                Ok(vp) => vp,
                Err(e) => return Reply::Err(format!("dbs: `reserve` refused: {e}")),
            },
        };
        if to != home {
            let moved = self.parts.relocate(cx, child, to, |s, cx| {
                s.register_vp(cx, child, &Params::new())
            });
            if let Err(Reject(e)) = moved {
                return Reply::Err(format!("dbs: `reserve` refused: {e}"));
            }
        }
        let reply = self.parts.call(cx, to, |s, cx| s.msg(cx, sender, msg));
        match reply {
            Reply::Ok(mut p) => {
                p.set("vp", hsched_core::Value::Int(i64::from(to)));
                Reply::Ok(p)
            }
            Reply::Err(e) if holds => Reply::Err(format!(
                "{e} (on VP {home}, where its reservations in force keep it)"
            )),
            other => other,
        }
    }
}

use hsched_core::Instant;

impl Scheduler for DbsParts {
    fn policy(&self) -> &'static str {
        "dbs"
    }

    /// Joins the VP with the fewest children.
    fn register_vp(&mut self, cx: &mut Cx, child: ChildId, params: &Params) -> Result<(), Reject> {
        self.parts.ensure(cx);
        let vp = (0..self.parts.subs.len() as u32)
            .min_by_key(|&v| (self.parts.count_on(v), v))
            .ok_or_else(|| Reject("dbs (partitioned) holds no VP".into()))?;
        self.parts
            .register(cx, vp, child, |s, cx| s.register_vp(cx, child, params))
    }

    crate::partition::route_to_parts!();

    fn msg(&mut self, cx: &mut Cx, from: Sender, msg: &Msg) -> Reply {
        self.parts.ensure(cx);
        let name = msg.name.as_str();
        if name != "reserve" && name != "cancel" {
            return Reply::unknown(self.policy(), msg);
        }
        let Some(child) = from.child.filter(|&c| self.parts.home(c).is_some()) else {
            return Reply::Err(format!(
                "dbs: `{name}` is for the sender's own reservations: it must come from a \
                 child of this scheduler"
            ));
        };
        if name == "reserve" {
            return self.reserve(cx, child, msg);
        }
        let vp = self.parts.home(child).unwrap_or(0);
        self.parts.call(cx, vp, |s, cx| s.msg(cx, from, msg))
    }

    /// Every VP's `dbs` keeps its own rules (its reservations pass its
    /// demand-bound test: peak load at most 1), and every child is on
    /// exactly the VP it was placed on.
    fn check_invariants(&self) -> Result<(), String> {
        self.parts.check_invariants(|s, c| s.has_child(c))
    }
}
