//! `example-edf`: earliest deadline first, each child with its own relative
//! deadline. An example hsched plugin: a policy written in its own crate,
//! outside the hsched workspace, against the published plugin API
//! (`hsched-plugin`), and loaded by `hsched` at run time
//! (`docs/plugins.md`).
//!
//! **Source.** Liu & Layland's EDF ("Scheduling Algorithms for
//! Multiprogramming in a Hard-Real-Time Environment", JACM 1973), in the
//! form of a loadable scheduler (Candea & Jones, Vassal, §3, §5), with the
//! deadline postponement of soft real-time EDF variants (a job that runs
//! past its deadline gets the next one, as CBS does for a budget).
//!
//! **Algorithm.** Each child attaches with a relative deadline `D` (child
//! parameter `deadline`; 0 takes the scheduler's `deadline`). When it asks
//! for a CPU its absolute deadline is `now + D`. Every decision runs the
//! waiting child with the earliest absolute deadline (ties: the lower child
//! id), with its deadline as the horizon. A child still running at its
//! deadline gets the next one, `deadline + k·D` for the least `k` that puts
//! it in the future, and competes again. A child that wakes with an earlier
//! deadline than a running one preempts it (on several CPUs: the running
//! child with the latest deadline, after idle CPUs are used). A thread may
//! change its own `D` with the message `deadline { relative = "5ms" }`.
//!
//! **Guarantees.** Work conserving: it asks for one CPU per runnable child.
//! Deadline postponement makes it starvation-free: a running child keeps a
//! CPU at most `D` past a waiting child's deadline before its own deadline
//! moves behind it. Without admission control it promises no deadline:
//! in HLS terms (Table 1) it turns ALL into NULL guarantees.
//!
//! **Limits.** No admission test, no budget: a child with a short `D` that
//! is CPU-bound takes most of the CPU. Decisions cost O(log n) in the
//! waiting children plus O(VPs) to find whom to preempt.

use hsched_plugin::{
    ChildId, ChildMap, CpuId, Cx, Dispatch, Duration, Instant, Msg, ParamKind, ParamSpec, Params,
    ParentVp, PolicyInfo, Reject, Reply, Scheduler, Sender, Value, VpState,
};
use std::collections::BTreeSet;

pub static INFO: PolicyInfo = PolicyInfo {
    name: "example-edf",
    summary: "earliest deadline first with a relative deadline per child (example plugin)",
    doc: "Runs the runnable child with the earliest absolute deadline (wakeup + its \
          relative deadline); a child that runs past its deadline gets the next one. \
          Preemptive, work conserving on any number of CPUs, no admission control \
          (NULL guarantees). Message `deadline { relative = DURATION }` changes the \
          sender's relative deadline. Liu & Layland 1973; shipped as an example of an \
          out-of-tree plugin policy (plugins/example-edf).",
    params,
    child_params,
    build,
    max_parents: 1,
    max_children: u32::MAX,
};

hsched_plugin::export_policy!(INFO, hls_rule = "ALL -> NULL+");

fn params() -> Vec<ParamSpec> {
    vec![ParamSpec::new(
        "deadline",
        ParamKind::Duration {
            min: Duration::from_micros(1),
        },
        "relative deadline of a child that does not give its own",
    )
    .with_default(Value::Duration(Duration::from_millis(10)))]
}

fn child_params() -> Vec<ParamSpec> {
    vec![ParamSpec::new(
        "deadline",
        ParamKind::Duration {
            min: Duration::ZERO,
        },
        "this child's relative deadline (0: the scheduler's `deadline`)",
    )
    .with_default(Value::Duration(Duration::ZERO))]
}

fn build(params: &Params) -> Result<Box<dyn Scheduler>, String> {
    Ok(Box::new(Edf::new(params.duration("deadline"))))
}

/// `deadline` if it is still ahead, else the first `deadline + k·relative`
/// after `now`.
fn postpone(deadline: Instant, relative: Duration, now: Instant) -> Instant {
    if deadline > now {
        return deadline;
    }
    let step = relative.as_nanos().max(1);
    let periods = now.saturating_since(deadline).as_nanos() / step + 1;
    deadline.saturating_add(Duration(periods.saturating_mul(step)))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Idle,
    /// In `waiting`, keyed by its deadline.
    Waiting,
    Running(ParentVp),
}

