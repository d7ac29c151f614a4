//! The hsched programs made of rt-app events:
//! runs, spins, sleeps, periodic jobs for timers, mutexes, semaphores for
//! rt-app's condition variables and suspend/resume, barriers for its
//! barriers, loops for `loop`.

use super::event::{Event, EventKind};
use super::members::Cx;
use super::model::{Phase, Task, MAX_DURATION_US};
use crate::import::{toml_duration, toml_string};
use std::collections::{BTreeMap, BTreeSet};

/// One operation of an hsched program (durations in ns).
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Op {
    Run(u64),
    Spin(u64),
    Sleep(u64),
    Periodic {
        period: u64,
        jobs: Option<u64>,
        body: Vec<Op>,
    },
    Lock(String),
    Unlock(String),
    Signal(String),
    Wait(String),
    Barrier(String),
    Yield,
    Loop {
        count: Option<u64>,
        body: Vec<Op>,
    },
    /// Move to scheduler `to` with these attachment parameters (an inline
    /// table, empty for none): the dispatcher's `join` message.
    Join {
        to: String,
        args: String,
    },
}

impl Op {
    /// Writes the operation as one element of a TOML program array.
    pub(super) fn write(&self, out: &mut String, depth: usize) {
        let pad = "  ".repeat(depth);
        let line = match self {
            Op::Run(ns) => format!("{{ run = {} }}", toml_duration(*ns)),
            Op::Spin(ns) => format!("{{ spin = {} }}", toml_duration(*ns)),
            Op::Sleep(ns) => format!("{{ sleep = {} }}", toml_duration(*ns)),
            Op::Lock(m) => format!("{{ lock = {} }}", toml_string(m)),
            Op::Unlock(m) => format!("{{ unlock = {} }}", toml_string(m)),
            Op::Signal(s) => format!("{{ signal = {} }}", toml_string(s)),
            Op::Wait(s) => format!("{{ wait = {} }}", toml_string(s)),
            Op::Barrier(b) => format!("{{ barrier = {} }}", toml_string(b)),
            Op::Yield => "{ yield = true }".to_string(),
            Op::Join { to, args } => format!(
                "{{ msg = {{ to = {}, name = \"join\"{} }} }}",
                toml_string(to),
                if args.is_empty() {
                    String::new()
                } else {
                    format!(", args = {args}")
                }
            ),
            Op::Periodic { period, jobs, body } => {
                let jobs = jobs.map(|j| format!(", jobs = {j}")).unwrap_or_default();
                out.push_str(&format!(
                    "{pad}{{ periodic = {{ period = {}{jobs}, body = [\n",
                    toml_duration(*period)
                ));
                for op in body {
                    op.write(out, depth + 1);
                }
                out.push_str(&format!("{pad}] }} }},\n"));
                return;
            }
            Op::Loop { count, body } => {
                let count = count.map(|c| format!("count = {c}, ")).unwrap_or_default();
                out.push_str(&format!("{pad}{{ loop = {{ {count}body = [\n"));
                for op in body {
                    op.write(out, depth + 1);
                }
                out.push_str(&format!("{pad}] }} }},\n"));
                return;
            }
        };
        out.push_str(&format!("{pad}{line},\n"));
    }
}

/// Whether the operations make the clock move (as the scenario parser
/// demands of a loop that runs for ever).
fn takes_time(ops: &[Op]) -> bool {
    ops.iter().any(|op| match op {
        Op::Run(d) | Op::Spin(d) | Op::Sleep(d) => *d > 0,
        // Its releases are a period apart, so from the second job on it
        // waits; a single job takes only what its body takes.
        Op::Periodic { jobs, body, .. } => match jobs {
            None => true,
            Some(j) => *j >= 2 || (*j == 1 && takes_time(body)),
        },
        Op::Loop { count, body } => *count != Some(0) && takes_time(body),
        _ => false,
    })
}

