//! Executing a thread's program: the instructions that take no CPU time,
//! one handler per kind of instruction, until the thread needs the CPU,
//! blocks or exits. A handler returns `Some(outcome)` to stop stepping and
//! `None` to go on with the instruction its cursor now points at.

use super::domains::CallOutcome;
use super::{Ev, Outcome, World};
use crate::program::{
    draw_constraint, draw_randres, ConstraintsPhase, ConstraintsState, FramesState, Instr,
    PeriodicState, RandresJob, RandresPhase, RandresState,
};
use hsched_core::{Duration, Instant, Msg, MutexId, SyncEvent, ThreadId, Value};
use hsched_dispatch::Dispatcher;
use hsched_model::{draw, ConstraintLoad, JobRecord, LogKind, MarkKind, Randres, Target};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

impl World {
    /// Executes instructions that take no CPU time.
    pub(super) fn step(
        &mut self,
        disp: &mut Dispatcher,
        now: Instant,
        t: ThreadId,
        yielded: &mut bool,
    ) -> Outcome {
        loop {
            let th = &mut self.threads[t.index()];
            if th.leaving {
                th.leaving = false;
                if self.unwind(now, t, CallOutcome::ServerExit) {
                    continue;
                }
                return Outcome::Exit;
            }
            if !th.remaining.is_zero() {
                return Outcome::NeedsCpu;
            }
            let code = th.code.clone();
            let Some(instr) = code.get(th.cursor.pc) else {
                // The end of a stop's body is a return to the caller.
                if self.unwind(now, t, CallOutcome::Ok) {
                    continue;
                }
                return Outcome::Exit;
            };
            let stop = match instr {
                Instr::Run(_) | Instr::Spin(_) | Instr::Sleep(_) | Instr::Fault(_) => {
                    self.timed(now, t, instr)
                }
                Instr::Randres(spec) => self.randres(disp, now, t, spec),
                Instr::Constraints(spec) => self.constraints_step(disp, now, t, spec),
                Instr::Lock(m) => self.lock(t, *m),
                Instr::Unlock(m) => self.unlock(t, *m),
                Instr::Signal(s) => {
                    self.threads[t.index()].cursor.pc += 1;
                    if let Some(w) = self.signal(now, *s) {
                        self.handed_over.push(w);
                    }
                    None
                }
                Instr::Wait(s) => {
                    if self.take_signal(t, *s).is_none() {
                        return Outcome::Blocked;
                    }
                    self.threads[t.index()].cursor.pc += 1;
                    None
                }
                Instr::Barrier(b) => self.barrier(t, *b),
                Instr::Msg(target, msg) => {
                    self.threads[t.index()].cursor.pc += 1;
                    self.send(disp, now, t, target, msg);
                    None
                }
                Instr::Yield => {
                    self.threads[t.index()].cursor.pc += 1;
                    *yielded = true;
                    None
                }
                Instr::Call { domain, stop, via } => self.call(now, t, domain, stop, *via),
                Instr::Serve(domain) => self.serve(t, domain),
                Instr::Kill(domain) => {
                    self.threads[t.index()].cursor.pc += 1;
                    self.kill_domain(now, domain, Some(t));
                    None
                }
                Instr::Create(domain) => self.create(now, t, domain),
                Instr::Exit => Some(Outcome::Exit),
                Instr::LoopStart { .. } | Instr::LoopEnd { .. } => self.loop_bound(t, instr),
                Instr::PeriodicStart { .. } | Instr::AwaitRelease | Instr::JobEnd { .. } => {
                    self.periodic(now, t, instr, &code)
                }
                Instr::FramesStart {
                    max_gap,
                    count,
                    end,
                } => self.frames_start(now, t, *max_gap, *count, *end),
                Instr::FrameEnd { start } => {
                    self.frame_done(t, now, *start, &code);
                    None
                }
            };
            if let Some(outcome) = stop {
                return outcome;
            }
        }
    }