#[derive(Clone, Copy, Debug)]
struct Child {
    relative: Duration,
    deadline: Instant,
    state: State,
}

/// The EDF scheduler. See the module documentation.
pub struct Edf {
    default_relative: Duration,
    children: ChildMap<Child>,
    /// Waiting children by (deadline, id): the first is the next to run.
    waiting: BTreeSet<(Instant, ChildId)>,
    /// Per VP: the child running there.
    on_vp: Vec<Option<ChildId>>,
    /// Per VP: a preemption asked and not yet answered by a grant (the CPU
    /// will take a waiting child anyway, so do not preempt another for it).
    preempting: Vec<bool>,
    /// Waiting or running children.
    runnable: u32,
}

impl Edf {
    pub fn new(default_relative: Duration) -> Self {
        Edf {
            default_relative,
            children: ChildMap::new(),
            waiting: BTreeSet::new(),
            on_vp: Vec::new(),
            preempting: Vec::new(),
            runnable: 0,
        }
    }

    fn fit(&mut self, vp: ParentVp) {
        if vp.index() >= self.on_vp.len() {
            self.on_vp.resize(vp.index() + 1, None);
            self.preempting.resize(vp.index() + 1, false);
        }
    }

    /// Whatever ran on `vp` stopped; if it still wants a CPU it waits again,
    /// with its next deadline if it ran past this one.
    fn stop(&mut self, vp: ParentVp, now: Instant) {
        let Some(id) = self.on_vp.get_mut(vp.index()).and_then(Option::take) else {
            return;
        };
        let child = &mut self.children[id];
        if child.state != State::Running(vp) {
            return;
        }
        child.deadline = postpone(child.deadline, child.relative, now);
        child.state = State::Waiting;
        self.waiting.insert((child.deadline, id));
    }

    /// A child stopped wanting a CPU, whatever its state was.
    fn forget(&mut self, id: ChildId, child: Child) {
        match child.state {
            State::Idle => return,
            State::Waiting => {
                self.waiting.remove(&(child.deadline, id));
            }
            // Its CPU is re-decided by the grant that follows.
            State::Running(vp) => self.on_vp[vp.index()] = None,
        }
        self.runnable -= 1;
    }

    /// Waiting children that beat running ones take idle CPUs first, then
    /// preempt the running children with the latest deadlines.
    fn preempt_if_needed(&mut self, cx: &mut Cx) {
        if self.waiting.is_empty() {
            return;
        }
        let spare = (0..cx.vp_count())
            .map(ParentVp)
            .filter(|vp| {
                let held = matches!(cx.vp_state(*vp), VpState::Held(_));
                let free = self.on_vp.get(vp.index()).copied().flatten().is_none();
                let preempting = self.preempting.get(vp.index()).copied().unwrap_or(false);
                (held && free) || preempting
            })
            .count();
        let mut running: Vec<(Instant, ParentVp)> = self
            .on_vp
            .iter()
            .enumerate()
            .filter(|(v, _)| !self.preempting[*v])
            .filter_map(|(v, c)| c.map(|c| (self.children[c].deadline, ParentVp(v as u32))))
            .collect();
        running.sort_unstable_by(|a, b| b.cmp(a)); // latest deadline first
        let mut victims = Vec::new();
        for (&(waiting, _), &(deadline, vp)) in self.waiting.iter().skip(spare).zip(&running) {
            if waiting >= deadline {
                break;
            }
            victims.push(vp);
        }
        for vp in victims {
            self.preempting[vp.index()] = true;
            cx.reschedule(vp);
        }
    }

    fn set_relative(&mut self, from: Sender, msg: &Msg) -> Reply {
        let Some(id) = from.child else {
            return Reply::Err("`deadline` comes from a child of this scheduler".into());
        };
        let relative = match msg.args.get("relative") {
            Some(Value::Duration(d)) => *d,
            Some(Value::Int(ns)) if *ns >= 0 => Duration(*ns as u64),
            Some(Value::Str(s)) => match Duration::parse(s) {
                Ok(d) => d,
                Err(e) => return Reply::Err(format!("`relative`: {e}")),
            },
            _ => return Reply::Err("`deadline` needs `relative`, a duration".into()),
        };
        if relative.is_zero() {
            return Reply::Err("`relative` must be positive".into());
        }
        let child = &mut self.children[id];
        child.relative = relative;
        // Takes effect from the next wakeup or postponement.
        Reply::Ok(
            Params::new()
                .with("relative", Value::Duration(relative))
                .with(
                    "deadline",
                    Value::Duration(Duration(child.deadline.as_nanos())),
                ),
        )
    }
}