fn us_to_ns(us: i64, e: &Event, cx: &mut Cx) -> u64 {
    if us < 0 {
        cx.warn(e.pos, &e.path, format!("{us}us is negative: taken as 0"));
    }
    if us > 0 && us as u64 > MAX_DURATION_US {
        cx.out_of_range(
            e.pos,
            &e.path,
            format!(
                "{us}us is out of range: at most {}us (MAX_DURATION_US, 64-bit nanoseconds)",
                MAX_DURATION_US
            ),
        );
    }
    (us.max(0) as u64).saturating_mul(1000)
}

/// What every task's events tell about the others: who waits on which
/// name, which names are woken one waiter at a time, which timers and
/// barriers are shared.
struct Facts {
    /// The tasks (with their instance counts) waiting on each name.
    waiters: BTreeMap<String, Vec<(String, u64)>>,
    /// Names some event wakes one waiter of (`signal`, `sync`, `sem_post`):
    /// those stay one semaphore for all their waiters.
    wake_one: BTreeSet<String>,
    /// Non-unique timer names and the tasks (with instance counts) using them.
    timers: BTreeMap<String, Vec<(String, u64)>>,
    /// Barrier names and the tasks using them, once per event (with
    /// instance counts).
    barriers: BTreeMap<String, Vec<(String, u64)>>,
    /// The barriers hsched's `barrier` expresses: at least two tasks, each
    /// one thread using it once.
    exact_barriers: BTreeSet<String>,
}

fn wait_name<'a>(task: &'a Task, kind: &'a EventKind) -> Option<&'a str> {
    match kind {
        EventKind::Wait { cond, .. } | EventKind::Sync { cond, .. } => Some(cond),
        EventKind::Suspend(name) => Some(name.as_deref().unwrap_or(&task.name)),
        EventKind::SemWait(s) => Some(s),
        _ => None,
    }
}

fn facts(tasks: &[Task]) -> Facts {
    let mut f = Facts {
        waiters: BTreeMap::new(),
        wake_one: BTreeSet::new(),
        timers: BTreeMap::new(),
        barriers: BTreeMap::new(),
        exact_barriers: BTreeSet::new(),
    };
    for t in tasks.iter().filter(|t| t.instances > 0) {
        let mut waits = BTreeSet::new();
        for e in t.phases.iter().flat_map(|p| &p.events) {
            if let Some(w) = wait_name(t, &e.kind) {
                waits.insert(w.to_string());
            }
            match &e.kind {
                EventKind::Signal(s) | EventKind::SemPost(s) | EventKind::Sync { cond: s, .. } => {
                    f.wake_one.insert(s.clone());
                }
                EventKind::Timer { reference, .. } if !reference.starts_with("unique") => {
                    let users = f.timers.entry(reference.clone()).or_default();
                    if !users.iter().any(|(n, _)| n == &t.name) {
                        users.push((t.name.clone(), t.instances));
                    }
                }
                EventKind::Barrier(b) => f
                    .barriers
                    .entry(b.clone())
                    .or_default()
                    .push((t.name.clone(), t.instances)),
                _ => {}
            }
        }
        for w in waits {
            f.waiters
                .entry(w)
                .or_default()
                .push((t.name.clone(), t.instances));
        }
    }
    for (name, users) in &f.barriers {
        let tasks: BTreeSet<&str> = users.iter().map(|(n, _)| n.as_str()).collect();
        let single = users.iter().all(|(_, c)| *c == 1) && tasks.len() == users.len();
        if single && users.len() > 1 {
            f.exact_barriers.insert(name.clone());
        }
    }
    f
}

impl Facts {
    /// Whether each waiting task gets its own semaphore for `name`: when
    /// several tasks wait on it and it is only ever broadcast (`resume`,
    /// `broad`), so that a broadcast reaches each of them.
    fn per_waiter(&self, name: &str) -> bool {
        !self.wake_one.contains(name) && self.waiters.get(name).is_some_and(|w| w.len() > 1)
    }

    /// The semaphore task `task` waits on for rt-app's `name`.
    fn wait_sem(&self, name: &str, task: &str) -> String {
        if self.per_waiter(name) {
            format!("{name}@{task}")
        } else {
            name.to_string()
        }
    }
}