    /// `run`, `spin`, `sleep` and `fault`: a duration drawn from the
    /// thread's stream, of CPU time to use or of time to wait.
    fn timed(&mut self, now: Instant, t: ThreadId, instr: &Instr) -> Option<Outcome> {
        let th = &mut self.threads[t.index()];
        match instr {
            Instr::Run(d) => {
                th.remaining = draw(d, &mut th.rng);
                th.cursor.pc += 1;
            }
            Instr::Spin(d) => {
                th.cursor.pc += 1;
                let d = draw(d, &mut th.rng);
                if !d.is_zero() {
                    // More CPU than it can get by then: `spin_end` stops it.
                    th.remaining = Duration(d.as_nanos().saturating_add(1));
                    th.spin_gen += 1;
                    let gen = th.spin_gen;
                    self.push(now.saturating_add(d), Ev::SpinEnd(t, gen));
                }
            }
            Instr::Sleep(d) | Instr::Fault(d) => {
                th.cursor.pc += 1;
                let d = draw(d, &mut th.rng);
                if !d.is_zero() {
                    th.wake_gen += 1;
                    let gen = th.wake_gen;
                    self.push(now.saturating_add(d), Ev::Wake(t, gen));
                    return Some(if matches!(instr, Instr::Fault(_)) {
                        Outcome::Faulted
                    } else {
                        Outcome::Blocked
                    });
                }
            }
            _ => unreachable!("timed handles run, spin, sleep and fault"),
        }
        None
    }

    /// `randres`: jobs of random size and deadline, each a reservation
    /// asked of the thread's scheduler (when `reserve`), run, then closed.
    fn randres(
        &mut self,
        disp: &mut Dispatcher,
        now: Instant,
        t: ThreadId,
        spec: &Randres,
    ) -> Option<Outcome> {
        let th = &mut self.threads[t.index()];
        if th.cursor.randres.is_none() {
            let err_seed: u64 = th.rng.gen();
            th.cursor.randres = Some(RandresState {
                prev: now,
                done: 0,
                err_rng: ChaCha8Rng::seed_from_u64(err_seed),
                phase: RandresPhase::Next,
            });
        }
        let st = th.cursor.randres.as_mut().expect("randres state");
        match st.phase {
            RandresPhase::Next => {
                if spec.count.is_some_and(|c| st.done >= c) {
                    th.cursor.randres = None;
                    th.cursor.pc += 1;
                    return None;
                }
                let job = draw_randres(spec, st.prev, &mut th.rng, &mut st.err_rng);
                st.phase = RandresPhase::Await(job);
            }
            RandresPhase::Await(job) => {
                if now < job.start {
                    th.wake_gen += 1;
                    let gen = th.wake_gen;
                    self.push(job.start, Ev::Wake(t, gen));
                    return Some(Outcome::Blocked);
                }
                let n = st.done;
                let record = self.jobs.len();
                self.push_job(JobRecord {
                    thread: t,
                    job: n,
                    release: job.start,
                    start: None,
                    finish: None,
                    deadline: job.deadline,
                    admitted: None,
                });
                self.mark(job.start, Some(t), MarkKind::Release { job: n });
                let granted = !spec.reserve || self.reserve(disp, now, t, &job);
                self.jobs[record].admitted = spec.reserve.then_some(granted);
                let th = &mut self.threads[t.index()];
                let st = th.cursor.randres.as_mut().expect("randres state");
                if granted {
                    st.phase = RandresPhase::Running { job, record };
                    th.remaining = job.need;
                    th.abort_gen += 1;
                    let gen = th.abort_gen;
                    // A job that follows its predecessor on the CPU starts now.
                    if th.cpu.is_some() {
                        self.jobs[record].start = Some(now);
                    }
                    self.push(job.deadline, Ev::Abort(t, gen));
                } else {
                    // Refused: missed, and no running until the next one.
                    st.phase = RandresPhase::Missed {
                        deadline: job.deadline,
                    };
                }
            }
            RandresPhase::Running { job, record } => {
                // Its need is met (`remaining` is zero).
                st.prev = job.deadline;
                st.done += 1;
                st.phase = RandresPhase::Next;
                th.abort_gen += 1;
                self.jobs[record].finish = Some(now);
            }
            RandresPhase::Missed { deadline } => {
                if now < deadline {
                    th.wake_gen += 1;
                    let gen = th.wake_gen;
                    self.push(deadline, Ev::Wake(t, gen));
                    return Some(Outcome::Blocked);
                }
                st.prev = deadline;
                st.done += 1;
                st.phase = RandresPhase::Next;
            }
        }
        None
    }