impl Scheduler for Edf {
    fn policy(&self) -> &'static str {
        "example-edf"
    }

    fn register_vp(&mut self, _cx: &mut Cx, child: ChildId, params: &Params) -> Result<(), Reject> {
        let own = params.duration("deadline");
        let relative = if own.is_zero() {
            self.default_relative
        } else {
            own
        };
        self.children.insert(
            child,
            Child {
                relative,
                deadline: Instant::ZERO,
                state: State::Idle,
            },
        );
        Ok(())
    }

    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        if let Some(c) = self.children.remove(child) {
            if c.state != State::Idle {
                self.forget(child, c);
                cx.want_cpus(self.runnable);
            }
        }
    }

    fn vp_request(&mut self, cx: &mut Cx, id: ChildId) {
        let child = &mut self.children[id];
        if child.state != State::Idle {
            return;
        }
        child.deadline = cx.now().saturating_add(child.relative);
        child.state = State::Waiting;
        self.waiting.insert((child.deadline, id));
        self.runnable += 1;
        cx.want_cpus(self.runnable);
        self.preempt_if_needed(cx);
    }

    fn vp_release(&mut self, cx: &mut Cx, id: ChildId) {
        let child = self.children[id];
        if child.state == State::Idle {
            return;
        }
        self.forget(id, child);
        self.children[id].state = State::Idle;
        cx.want_cpus(self.runnable);
    }

    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) -> Dispatch {
        self.fit(vp);
        self.preempting[vp.index()] = false;
        self.stop(vp, cx.now());
        let Some((deadline, id)) = self.waiting.pop_first() else {
            return Dispatch::Release;
        };
        // A child that waited past its deadline runs until its next one.
        let child = &mut self.children[id];
        let deadline = postpone(deadline, child.relative, cx.now());
        child.deadline = deadline;
        child.state = State::Running(vp);
        self.on_vp[vp.index()] = Some(id);
        Dispatch::Run {
            child: id,
            until: deadline,
        }
    }

    fn vp_revoke(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) {
        self.fit(vp);
        self.preempting[vp.index()] = false;
        self.stop(vp, cx.now());
    }

    fn msg(&mut self, _cx: &mut Cx, from: Sender, msg: &Msg) -> Reply {
        match msg.name.as_str() {
            "deadline" => self.set_relative(from, msg),
            _ => Reply::unknown("example-edf", msg),
        }
    }

    fn check_invariants(&self) -> Result<(), String> {
        let mut runnable = 0;
        for (id, c) in self.children.iter() {
            match c.state {
                State::Idle => {}
                State::Waiting => {
                    runnable += 1;
                    if !self.waiting.contains(&(c.deadline, id)) {
                        return Err(format!("{id} waits but is not queued at {}", c.deadline));
                    }
                }
                State::Running(vp) => {
                    runnable += 1;
                    if self.on_vp.get(vp.index()).copied().flatten() != Some(id) {
                        return Err(format!("{id} runs on {vp}, which does not know it"));
                    }
                }
            }
            if c.relative.is_zero() {
                return Err(format!("{id} has a zero relative deadline"));
            }
        }
        for &(deadline, id) in &self.waiting {
            match self.children.get(id) {
                Some(c) if c.state == State::Waiting && c.deadline == deadline => {}
                other => return Err(format!("{id} is queued at {deadline} but is {other:?}")),
            }
        }
        for (v, on) in self.on_vp.iter().enumerate() {
            if let Some(id) = on {
                let vp = ParentVp(v as u32);
                if self.children.get(*id).map(|c| c.state) != Some(State::Running(vp)) {
                    return Err(format!("{vp} runs {id}, which is not running there"));
                }
            }
        }
        if runnable != self.runnable {
            return Err(format!(
                "runnable count is {} but {runnable} children are runnable",
                self.runnable
            ));
        }
        Ok(())
    }
}
