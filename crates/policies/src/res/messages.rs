//! `res`'s messages (see the policy's documentation): `reserve`,
//! `release`, `deadline` and `info`, and how their arguments are read.

use super::job::{Kind, State};
use super::rate::Util;
use super::scheduler::Res;
use hsched_core::{ChildId, Cx, Duration, Instant, Msg, Params, Sender, Value};

/// The child a message is about: the sender, or (from the operator) the
/// one it names with `child`, if `holds` it. Shared by `res` on one CPU
/// and partitioned.
pub(super) fn target_in(
    from: Sender,
    msg: &Msg,
    holds: impl Fn(ChildId) -> bool,
) -> Result<ChildId, String> {
    let child = match (from.child, msg.args.get("child")) {
        (Some(c), _) => c,
        (None, Some(Value::Int(i))) if from.thread.is_none() => {
            ChildId(u32::try_from(*i).map_err(|_| format!("no child {i}"))?)
        }
        (None, _) if from.thread.is_some() => {
            return Err(format!(
                "`{}` is for this scheduler's children; join it first",
                msg.name
            ))
        }
        (None, _) => return Err(format!("`{}` from the operator names a `child`", msg.name)),
    };
    match holds(child) {
        true => Ok(child),
        false => Err(format!("no child {child}")),
    }
}

impl Res {
    /// The child a message is about: the sender, or (from the operator)
    /// the one it names with `child`.
    fn target(&self, from: Sender, msg: &Msg) -> Result<ChildId, String> {
        target_in(from, msg, |c| self.children.contains(c))
    }

    pub(super) fn msg_args(msg: &Msg, allowed: &[&str]) -> Result<(), String> {
        for (k, _) in msg.args.iter() {
            if !allowed.contains(&k) {
                return Err(format!(
                    "`{}` takes {}, not `{k}`",
                    msg.name,
                    if allowed.is_empty() {
                        "no arguments".to_string()
                    } else {
                        allowed.join(", ")
                    }
                ));
            }
        }
        Ok(())
    }

    pub(super) fn duration_arg(msg: &Msg, key: &str) -> Result<Duration, String> {
        match msg.args.get(key) {
            Some(Value::Duration(d)) => Ok(*d),
            Some(Value::Int(i)) if *i >= 0 => Ok(Duration(*i as u64)),
            Some(Value::Str(s)) => Duration::parse(s).map_err(|e| format!("`{key}`: {e}")),
            Some(v) => Err(format!("`{key}` = {v}: expected a duration")),
            None => Err(format!("`{}` needs `{key}`", msg.name)),
        }
    }

    pub(super) fn reserve(
        &mut self,
        cx: &mut Cx,
        from: Sender,
        msg: &Msg,
    ) -> Result<Params, String> {
        Self::msg_args(msg, &["amount", "period", "child"])?;
        let child = self.target(from, msg)?;
        let amount = Self::duration_arg(msg, "amount")?;
        let period = Self::duration_arg(msg, "period")?;
        Self::check_reservation(amount, period)?;
        let new = Util::of(amount, period);
        let what = format!("reservation {amount} per {period} for {child}");
        let total = self.admit(Some(child), new, &what, cx.vp_count())?;
        let now = cx.now();
        self.reserved = total;
        self.modify(cx, child, |c| {
            c.kind = Kind::Reserved {
                amount,
                period,
                origin: now,
            };
            c.start_job(now, now.saturating_add(period), amount);
        });
        Ok(Params::new()
            .with("amount", Value::Duration(amount))
            .with("period", Value::Duration(period))
            .with("utilization", Value::Str(new.to_string()))
            .with("reserved", Value::Str(total.to_string())))
    }

    pub(super) fn release_reservation(
        &mut self,
        cx: &mut Cx,
        from: Sender,
        msg: &Msg,
    ) -> Result<Params, String> {
        Self::msg_args(msg, &["child"])?;
        let child = self.target(from, msg)?;
        let old = self.children[child].kind.util();
        self.reserved = self.reserved.checked_sub(old).unwrap_or(Util::ZERO);
        self.modify(cx, child, |c| {
            c.kind = Kind::Nothing;
            c.deadline = Instant::NEVER;
            c.budget = Duration::ZERO;
        });
        Ok(Params::new().with("reserved", Value::Str(self.reserved.to_string())))
    }

    pub(super) fn deadline(
        &mut self,
        cx: &mut Cx,
        from: Sender,
        msg: &Msg,
    ) -> Result<Params, String> {
        Self::msg_args(msg, &["at", "relative", "child"])?;
        let child = self.target(from, msg)?;
        let now = cx.now();
        let at = Self::duration_arg(msg, "at")?;
        let at = match msg.args.get("relative") {
            Some(Value::Bool(true)) => now.saturating_add(at),
            Some(Value::Bool(false)) | None => Instant(at.as_nanos()),
            Some(v) => return Err(format!("`relative` = {v}: expected true or false")),
        };
        if at <= now {
            return Err(format!(
                "the deadline {at} is not in the future (now {now})"
            ));
        }
        let c = &mut self.children[child];
        let Kind::Usp { upcoming, .. } = &mut c.kind else {
            return Err(format!(
                "{child} holds a reservation, not a uniformly slower processor: `deadline` is for children attached with `rate`"
            ));
        };
        let running = matches!(c.state, State::Running(_));
        if !running && c.deadline > now && at > c.deadline {
            // A later deadline only queues up: nothing waits on it yet.
            upcoming.insert(at);
            return Ok(Params::new().with("budget", Value::Duration(c.budget)));
        }
        let mut budget = Duration::ZERO;
        self.modify(cx, child, |c| {
            // (What a running child ran is charged to its old job first.)
            c.advance(now);
            let Kind::Usp { rate, upcoming } = &mut c.kind else {
                return;
            };
            let rate = *rate;
            if c.deadline.is_never() || c.deadline <= now {
                // No job: one from now to `at`.
                c.start_job(now, at, rate.of(at - now));
            } else if at < c.deadline {
                // An earlier deadline splits the current job: its share of
                // `[now, at)` now, the rest after `at`.
                upcoming.insert(c.deadline);
                c.deadline = at;
                c.budget = c.budget.min(rate.of(at - now));
            } else if at > c.deadline {
                upcoming.insert(at);
            }
            budget = c.budget;
        });
        Ok(Params::new().with("budget", Value::Duration(budget)))
    }

    pub(super) fn info(&self, from: Sender, msg: &Msg) -> Result<Params, String> {
        Self::msg_args(msg, &["child"])?;
        let child = self.target(from, msg)?;
        let c = &self.children[child];
        let mut p = match &c.kind {
            Kind::Reserved { amount, period, .. } => Params::new()
                .with("amount", Value::Duration(*amount))
                .with("period", Value::Duration(*period)),
            Kind::Usp { rate, .. } => Params::new().with("rate", Value::Str(rate.to_string())),
            Kind::Nothing => Params::new(),
        };
        p.set("budget", Value::Duration(c.budget));
        p.set("deadline", Value::Duration(Duration(c.deadline.as_nanos())));
        p.set("reserved", Value::Str(self.reserved.to_string()));
        Ok(p)
    }
}