/// Per-file state of the warnings given once.
struct Once {
    lost_wakeup: bool,
    counting: bool,
    shared_timers: BTreeSet<String>,
    phase_class_warned: BTreeSet<String>,
}

/// Each task's program (`None`: the task makes no thread).
pub(super) fn programs(tasks: &[Task], horizon_ns: u64, cx: &mut Cx) -> Vec<Option<Vec<Op>>> {
    let f = facts(tasks);
    let mut once = Once {
        lost_wakeup: false,
        counting: false,
        shared_timers: BTreeSet::new(),
        phase_class_warned: BTreeSet::new(),
    };
    let mut programs: Vec<Option<Vec<Op>>> = tasks
        .iter()
        .map(|t| task_program(t, &f, &mut once, cx))
        .collect();
    // What is signalled, as emitted (a resume with nobody else to wake
    // emits nothing).
    let mut signalled = BTreeSet::new();
    for p in programs.iter().flatten() {
        collect_signals(p, &mut signalled);
    }
    for (t, p) in tasks.iter().zip(programs.iter_mut()) {
        if let Some(p) = p {
            fix_waits(p, t, &signalled, horizon_ns, cx);
            fix_forever(p, t, cx);
            if p.is_empty() {
                p.push(Op::Run(0));
            }
        }
    }
    programs
}

fn collect_signals(ops: &[Op], out: &mut BTreeSet<String>) {
    for op in ops {
        match op {
            Op::Signal(s) => {
                out.insert(s.clone());
            }
            Op::Loop { body, .. } | Op::Periodic { body, .. } => collect_signals(body, out),
            _ => {}
        }
    }
}