    /// `lock`: takes mutex `m`, or waits in its line.
    fn lock(&mut self, t: ThreadId, m: usize) -> Option<Outcome> {
        let th = &mut self.threads[t.index()];
        let mutex = &mut self.mutexes[m];
        let (id, protocol) = (MutexId(m as u32), mutex.protocol);
        match mutex.owner {
            None => {
                mutex.owner = Some(t);
                th.cursor.pc += 1;
                self.sync_out.push(SyncEvent::Acquired {
                    thread: t,
                    mutex: id,
                    protocol,
                });
            }
            Some(o) if o == t => th.cursor.pc += 1,
            Some(_) => {
                mutex.waiters.push_back(t);
                self.sync_out.push(SyncEvent::Blocked {
                    thread: t,
                    mutex: id,
                    protocol,
                });
                return Some(Outcome::Blocked);
            }
        }
        None
    }

    /// `unlock`: hands mutex `m` to its first waiter, if `t` holds it.
    fn unlock(&mut self, t: ThreadId, m: usize) -> Option<Outcome> {
        self.threads[t.index()].cursor.pc += 1;
        let mutex = &mut self.mutexes[m];
        if mutex.owner == Some(t) {
            mutex.owner = mutex.waiters.pop_front();
            self.sync_out.push(SyncEvent::Released {
                thread: t,
                mutex: MutexId(m as u32),
                to: mutex.owner,
                protocol: mutex.protocol,
            });
            if let Some(w) = mutex.owner {
                self.threads[w.index()].cursor.pc += 1;
                self.handed_over.push(w);
            }
        }
        None
    }

    /// `barrier`: waits there until the last of its parties arrives, who
    /// releases them all.
    fn barrier(&mut self, t: ThreadId, b: usize) -> Option<Outcome> {
        let barrier = &mut self.barriers[b];
        if barrier.arrived.len() + 1 < barrier.parties {
            barrier.arrived.push(t);
            return Some(Outcome::Blocked);
        }
        self.threads[t.index()].cursor.pc += 1;
        // `handed_over` is worked from its end: push the last
        // arrival first so they resume in arrival order.
        let released = std::mem::take(&mut barrier.arrived);
        for &w in released.iter().rev() {
            self.threads[w.index()].cursor.pc += 1;
            self.handed_over.push(w);
        }
        None
    }

    /// `create`: starts a protection domain, logged as the thread's doing.
    fn create(&mut self, now: Instant, t: ThreadId, domain: &str) -> Option<Outcome> {
        let th = &mut self.threads[t.index()];
        th.cursor.pc += 1;
        let name = th.stats.name.clone();
        match self.start_domain(domain) {
            Ok(text) => self.record(now, LogKind::Script, format!("{text} by `{name}`")),
            Err(e) => self.record(now, LogKind::Refused, format!("thread `{name}`: {e}")),
        }
        None
    }

