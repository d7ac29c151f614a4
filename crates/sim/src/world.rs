//! The simulated machine: CPUs, threads running their workload programs,
//! mutexes, the event queue, and the accounting that becomes a `RunResult`.
//! It is the `Platform` the dispatcher drives.

use crate::jobs::JobStore;
use crate::program::{
    compile, ConstraintsPhase, ConstraintsState, Cursor, Instr, RandresPhase, RandresState,
    SyncKind,
};
use hsched_core::{CpuId, Duration, Instant, Msg, MutexProtocol, SyncEvent, ThreadId, Value};
use hsched_dispatch::{Dispatcher, Platform};
use hsched_model::{
    draw, Action, JobRecord, LogEntry, LogKind, MarkKind, Scenario, Target, ThreadResult, Trace,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::rc::Rc;

/// How many segments and marks a trace holds by default before it is
/// dropped (about 40 bytes each: some 80 MB): enough for a minute of a
/// busy 8-CPU machine at a 1 ms tick, while a run of a 1 ns period
/// cannot fill memory with its timeline.
pub const DEFAULT_TRACE_LIMIT: usize = 2_000_000;

pub use hsched_model::MAX_KEPT_LATENCIES;

/// How many log entries of its workload (message replies and refusals,
/// moves) a run keeps (some 100 bytes each: about 10 MB); a program that
/// sends a message every few nanoseconds would otherwise fill memory.
pub const MAX_LOG_ENTRIES: usize = 100_000;

/// Records one wakeup latency of a thread within the bound.
fn add_latency(stats: &mut ThreadResult, latency: Duration) {
    hsched_model::record_latency(
        &mut stats.wakeup_latencies,
        &mut stats.wakeup_sketch,
        latency,
    );
}

mod accounts;
mod domains;
mod step;
mod trains;
pub use domains::{CallOutcome, CallRecord, MAX_DEPTH};
use domains::{Domain, Record};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Ev {
    /// Thread spec `i` arrives.
    Arrive(usize),
    /// A sleeping (or release-waiting) thread wakes, if `gen` is current.
    Wake(ThreadId, u64),
    /// Script step `i`.
    Script(usize),
    /// A `randres` job's deadline: abandon it if unfinished, if `gen` is current.
    Abort(ThreadId, u64),
    /// A `spin`'s wall time is up, if `gen` is current.
    SpinEnd(ThreadId, u64),
    /// Interrupt stream `i` (one source on one CPU) fires.
    Interrupt(usize),
    /// An interrupt handler returns and signals semaphore `i` (deferred
    /// work, BVT §2.3).
    IrqSignal(usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    NeedsCpu,
    Blocked,
    /// Blocked involuntarily (a page fault).
    Faulted,
    Exit,
}

struct SimCpu {
    thread: Option<ThreadId>,
    seg_start: Instant,
    switch_end: Instant,
    last: Option<ThreadId>,
    busy: Duration,
    overhead: Duration,
    idle: Duration,
    last_segment: Option<usize>,
    /// When the running thread's current `run` ends, and its sequence number.
    completion: Option<(Instant, u64)>,
    /// Until when interrupt handlers hold the CPU: the time from
    /// `seg_start` to here is theirs, before any switch or run.
    irq_end: Instant,
    /// Time spent in handlers, and how many arrived.
    interrupt: Duration,
    interrupts: u64,
}

/// One interrupt source on one CPU: its own arrivals from its own stream.
struct IrqStream {
    cpu: usize,
    every: hsched_model::Dist,
    duration: hsched_model::Dist,
    rng: ChaCha8Rng,
    /// The semaphore its handlers signal on returning.
    signal: Option<usize>,
}

/// Interrupt streams draw from ChaCha8 streams numbered from here (the
/// threads' are 1 up to their count, at most `MAX_THREADS`): source `s`
/// on CPU `c` is stream `IRQ_STREAMS + s * 2^16 + c` (at most 4096 CPUs),
/// so adding a source or a thread changes no other stream's draws.
const IRQ_STREAMS: u64 = 1 << 62;

struct SimThread {
    code: Rc<[Instr]>,
    cursor: Cursor,
    rng: ChaCha8Rng,
    /// CPU time left in the current `run`.
    remaining: Duration,
    /// What the dispatcher was told: runnable or not.
    runnable: bool,
    exited: bool,
    /// Bumped whenever a pending `Wake` becomes stale.
    wake_gen: u64,
    /// Bumped whenever a pending `Abort` becomes stale.
    abort_gen: u64,
    /// Generation of the pending `SpinEnd`.
    spin_gen: u64,
    cpu: Option<CpuId>,
    last_cpu: Option<CpuId>,
    woke_at: Option<Instant>,
    waiting_since: Option<Instant>,
    /// The wakeup job waiting for the thread's next dispatch (a reply with
    /// `wakeup`, see `send`), and how many wakeup jobs it has had.
    wakeup_job: Option<usize>,
    wakeup_jobs: u64,
    stats: ThreadResult,
    /// The domain it is in now (its home, or a train call's server).
    domain: usize,
    /// Train invocation records, innermost last.
    stack: Vec<Record>,
    /// The RPC call it is blocked on.
    waiting_call: Option<usize>,
    /// Its domain was killed: its next step returns to its first valid
    /// caller with `server exit`, or ends the thread.
    leaving: bool,
    /// A semaphore signal handed to it while it waited: when it was given.
    signalled: Option<Instant>,
}

struct MutexState {
    owner: Option<ThreadId>,
    waiters: VecDeque<ThreadId>,
    /// As declared (`[[mutex]]`); passed on with every event about it.
    protocol: MutexProtocol,
}

impl MutexState {
    fn new(protocol: MutexProtocol) -> Self {
        MutexState {
            owner: None,
            waiters: VecDeque::new(),
            protocol,
        }
    }
}

/// A binary semaphore: set (with the time of the signal that set it) or
/// not, and the threads waiting on it in arrival order.
#[derive(Default)]
struct SemaphoreState {
    set_at: Option<Instant>,
    waiters: VecDeque<ThreadId>,
}

/// A barrier: how many threads it holds back until the last arrives, and
/// those waiting at it now, in arrival order.
struct BarrierState {
    parties: usize,
    arrived: Vec<ThreadId>,
}

pub(crate) struct World {
    seed: u64,
    cs: Duration,
    cpus: Vec<SimCpu>,
    threads: Vec<SimThread>,
    pub(crate) events: BinaryHeap<Reverse<(Instant, u64, Ev)>>,
    seq: u64,
    mutex_names: Vec<String>,
    mutexes: Vec<MutexState>,
    semaphore_names: Vec<String>,
    semaphores: Vec<SemaphoreState>,
    barrier_names: Vec<String>,
    barriers: Vec<BarrierState>,
    /// Each barrier's parties: the threads whose programs use it.
    barrier_parties: HashMap<String, usize>,
    /// Threads handed a mutex or a signal, to be resumed once the current
    /// step is done.
    handed_over: Vec<ThreadId>,
    /// `handed_over` is being worked through (by the outermost `resume`):
    /// a nested `resume` leaves what it hands over to that loop, so a
    /// barrier releasing thousands of threads does not nest as deep.
    draining: bool,
    pub(crate) jobs: JobStore,
    log: Vec<LogEntry>,
    /// Entries past `MAX_LOG_ENTRIES`, not kept.
    log_dropped: u64,
    trace: Option<Trace>,
    /// The bound on the trace's segments and marks together.
    pub(crate) trace_limit: usize,
    /// The trace reached `trace_limit` and was dropped.
    trace_dropped: bool,
    domains: Vec<Domain>,
    calls: Vec<CallRecord>,
    /// Mutex and RPC steps the threads' schedulers have not heard of yet,
    /// in the order they happened (see `tell_schedulers`).
    sync_out: Vec<SyncEvent<ThreadId>>,
    /// Interrupt sources, one stream per source and CPU.
    irqs: Vec<IrqStream>,
}

impl World {
    pub(crate) fn new(scn: &Scenario, seed: u64, trace: bool, horizon: Instant) -> Self {
        let mut world = World {
            seed,
            cs: scn.machine.context_switch,
            cpus: (0..scn.machine.cpus)
                .map(|_| SimCpu {
                    thread: None,
                    seg_start: Instant::ZERO,
                    switch_end: Instant::ZERO,
                    last: None,
                    busy: Duration::ZERO,
                    overhead: Duration::ZERO,
                    idle: Duration::ZERO,
                    last_segment: None,
                    completion: None,
                    irq_end: Instant::ZERO,
                    interrupt: Duration::ZERO,
                    interrupts: 0,
                })
                .collect(),
            threads: Vec::new(),
            events: BinaryHeap::new(),
            seq: 0,
            mutex_names: Vec::new(),
            mutexes: Vec::new(),
            semaphore_names: Vec::new(),
            semaphores: Vec::new(),
            barrier_names: Vec::new(),
            barriers: Vec::new(),
            barrier_parties: barrier_parties(scn),
            handed_over: Vec::new(),
            draining: false,
            jobs: JobStore::new(horizon),
            log: Vec::new(),
            log_dropped: 0,
            trace: trace.then(Trace::default),
            trace_limit: DEFAULT_TRACE_LIMIT,
            trace_dropped: false,
            domains: Vec::new(),
            calls: Vec::new(),
            sync_out: Vec::new(),
            irqs: Vec::new(),
        };
        // Declared mutexes take their protocol before any program names them.
        for ev in &scn.script {
            if let (Action::Mutex(spec), true) = (&ev.action, ev.at == Instant::ZERO) {
                world.declare_mutex(&spec.name, spec.protocol);
            }
        }
        // Declared domains exist before anything arrives.
        for ev in &scn.script {
            if let (Action::Domain(spec), true) = (&ev.action, ev.at == Instant::ZERO) {
                let _ = world.create_domain(spec);
            }
        }
        world.declare_interrupts(scn);
        world
    }

    /// One stream per interrupt source and CPU, each with its first
    /// arrival queued: `offset` plus a draw of `every`.
    fn declare_interrupts(&mut self, scn: &Scenario) {
        let sources = scn.script.iter().filter_map(|e| match &e.action {
            Action::Interrupt(spec) => Some((e.at, spec)),
            _ => None,
        });
        for (s, (at, spec)) in sources.enumerate() {
            let signal = spec
                .signal
                .as_deref()
                .map(|name| self.intern(SyncKind::Semaphore, name));
            for &cpu in &spec.cpus {
                let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
                rng.set_stream(IRQ_STREAMS + ((s as u64) << 16) + u64::from(cpu));
                let first = at
                    .saturating_add(spec.offset)
                    .saturating_add(draw(&spec.every, &mut rng));
                self.irqs.push(IrqStream {
                    cpu: cpu as usize,
                    every: spec.every.clone(),
                    duration: spec.duration.clone(),
                    rng,
                    signal,
                });
                let i = self.irqs.len() - 1;
                self.push(first, Ev::Interrupt(i));
            }
        }
    }

    /// Interrupt stream `i` fires at `now`: its handler takes the CPU
    /// after any handler already there, for a draw of its duration; the
    /// next arrival is queued.
    fn interrupt(&mut self, now: Instant, i: usize) {
        let src = &mut self.irqs[i];
        let cpu = src.cpu;
        // Duration first, then the gap: one fixed order of draws.
        let d = draw(&src.duration, &mut src.rng);
        let next = now.saturating_add(draw(&src.every, &mut src.rng));
        let signal = src.signal;
        self.push(next, Ev::Interrupt(i));
        self.flush(CpuId(cpu as u32), now);
        let c = &mut self.cpus[cpu];
        c.interrupts += 1;
        let begin = c.irq_end.max(now);
        let end = begin.saturating_add(d);
        // A switch under way is suspended while the handler runs.
        if c.thread.is_some() && c.switch_end > begin {
            c.switch_end = c.switch_end.saturating_add(d);
        }
        c.irq_end = end;
        if let Some(t) = c.thread {
            self.arm_completion(t);
        }
        if let Some(sem) = signal {
            self.push(end, Ev::IrqSignal(sem));
        }
    }

    /// A handler returned and signals semaphore `s`: the first thread
    /// waiting on it takes the signal, else the semaphore stays set.
    fn irq_signal(&mut self, disp: &mut Dispatcher, now: Instant, s: usize) {
        if let Some(w) = self.signal(now, s) {
            self.resume(disp, now, w);
        }
    }

    /// When a thread put on `cpu` at `now` gets it: once the handlers on
    /// it have returned (the dispatch waits for them).
    fn dispatch_time(&self, cpu: CpuId, now: Instant) -> Instant {
        self.cpus[cpu.index()].irq_end.max(now)
    }

    /// Every call made so far.
    pub(crate) fn calls(&self) -> &[CallRecord] {
        &self.calls
    }

    /// Compiles operations, interning mutex, semaphore and barrier names.
    /// Declares mutex `name` with `protocol`, before any program names it;
    /// false (nothing changed) when it exists already.
    fn declare_mutex(&mut self, name: &str, protocol: MutexProtocol) -> bool {
        if self.mutex_names.iter().any(|n| n == name) {
            return false;
        }
        self.mutex_names.push(name.to_string());
        self.mutexes.push(MutexState::new(protocol));
        true
    }

    fn compile_ops(&mut self, ops: &[hsched_model::Op]) -> Rc<[Instr]> {
        compile(ops, &mut |kind, name| self.intern(kind, name)).into()
    }

    /// The index of the mutex, semaphore or barrier `name`, made on first
    /// mention.
    fn intern(&mut self, kind: SyncKind, name: &str) -> usize {
        let names = match kind {
            SyncKind::Mutex => &mut self.mutex_names,
            SyncKind::Semaphore => &mut self.semaphore_names,
            SyncKind::Barrier => &mut self.barrier_names,
        };
        if let Some(i) = names.iter().position(|n| n == name) {
            return i;
        }
        names.push(name.to_string());
        let i = names.len() - 1;
        match kind {
            SyncKind::Mutex => self.mutexes.push(MutexState::new(MutexProtocol::default())),
            SyncKind::Semaphore => self.semaphores.push(SemaphoreState::default()),
            SyncKind::Barrier => self.barriers.push(BarrierState {
                parties: self.barrier_parties.get(name).copied().unwrap_or(1),
                arrived: Vec::new(),
            }),
        }
        i
    }

    /// Signals semaphore `s` at `now`: the first waiter takes the signal
    /// (returned, to be resumed), else the semaphore stays set.
    fn signal(&mut self, now: Instant, s: usize) -> Option<ThreadId> {
        let sem = &mut self.semaphores[s];
        match sem.waiters.pop_front() {
            Some(w) => {
                self.threads[w.index()].signalled = Some(now);
                Some(w)
            }
            None => {
                sem.set_at.get_or_insert(now);
                None
            }
        }
    }

    /// Takes a signal for `t` waiting on semaphore `s`: the time of the
    /// signal handed to it, or of the one that set the semaphore. `None`:
    /// nothing yet, `t` now waits in line.
    fn take_signal(&mut self, t: ThreadId, s: usize) -> Option<Instant> {
        let given = self.threads[t.index()].signalled.take();
        let sem = &mut self.semaphores[s];
        let at = given.or_else(|| sem.set_at.take());
        if at.is_none() {
            sem.waiters.push_back(t);
        }
        at
    }

    /// Tells the schedulers the mutex and RPC steps taken since the last
    /// time, in order: a step is told before the dispatcher hears of the
    /// block or wake-up it causes, and before any message sent after it.
    fn tell_schedulers(&mut self, disp: &mut Dispatcher, now: Instant) {
        let mut i = 0;
        while i < self.sync_out.len() {
            let ev = self.sync_out[i];
            i += 1;
            disp.sync(self, now, ev);
        }
        self.sync_out.clear();
    }

    pub(crate) fn push(&mut self, at: Instant, ev: Ev) {
        self.seq += 1;
        self.events.push(Reverse((at, self.seq, ev)));
    }

    pub(crate) fn handle(&mut self, disp: &mut Dispatcher, scn: &Scenario, now: Instant, ev: Ev) {
        match ev {
            Ev::Arrive(i) => self.arrive(disp, scn, now, i),
            Ev::Wake(t, gen) => {
                if self.threads[t.index()].wake_gen == gen {
                    self.resume(disp, now, t);
                }
            }
            Ev::Script(i) => self.script(disp, scn, now, i),
            Ev::Abort(t, gen) => {
                if self.threads[t.index()].abort_gen == gen {
                    self.abort(disp, now, t);
                }
            }
            Ev::SpinEnd(t, gen) => {
                if self.threads[t.index()].spin_gen == gen {
                    // A thread whose CPU is in a handler goes on when the
                    // handler returns.
                    let busy_until = self.threads[t.index()]
                        .cpu
                        .map(|c| self.cpus[c.index()].irq_end)
                        .filter(|&e| e > now);
                    match busy_until {
                        Some(end) => self.push(end, Ev::SpinEnd(t, gen)),
                        None => self.spin_end(disp, now, t),
                    }
                }
            }
            Ev::Interrupt(i) => self.interrupt(now, i),
            Ev::IrqSignal(s) => self.irq_signal(disp, now, s),
        }
        self.tell_schedulers(disp, now);
    }

    /// A `randres` job's deadline has come: if it has not received its
    /// need, it is abandoned (its record keeps `finish: None`, a miss) and
    /// the thread goes on to its next deadline, blocking if that is later.
    fn abort(&mut self, disp: &mut Dispatcher, now: Instant, t: ThreadId) {
        let th = &self.threads[t.index()];
        let Some(RandresState {
            phase: RandresPhase::Running { job, .. },
            ..
        }) = th.cursor.randres
        else {
            return;
        };
        // Its progress up to now counts: it may have finished just now.
        self.cut_run(t, now);
        let th = &mut self.threads[t.index()];
        if !th.remaining.is_zero() {
            th.remaining = Duration::ZERO;
            if let Some(st) = &mut th.cursor.randres {
                st.phase = RandresPhase::Missed {
                    deadline: job.deadline,
                };
            }
        }
        // Finished (completion at the deadline) or abandoned: the program
        // takes it from here.
        self.resume(disp, now, t);
    }

    /// If `t` is on a CPU, accounts its run up to `now` and cancels the
    /// completion of its current `run`: a wall-clock event ends it instead.
    fn cut_run(&mut self, t: ThreadId, now: Instant) {
        if let Some(cpu) = self.threads[t.index()].cpu {
            self.flush(cpu, now);
            self.cpus[cpu.index()].completion = None;
        }
    }

    /// A `spin` is over: whatever CPU time it was still waiting for is not
    /// needed any more, and the program goes on, on the CPU or off it.
    fn spin_end(&mut self, disp: &mut Dispatcher, now: Instant, t: ThreadId) {
        self.cut_run(t, now);
        self.threads[t.index()].remaining = Duration::ZERO;
        self.resume(disp, now, t);
    }

    /// Sends `msg` from thread `t` to `target`, as `Op::Msg` does, and logs
    /// the reply; whether it was accepted.
    fn send(
        &mut self,
        disp: &mut Dispatcher,
        now: Instant,
        t: ThreadId,
        target: &Target,
        msg: &Msg,
    ) -> bool {
        self.tell_schedulers(disp, now);
        let to = match target {
            Target::Parent => disp.thread_sched(t),
            Target::Named(n) => disp.sched_by_name(n),
        };
        let name = disp.thread_name(t).to_string();
        let Some(s) = to else {
            self.record(
                now,
                LogKind::Refused,
                format!("`{name}`: {msg}: no such scheduler"),
            );
            return false;
        };
        let reply = disp.message(self, now, Some(t), s, msg);
        let ok = reply.is_ok();
        if let hsched_core::Reply::Ok(p) = &reply {
            if let Some(Value::Duration(at)) = p.get("wakeup") {
                self.wakeup_job(t, now, Instant::ZERO.saturating_add(*at));
            }
        }
        let kind = if ok { LogKind::Reply } else { LogKind::Refused };
        let sname = disp.sched_name(s).to_string();
        self.record(now, kind, format!("`{name}` -> `{sname}` {msg}: {reply}"));
        ok
    }

    /// A scheduler promised to dispatch `t` at `at` (a reply carrying
    /// `wakeup`, as `rtwake`'s do): a job released at `at` with `at` as its
    /// deadline, started and finished by the thread's next dispatch, so its
    /// lateness is how late (negative: how early) the wakeup came. A thread
    /// still on its CPU after the reply counts as dispatched now.
    fn wakeup_job(&mut self, t: ThreadId, now: Instant, at: Instant) {
        let th = &mut self.threads[t.index()];
        let job = th.wakeup_jobs;
        th.wakeup_jobs += 1;
        let on_cpu = th.cpu.is_some();
        th.wakeup_job = (!on_cpu).then_some(self.jobs.len());
        let ran = on_cpu.then_some(now);
        self.push_job(JobRecord {
            thread: t,
            job,
            release: at,
            start: ran,
            finish: ran,
            deadline: at,
            admitted: None,
        });
        self.mark(at, Some(t), MarkKind::Release { job });
    }

    fn arrive(&mut self, disp: &mut Dispatcher, scn: &Scenario, now: Instant, i: usize) {
        let spec = &scn.threads[i];
        let Some(parent) = disp.sched_by_name(&spec.parent).or(disp.default_sched()) else {
            self.record(
                now,
                LogKind::Refused,
                format!("thread `{}`: no scheduler to join", spec.name),
            );
            return;
        };
        let (t, _) = disp.add_thread(now, &spec.name, parent, &spec.params);
        debug_assert_eq!(t.index(), self.threads.len());
        let code = self.compile_ops(&spec.program.ops);
        let members: Vec<(String, String)> = scn
            .script
            .iter()
            .filter_map(|e| match &e.action {
                Action::Domain(d) => Some(d),
                _ => None,
            })
            .flat_map(|d| d.members.iter().map(|m| (m.clone(), d.name.clone())))
            .collect();
        let domain = self.home_domain(&spec.name, &members);
        if !self.domains[domain].alive {
            self.record(
                now,
                LogKind::Refused,
                format!(
                    "thread `{}`: its home domain `{}` is not alive: it ends at once",
                    spec.name, self.domains[domain].name
                ),
            );
        }
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        rng.set_stream(i as u64 + 1);
        self.threads.push(SimThread {
            code,
            cursor: Cursor::default(),
            rng,
            remaining: Duration::ZERO,
            runnable: false,
            exited: false,
            wake_gen: 0,
            abort_gen: 0,
            spin_gen: 0,
            cpu: None,
            last_cpu: None,
            woke_at: None,
            waiting_since: None,
            wakeup_job: None,
            wakeup_jobs: 0,
            stats: ThreadResult {
                id: t,
                name: spec.name.clone(),
                arrival: now,
                ..Default::default()
            },
            domain,
            stack: Vec::new(),
            waiting_call: None,
            // Born into a dead domain: it ends at once.
            leaving: !self.domains[domain].alive,
            signalled: None,
        });
        self.resume(disp, now, t);
    }

    fn script(&mut self, disp: &mut Dispatcher, scn: &Scenario, now: Instant, i: usize) {
        let action = &scn.script[i].action;
        let result: Result<String, String> = match action {
            // Those at time zero were created with the world.
            Action::Domain(spec) if scn.script[i].at == Instant::ZERO => Ok(format!(
                "domain `{}` {}",
                spec.name,
                if spec.start { "created" } else { "declared" }
            )),
            Action::Domain(spec) => self.create_domain(spec),
            // Those at time zero were declared with the world; a later one
            // can only set the protocol of a mutex no program named yet.
            Action::Mutex(spec) if scn.script[i].at == Instant::ZERO => Ok(format!(
                "mutex `{}` declared (protocol {})",
                spec.name, spec.protocol
            )),
            Action::Mutex(spec) => match self.declare_mutex(&spec.name, spec.protocol) {
                true => Ok(format!(
                    "mutex `{}` declared (protocol {})",
                    spec.name, spec.protocol
                )),
                false => Err(format!(
                    "mutex `{}` is already in use: its protocol stays",
                    spec.name
                )),
            },
            Action::Create(name) => self.start_domain(name),
            // Their streams were set up with the world.
            Action::Interrupt(spec) => Ok(format!(
                "interrupt source `{}` on CPU(s) {:?}",
                spec.name, spec.cpus
            )),
            Action::Kill(name) => {
                self.kill_domain(now, name, None);
                while let Some(w) = self.handed_over.pop() {
                    self.resume(disp, now, w);
                }
                return;
            }
            hierarchy => hsched_dispatch::apply(disp, self, now, hierarchy)
                .expect("every other action is the hierarchy's"),
        };
        match result {
            Ok(text) => self.record(now, LogKind::Script, text),
            Err(text) => self.record(now, LogKind::Refused, text),
        }
    }

    /// Runs thread `t`'s program from where it is, at `now`, until it needs
    /// the CPU, blocks or ends; then tells the dispatcher what changed.
    fn resume(&mut self, disp: &mut Dispatcher, now: Instant, t: ThreadId) {
        if self.threads[t.index()].exited {
            return;
        }
        let mut yielded = false;
        let outcome = self.step(disp, now, t, &mut yielded);
        self.tell_schedulers(disp, now);
        let th = &mut self.threads[t.index()];
        match outcome {
            Outcome::NeedsCpu => {
                if !th.runnable {
                    th.runnable = true;
                    th.woke_at = Some(now);
                    th.waiting_since = Some(now);
                    self.mark(now, Some(t), MarkKind::Wakeup);
                    disp.thread_ready(self, now, t);
                } else if yielded {
                    disp.thread_block(self, now, t);
                    disp.thread_ready(self, now, t);
                }
                self.arm_completion(t);
            }
            Outcome::Blocked | Outcome::Faulted => {
                if th.runnable {
                    th.runnable = false;
                    th.waiting_since = None;
                    if outcome == Outcome::Faulted {
                        disp.thread_fault(self, now, t);
                    } else {
                        disp.thread_block(self, now, t);
                    }
                }
            }
            Outcome::Exit => {
                self.abandon_stack(now, t);
                self.tell_schedulers(disp, now);
                let th = &mut self.threads[t.index()];
                // Where it ended up, for the report (it leaves its scheduler now).
                if let Some(s) = disp.thread_sched(t) {
                    th.stats.scheduler = disp.sched_name(s).to_string();
                }
                th.stats.homes = disp.thread_homes(t);
                th.exited = true;
                th.runnable = false;
                th.stats.exit = Some(now);
                th.wake_gen += 1;
                disp.thread_exit(self, now, t);
            }
        }
        if !self.draining {
            self.draining = true;
            while let Some(w) = self.handed_over.pop() {
                self.resume(disp, now, w);
            }
            self.draining = false;
        }
    }

    /// If `t` is on a CPU, schedules the end of its current `run`. Each CPU
    /// has one completion slot instead of heap entries: a CPU-bound thread
    /// is switched far more often than its runs complete, and stale heap
    /// entries would pile up.
    fn arm_completion(&mut self, t: ThreadId) {
        let th = &self.threads[t.index()];
        let Some(cpu) = th.cpu else { return };
        let c = &self.cpus[cpu.index()];
        let at = c
            .switch_end
            .max(c.seg_start)
            .max(c.irq_end)
            .saturating_add(th.remaining);
        self.seq += 1;
        self.cpus[cpu.index()].completion = Some((at, self.seq));
    }

    /// The next workload event: the earliest of the event heap and the CPUs'
    /// completion slots; `Some(cpu)` for a completion. At equal times a
    /// completion comes first (then by sequence): a thread whose `run` ends
    /// at t has done its work by t, so a wake-up or release at t must not
    /// preempt it with nothing left to run (it would then finish only when
    /// next dispatched, later than it did).
    pub(crate) fn next_event(&self) -> Option<(Instant, u64, Option<usize>)> {
        let mut best = self
            .events
            .peek()
            .map(|Reverse((t, seq, _))| (*t, 1u8, *seq, None));
        for (i, c) in self.cpus.iter().enumerate() {
            if let Some((t, seq)) = c.completion {
                if best.is_none_or(|(bt, bk, bs, _)| (t, 0, seq) < (bt, bk, bs)) {
                    best = Some((t, 0, seq, Some(i)));
                }
            }
        }
        best.map(|(t, _, seq, cpu)| (t, seq, cpu))
    }

    /// The thread on `cpu` finished its current `run`.
    pub(crate) fn complete(&mut self, disp: &mut Dispatcher, now: Instant, cpu: usize) {
        self.cpus[cpu].completion = None;
        let t = self.cpus[cpu]
            .thread
            .expect("a completion slot belongs to a running thread");
        self.flush(CpuId(cpu as u32), now);
        debug_assert!(self.threads[t.index()].remaining.is_zero());
        self.resume(disp, now, t);
    }
}

impl Platform for World {
    fn set_cpu(&mut self, now: Instant, cpu: CpuId, thread: Option<ThreadId>) {
        self.flush(cpu, now);
        let c = &mut self.cpus[cpu.index()];
        if let Some(old) = c.thread.take() {
            let th = &mut self.threads[old.index()];
            th.cpu = None;
            c.completion = None;
            if th.runnable {
                th.waiting_since = Some(now);
            }
        }
        let Some(t) = thread else {
            return;
        };
        // A dispatch to a CPU in a handler takes effect when it returns.
        let at = self.dispatch_time(cpu, now);
        let c = &mut self.cpus[cpu.index()];
        c.thread = Some(t);
        c.seg_start = now;
        let switching = c.last != Some(t);
        c.switch_end = if switching {
            at.saturating_add(self.cs)
        } else {
            at
        };
        c.last = Some(t);
        let th = &mut self.threads[t.index()];
        if switching {
            th.stats.context_switches += 1;
        }
        if th.last_cpu.is_some_and(|l| l != cpu) {
            th.stats.migrations += 1;
        }
        th.last_cpu = Some(cpu);
        th.cpu = Some(cpu);
        if let Some(woke) = th.woke_at.take() {
            add_latency(&mut th.stats, at.saturating_since(woke));
        }
        if let Some(since) = th.waiting_since.take() {
            th.stats.max_runnable_gap = th.stats.max_runnable_gap.max(at.saturating_since(since));
        }
        if let Some(p) = th.cursor.periodic.last() {
            if let Some(rec) = p.record {
                self.jobs[rec].start.get_or_insert(at);
            }
        }
        if let Some(f) = th.cursor.frames.last() {
            self.jobs[f.record].start.get_or_insert(at);
        }
        if let Some(rec) = th.wakeup_job.take() {
            self.jobs[rec].start = Some(at);
            self.jobs[rec].finish = Some(at);
        }
        if let Some(RandresState {
            phase: RandresPhase::Running { record, .. },
            ..
        }) = th.cursor.randres
        {
            self.jobs[record].start.get_or_insert(at);
        }
        if let Some(ConstraintsState {
            phase: ConstraintsPhase::Running { record },
            ..
        }) = th.cursor.constraints
        {
            self.jobs[record].start.get_or_insert(at);
        }
        self.arm_completion(t);
    }
}

/// How many of the scenario's threads use each barrier (a thread counts
/// once however often its program names it).
fn barrier_parties(scn: &Scenario) -> HashMap<String, usize> {
    fn collect<'a>(ops: &'a [hsched_model::Op], names: &mut HashSet<&'a str>) {
        use hsched_model::Op;
        for op in ops {
            match op {
                Op::Barrier(b) => {
                    names.insert(b);
                }
                Op::Loop { body, .. }
                | Op::Periodic { body, .. }
                | Op::Sporadic { body, .. }
                | Op::Frames { body, .. } => collect(body, names),
                _ => {}
            }
        }
    }
    let mut parties = HashMap::new();
    for t in &scn.threads {
        let mut names = HashSet::new();
        collect(&t.program.ops, &mut names);
        for b in names {
            *parties.entry(b.to_string()).or_insert(0) += 1;
        }
    }
    parties
}