fn task_program(t: &Task, f: &Facts, once: &mut Once, cx: &mut Cx) -> Option<Vec<Op>> {
    if t.instances == 0 {
        cx.warn(
            t.pos,
            &t.path,
            "`instance: 0`: rt-app creates this task only when another forks it, and hsched does not model `fork`: no thread",
        );
        return None;
    }
    let locked: BTreeSet<&str> = t
        .phases
        .iter()
        .flat_map(|p| &p.events)
        .filter_map(|e| match &e.kind {
            EventKind::Lock(m) => Some(m.as_str()),
            _ => None,
        })
        .collect();
    let mut relative_warned = false;
    let mut first_use: BTreeMap<String, usize> = BTreeMap::new();
    let mut ops = Vec::new();
    // Per phase: Some(cycle length) when it is a periodic of finite jobs.
    let mut timed: Vec<Option<u64>> = Vec::new();
    let n = t.phases.len();
    for (i, ph) in t.phases.iter().enumerate() {
        if let Some((class, pos)) = &ph.class {
            let (to, args) = class.placement();
            if !once.phase_class_warned.contains(&t.name) {
                once.phase_class_warned.insert(t.name.clone());
                cx.warn(*pos, &ph.path, "scheduling parameters that change per phase: the thread joins the phase's class (a `join` message) when the phase starts; `hsched check` analyses the hierarchy at time 0 only, and a deadline reservation the `res` cannot admit then is refused (logged) and the thread stays where it is");
            }
            ops.push(Op::Join { to, args });
        }
        let timers: Vec<&Event> = ph
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Timer { .. }))
            .collect();
        for e in &timers {
            let EventKind::Timer {
                reference,
                absolute,
                ..
            } = &e.kind
            else {
                continue;
            };
            let first = *first_use.entry(reference.clone()).or_insert(i);
            if first == i && i > 0 {
                cx.warn(e.pos, &e.path, format!("rt-app counts timer `{reference}`'s periods from the thread's start, hsched's periodic from the start of this phase: releases are shifted by however long the phases before it took"));
            }
            if !absolute && !relative_warned {
                relative_warned = true;
                cx.warn(e.pos, &e.path, "relative timer mode (rt-app's default): after a job overruns its period rt-app restarts the period from the late wakeup; hsched's periodic keeps the original grid (rt-app's absolute mode); the same while no job overruns");
            }
            if let Some(users) = f.timers.get(reference) {
                let shared = users.len() > 1 || users[0].1 > 1;
                if shared && once.shared_timers.insert(reference.clone()) {
                    let names: Vec<String> = users
                        .iter()
                        .map(|(n, c)| {
                            if *c > 1 {
                                format!("{n} ({c} instances)")
                            } else {
                                n.clone()
                            }
                        })
                        .collect();
                    cx.warn(e.pos, &e.path, format!("timer `{reference}` is shared by {}: rt-app advances one timer from all of them, hsched gives each thread its own period grid (prefix the name with `unique` to get this in rt-app too)", names.join(", ")));
                }
            }
        }
        let last_is_timer = matches!(ph.events.last().map(|e| &e.kind), Some(EventKind::Timer { period, .. }) if *period > 0);
        if timers.len() == 1 && last_is_timer {
            let timer = timers[0];
            let EventKind::Timer { period, .. } = timer.kind else {
                unreachable!()
            };
            let period = us_to_ns(period, timer, cx);
            let mut body = Vec::new();
            for e in &ph.events[..ph.events.len() - 1] {
                event_ops(e, t, f, &locked, once, &mut body, cx);
            }
            if body.is_empty() {
                body.push(Op::Run(0));
            }
            timed.push(ph.loops.map(|l| l.saturating_mul(period)));
            ops.push(Op::Periodic {
                period,
                jobs: ph.loops,
                body,
            });
        } else {
            timed.push(None);
            let mut body = Vec::new();
            for e in &ph.events {
                if let EventKind::Timer { period, .. } = e.kind {
                    if period <= 0 {
                        cx.warn(e.pos, &e.path, "a timer of period 0 never waits: dropped");
                        continue;
                    }
                    cx.warn(e.pos, &e.path, "a timer that is not the last event of its phase (or one of several): mapped to a sleep of its period, which does not keep rt-app's fixed period grid");
                    body.push(Op::Sleep(us_to_ns(period, e, cx)));
                    continue;
                }
                event_ops(e, t, f, &locked, once, &mut body, cx);
            }
            if body.is_empty() {
                body.push(Op::Run(0));
            }
            match ph.loops {
                Some(1) => ops.extend(body),
                count => ops.push(Op::Loop { count, body }),
            }
        }
    }
    // A thread whose every phase is a finite periodic repeats on the
    // timers' cycle: one periodic of the cycle's length around the phases
    // keeps each cycle on rt-app's grid.
    let cycle: Option<u64> = timed
        .iter()
        .try_fold(0u64, |acc, c| c.map(|c| acc.saturating_add(c)));
    let wrapped = t.loops != Some(1) && cycle.is_some_and(|c| c > 0);
    for (i, ph) in t.phases.iter().enumerate() {
        let Some(_) = timed[i] else { continue };
        let last_phase = i + 1 == n;
        let followed = !last_phase || (t.loops != Some(1) && !wrapped);
        if followed {
            let timer = ph.events.last().expect("a timed phase ends with its timer");
            cx.warn(timer.pos, &timer.path, format!("the last timer expiry of phase `{}` is not waited for: hsched's periodic ends with its last job, so what follows starts when that job finishes{}", phase_name(ph), if wrapped { " (each cycle of the thread's phases still starts on rt-app's grid)" } else { "" }));
        }
    }
    let program = match (t.loops, wrapped) {
        (Some(1), _) => ops,
        (jobs, true) => vec![Op::Periodic {
            period: cycle.unwrap_or(1),
            jobs,
            body: ops,
        }],
        (count, false) => vec![Op::Loop { count, body: ops }],
    };
    Some(program)
}

fn phase_name(ph: &Phase) -> &str {
    ph.path.rsplit('.').next().unwrap_or(&ph.path)
}