    /// The two ends of a `loop`: a counter on the cursor's stack.
    fn loop_bound(&mut self, t: ThreadId, instr: &Instr) -> Option<Outcome> {
        let cursor = &mut self.threads[t.index()].cursor;
        match instr {
            Instr::LoopStart { count, end } => {
                if *count == Some(0) {
                    cursor.pc = *end;
                } else {
                    cursor.loops.push(count.unwrap_or(u64::MAX));
                    cursor.pc += 1;
                }
            }
            Instr::LoopEnd { start } => {
                let left = cursor.loops.last_mut().expect("loop stack");
                if *left != u64::MAX {
                    *left -= 1;
                }
                if *left == 0 {
                    cursor.loops.pop();
                    cursor.pc += 1;
                } else {
                    cursor.pc = start + 1;
                }
            }
            _ => unreachable!("loop_bound handles the ends of a loop"),
        }
        None
    }

    /// A `periodic` block: its start, the wait for each release, and the
    /// end of each job.
    fn periodic(
        &mut self,
        now: Instant,
        t: ThreadId,
        instr: &Instr,
        code: &[Instr],
    ) -> Option<Outcome> {
        let th = &mut self.threads[t.index()];
        match instr {
            Instr::PeriodicStart { offset, .. } => {
                th.cursor.periodic.push(PeriodicState {
                    start: th.cursor.pc,
                    next_release: now.saturating_add(*offset),
                    job: 0,
                    record: None,
                });
                th.cursor.pc += 1;
                None
            }
            Instr::AwaitRelease => self.await_release(now, t, code),
            Instr::JobEnd { start } => {
                let p = th.cursor.periodic.last_mut().expect("periodic stack");
                let Instr::PeriodicStart { period, .. } = &code[p.start] else {
                    unreachable!("JobEnd closes a PeriodicStart")
                };
                let record = p.record.take().expect("a job in progress");
                p.job += 1;
                p.next_release = p.next_release.saturating_add(*period);
                th.cursor.pc = start + 1;
                let rec = &mut self.jobs[record];
                rec.finish = Some(now);
                if now > rec.deadline {
                    let job = rec.job;
                    self.mark(now, Some(t), MarkKind::DeadlineMiss { job });
                }
                None
            }
            _ => unreachable!("periodic handles a periodic block's instructions"),
        }
    }

    /// A periodic job's release: waits for it (its time, or the signal it
    /// is released on), then records the job; past the block's last job,
    /// leaves the block.
    fn await_release(&mut self, now: Instant, t: ThreadId, code: &[Instr]) -> Option<Outcome> {
        let th = &mut self.threads[t.index()];
        let p = th.cursor.periodic.last_mut().expect("periodic stack");
        let Instr::PeriodicStart {
            deadline,
            jobs,
            on,
            end,
            ..
        } = &code[p.start]
        else {
            unreachable!("AwaitRelease follows PeriodicStart")
        };
        if jobs.is_some_and(|j| p.job >= j) {
            th.cursor.periodic.pop();
            th.cursor.pc = *end;
            return None;
        }
        let release = match on {
            None if now < p.next_release => {
                th.wake_gen += 1;
                let (gen, at) = (th.wake_gen, p.next_release);
                self.push(at, Ev::Wake(t, gen));
                return Some(Outcome::Blocked);
            }
            None => p.next_release,
            Some(s) => match self.take_signal(t, *s) {
                Some(at) => at,
                None => return Some(Outcome::Blocked),
            },
        };
        let th = &mut self.threads[t.index()];
        let p = th.cursor.periodic.last_mut().expect("periodic stack");
        let job = p.job;
        p.record = Some(self.jobs.len());
        th.cursor.pc += 1;
        // A late job that follows its predecessor on the CPU starts now.
        let start = th.cpu.map(|_| now);
        self.push_job(JobRecord {
            thread: t,
            job,
            release,
            start,
            finish: None,
            deadline: release.saturating_add(*deadline),
            admitted: None,
        });
        self.mark(release, Some(t), MarkKind::Release { job });
        None
    }