/// A resume or broadcast on `name` from task `from` wakes every other
/// thread waiting on it in rt-app: one signal per thread that can be
/// waiting there, to each waiting task's own semaphore when several tasks
/// wait (see [`Facts::per_waiter`]).
fn broadcast(name: &str, from: &Task, e: &Event, f: &Facts, cx: &mut Cx, out: &mut Vec<Op>) {
    let mut total = 0;
    for (task, count) in f.waiters.get(name).map(Vec::as_slice).unwrap_or(&[]) {
        // The thread resuming is not waiting: only its other instances can be.
        let n = if *task == from.name {
            count - 1
        } else {
            *count
        };
        for _ in 0..n {
            out.push(Op::Signal(f.wait_sem(name, task)));
        }
        total += n;
    }
    if total == 0 {
        cx.warn(
            e.pos,
            &e.path,
            format!("no other thread waits on `{name}`: this wakes nobody (dropped)"),
        );
    } else if total > 1 {
        cx.warn(e.pos, &e.path, format!("wakes every thread waiting on `{name}` ({total} can): mapped to one signal for each, which, with that thread not waiting, stays pending for it"));
    }
}

/// rt-app's barrier: every participant waits until all have arrived,
/// which hsched's `barrier` does exactly (its parties are the threads that
/// use it) when each participant is one thread passing it once per round.
fn barrier(name: &str, e: &Event, f: &Facts, out: &mut Vec<Op>, cx: &mut Cx) {
    if f.exact_barriers.contains(name) {
        out.push(Op::Barrier(name.to_string()));
        return;
    }
    let users = f.barriers.get(name).map(Vec::len).unwrap_or(0);
    if users <= 1 {
        cx.warn(
            e.pos,
            &e.path,
            format!("barrier `{name}` has no other user: it never waits (dropped)"),
        );
    } else {
        cx.warn(e.pos, &e.path, format!("barrier `{name}` is used by a task with several instances or several times by one task, which hsched cannot emulate: dropped, so the threads do not wait for each other here"));
    }
}

fn event_ops(
    e: &Event,
    t: &Task,
    f: &Facts,
    locked: &BTreeSet<&str>,
    once: &mut Once,
    out: &mut Vec<Op>,
    cx: &mut Cx,
) {
    let lost_wakeup = |once: &mut Once, cx: &mut Cx| {
        if !once.lost_wakeup {
            once.lost_wakeup = true;
            cx.warn(e.pos, &e.path, "rt-app's signal, broad and resume wake only threads already waiting (a condition variable: with nobody waiting the wakeup is lost); hsched's semaphores keep one pending wakeup, so a later wait passes at once");
        }
    };
    match &e.kind {
        EventKind::Run(us) => out.push(Op::Run(us_to_ns(*us, e, cx))),
        EventKind::Runtime(us) => out.push(Op::Spin(us_to_ns(*us, e, cx))),
        EventKind::Sleep(us) => out.push(Op::Sleep(us_to_ns(*us, e, cx))),
        EventKind::Timer { .. } => unreachable!("timers are handled per phase"),
        EventKind::Lock(m) => out.push(Op::Lock(m.clone())),
        EventKind::Unlock(m) => out.push(Op::Unlock(m.clone())),
        EventKind::Signal(s) => {
            lost_wakeup(once, cx);
            out.push(Op::Signal(s.clone()));
        }
        EventKind::Broad(s) | EventKind::Resume(s) => {
            lost_wakeup(once, cx);
            broadcast(s, t, e, f, cx, out);
        }
        EventKind::Wait { cond, mutex } => {
            // pthread_cond_wait: the mutex is let go while waiting.
            let sem = f.wait_sem(cond, &t.name);
            if locked.contains(mutex.as_str()) {
                out.push(Op::Unlock(mutex.clone()));
                out.push(Op::Wait(sem));
                out.push(Op::Lock(mutex.clone()));
            } else {
                out.push(Op::Wait(sem));
            }
        }
        EventKind::Sync { cond, mutex } => {
            lost_wakeup(once, cx);
            cx.warn(e.pos, &e.path, format!("signal-and-wait on `{cond}`: with nobody waiting, hsched's semaphore keeps the signal and this thread's own wait then takes it (rt-app's is lost and the thread waits)"));
            out.push(Op::Signal(cond.clone()));
            if locked.contains(mutex.as_str()) {
                out.push(Op::Unlock(mutex.clone()));
                out.push(Op::Wait(cond.clone()));
                out.push(Op::Lock(mutex.clone()));
            } else {
                out.push(Op::Wait(cond.clone()));
            }
        }
        EventKind::Suspend(name) => {
            out.push(Op::Wait(f.wait_sem(name.as_deref().unwrap_or(&t.name), &t.name)))
        }
        EventKind::Yield => out.push(Op::Yield),
        EventKind::Barrier(b) => barrier(b, e, f, out, cx),
        EventKind::Fork(name) => cx.warn(e.pos, &e.path, format!("fork of `{name}` is not modelled (hsched threads are all created from the scenario): dropped")),
        EventKind::Load(kind) => cx.warn(e.pos, &e.path, format!("`{kind}` (memory or I/O load) is not modelled: dropped")),
        EventKind::SemPost(s) => {
            if !once.counting {
                once.counting = true;
                cx.warn(e.pos, &e.path, "rt-app's sem_post/sem_wait use a counting semaphore; hsched's is binary: posts beyond one pending are lost");
            }
            out.push(Op::Signal(s.clone()));
        }
        EventKind::SemWait(s) => out.push(Op::Wait(s.clone())),
    }
}