    /// The start of a `frames` block: its first frame's deadline job.
    fn frames_start(
        &mut self,
        now: Instant,
        t: ThreadId,
        max_gap: Duration,
        count: Option<u64>,
        end: usize,
    ) -> Option<Outcome> {
        let th = &mut self.threads[t.index()];
        if count == Some(0) {
            th.cursor.pc = end;
            return None;
        }
        let start = th.cursor.pc;
        th.cursor.pc += 1;
        let record = self.frame_deadline(t, 0, now, max_gap);
        let frames = &mut self.threads[t.index()].cursor.frames;
        frames.push(FramesState {
            start,
            frames: 0,
            record,
        });
        None
    }

    /// Sends `randres`'s reservation request for `job` to `t`'s scheduler;
    /// whether it was accepted.
    pub(super) fn reserve(
        &mut self,
        disp: &mut Dispatcher,
        now: Instant,
        t: ThreadId,
        job: &RandresJob,
    ) -> bool {
        let since_zero = |i: Instant| Value::Duration(i.saturating_since(Instant::ZERO));
        let msg = Msg::new("reserve")
            .arg("start", since_zero(job.start))
            .arg("amount", Value::Duration(job.request))
            .arg("deadline", since_zero(job.deadline));
        self.tell_schedulers(disp, now);
        let name = disp.thread_name(t).to_string();
        let Some(s) = disp.thread_sched(t) else {
            self.record(
                now,
                LogKind::Refused,
                format!("`{name}`: {msg}: no scheduler"),
            );
            return false;
        };
        let reply = disp.message(self, now, Some(t), s, &msg);
        let ok = reply.is_ok();
        let kind = if ok { LogKind::Reply } else { LogKind::Refused };
        let sname = disp.sched_name(s).to_string();
        self.record(now, kind, format!("`{name}` -> `{sname}` {msg}: {reply}"));
        ok
    }

    /// One step of a `constraints` operation at `now`: issue the next
    /// constraint, start its work, or end it. `Some` when the thread
    /// blocks; `None` to go on stepping (the cursor has moved on when the
    /// operation is over).
    pub(super) fn constraints_step(
        &mut self,
        disp: &mut Dispatcher,
        now: Instant,
        t: ThreadId,
        spec: &ConstraintLoad,
    ) -> Option<Outcome> {
        let th = &mut self.threads[t.index()];
        let st = th.cursor.constraints.get_or_insert(ConstraintsState {
            done: 0,
            phase: ConstraintsPhase::Next,
        });
        match st.phase {
            ConstraintsPhase::Next => {
                if spec.count.is_some_and(|c| st.done >= c) {
                    th.cursor.constraints = None;
                    th.cursor.pc += 1;
                    return None;
                }
                let n = st.done;
                let job = draw_constraint(spec, &mut th.rng);
                let deadline = job.start.saturating_add(job.window);
                let msg = Msg::new("begin_constraint")
                    .arg("start", Value::Duration(job.start))
                    .arg("estimate", Value::Duration(job.estimate))
                    .arg("deadline", Value::Duration(deadline))
                    .arg("relative", Value::Bool(true));
                let admitted = self.send(disp, now, t, &Target::Parent, &msg);
                let record = self.jobs.len();
                self.push_job(JobRecord {
                    thread: t,
                    job: n,
                    release: now,
                    start: None,
                    finish: None,
                    deadline: now.saturating_add(deadline),
                    admitted: Some(admitted),
                });
                self.mark(now, Some(t), MarkKind::Release { job: n });
                if let Some(st) = &mut self.threads[t.index()].cursor.constraints {
                    st.phase = ConstraintsPhase::Await { job, record };
                }
                None
            }
            ConstraintsPhase::Await { job, record } => {
                let start = self.jobs[record].release.saturating_add(job.start);
                if now < start {
                    th.wake_gen += 1;
                    let gen = th.wake_gen;
                    self.push(start, Ev::Wake(t, gen));
                    return Some(Outcome::Blocked);
                }
                st.phase = ConstraintsPhase::Running { record };
                th.remaining = job.work;
                // Work that follows the issue on the CPU starts now.
                if th.cpu.is_some() && !job.work.is_zero() {
                    self.jobs[record].start = Some(now);
                }
                None
            }
            ConstraintsPhase::Running { record } => {
                // Its work is done (`remaining` is zero).
                st.done += 1;
                st.phase = ConstraintsPhase::Next;
                // No gap after the last one: the program goes on at once.
                let gap = if spec.count.is_some_and(|c| st.done >= c) {
                    Duration::ZERO
                } else {
                    draw(&spec.gap, &mut th.rng)
                };
                self.send(disp, now, t, &Target::Parent, &Msg::new("end_constraint"));
                let rec = &mut self.jobs[record];
                rec.finish = Some(now);
                if now > rec.deadline {
                    let job = rec.job;
                    self.mark(now, Some(t), MarkKind::DeadlineMiss { job });
                }
                if gap.is_zero() {
                    return None;
                }
                let th = &mut self.threads[t.index()];
                th.wake_gen += 1;
                let gen = th.wake_gen;
                self.push(now.saturating_add(gap), Ev::Wake(t, gen));
                Some(Outcome::Blocked)
            }
        }
    }