/// A wait nothing signals blocks for ever in rt-app; the scenario parser
/// refuses it (a misspelt name), so it becomes a sleep to the horizon. An
/// unlock of a mutex the thread never locks is dropped (the parser refuses
/// it; rt-app's does nothing useful).
fn fix_waits(
    ops: &mut Vec<Op>,
    t: &Task,
    signalled: &BTreeSet<String>,
    horizon_ns: u64,
    cx: &mut Cx,
) {
    let mut warned = BTreeSet::new();
    let mut locks = BTreeSet::new();
    collect_locks(ops, &mut locks);
    fix_waits_in(ops, t, signalled, horizon_ns, &locks, &mut warned, cx);
}

fn collect_locks(ops: &[Op], locks: &mut BTreeSet<String>) {
    for op in ops {
        match op {
            Op::Lock(m) => {
                locks.insert(m.clone());
            }
            Op::Loop { body, .. } | Op::Periodic { body, .. } => collect_locks(body, locks),
            _ => {}
        }
    }
}

fn fix_waits_in(
    ops: &mut Vec<Op>,
    t: &Task,
    signalled: &BTreeSet<String>,
    horizon_ns: u64,
    locks: &BTreeSet<String>,
    warned: &mut BTreeSet<String>,
    cx: &mut Cx,
) {
    ops.retain(|op| match op {
        Op::Unlock(m) if !locks.contains(m) => {
            if warned.insert(format!("unlock {m}")) {
                cx.warn(
                    t.pos,
                    &t.path,
                    format!("unlocks mutex `{m}` without ever locking it: the unlock is dropped"),
                );
            }
            false
        }
        _ => true,
    });
    for op in ops.iter_mut() {
        match op {
            Op::Wait(s) if !signalled.contains(s.as_str()) => {
                if warned.insert(format!("wait {s}")) {
                    cx.warn(t.pos, &t.path, format!("waits on `{s}`, which no thread signals or resumes: rt-app blocks there for ever; hsched sleeps to the horizon instead"));
                }
                *op = Op::Sleep(horizon_ns);
            }
            Op::Loop { body, .. } | Op::Periodic { body, .. } => {
                fix_waits_in(body, t, signalled, horizon_ns, locks, warned, cx);
                if body.is_empty() {
                    body.push(Op::Run(0));
                }
            }
            _ => {}
        }
    }
}

/// A loop for ever must make the clock move (the scenario parser refuses
/// one that does not: it would stop the clock).
fn fix_forever(ops: &mut [Op], t: &Task, cx: &mut Cx) {
    for op in ops.iter_mut() {
        match op {
            Op::Loop { count: None, body } if !takes_time(body) => {
                cx.warn(t.pos, &t.path, "loops for ever through events that take no time: 1us of run added to each pass, about what rt-app spends on a pass itself (hsched refuses a loop that would stop the clock)");
                body.push(Op::Run(1000));
                fix_forever(body, t, cx);
            }
            Op::Loop { body, .. } | Op::Periodic { body, .. } => fix_forever(body, t, cx),
            _ => {}
        }
    }
}