    /// Records a frame loop's deadline job `job`, released at `release`.
    pub(super) fn frame_deadline(
        &mut self,
        t: ThreadId,
        job: u64,
        release: Instant,
        max_gap: Duration,
    ) -> usize {
        let on_cpu = self.threads[t.index()].cpu.is_some();
        self.push_job(JobRecord {
            thread: t,
            job,
            release,
            start: on_cpu.then_some(release),
            finish: None,
            deadline: release.saturating_add(max_gap),
            admitted: None,
        });
        self.jobs.len() - 1
    }

    /// The deadlines of `t`'s innermost frame loop that passed before
    /// `now` without a frame stay missed; each is followed by the next,
    /// `max_gap` later. Returns the one pending at `now`.
    pub(super) fn frame_misses_until(&mut self, t: ThreadId, level: usize, now: Instant) -> usize {
        let th = &self.threads[t.index()];
        let st = &th.cursor.frames[level];
        let Instr::FramesStart { max_gap, .. } = th.code[st.start] else {
            unreachable!("a frame loop starts with FramesStart")
        };
        let mut record = st.record;
        while self.jobs[record].deadline < now {
            let (job, missed) = (self.jobs[record].job + 1, self.jobs[record].deadline);
            record = self.frame_deadline(t, job, missed, max_gap);
            self.jobs[record].start = None;
        }
        self.threads[t.index()].cursor.frames[level].record = record;
        record
    }

    /// A frame of `t`'s innermost frame loop is done at `now`: it meets the
    /// deadline pending (those before were missed); the next deadline is
    /// `max_gap` from now, unless that was the last frame.
    pub(super) fn frame_done(&mut self, t: ThreadId, now: Instant, start: usize, code: &[Instr]) {
        let Instr::FramesStart {
            max_gap,
            count,
            end,
            ..
        } = code[start]
        else {
            unreachable!("FrameEnd closes a FramesStart")
        };
        let level = self.threads[t.index()].cursor.frames.len() - 1;
        let record = self.frame_misses_until(t, level, now);
        self.jobs[record].finish = Some(now);
        self.jobs[record].start.get_or_insert(now);
        let job = self.jobs[record].job + 1;
        let st = &mut self.threads[t.index()].cursor.frames[level];
        st.frames += 1;
        if count.is_some_and(|c| st.frames >= c) {
            let th = &mut self.threads[t.index()];
            th.cursor.frames.pop();
            th.cursor.pc = end;
        } else {
            let next = self.frame_deadline(t, job, now, max_gap);
            let th = &mut self.threads[t.index()];
            th.cursor.frames[level].record = next;
            th.cursor.pc = start + 1;
        }
    }
}
