//! The run's accounts: the workload's log, the trace (CPU segments and
//! marks, bounded), the job records, and the `RunResult` they become at the
//! end of the run.

use super::{World, MAX_LOG_ENTRIES};
use crate::program::{ConstraintsPhase, ConstraintsState, Instr, RandresPhase, RandresState};
use hsched_core::{CpuId, Instant, ThreadId};
use hsched_dispatch::Dispatcher;
use hsched_model::{
    CpuStats, JobRecord, LogEntry, LogKind, Mark, MarkKind, RunResult, Scenario, Segment,
    SegmentKind,
};
use std::collections::HashSet;

impl World {
    pub(super) fn record(&mut self, at: Instant, kind: LogKind, text: String) {
        if self.log.len() < MAX_LOG_ENTRIES {
            self.log.push(LogEntry { at, kind, text });
        } else {
            self.log_dropped += 1;
        }
    }

    pub(super) fn mark(&mut self, at: Instant, thread: Option<ThreadId>, kind: MarkKind) {
        if let Some(trace) = &mut self.trace {
            trace.marks.push(Mark { at, thread, kind });
            self.bound_trace();
        }
    }

    /// Drops the trace once it holds more than `trace_limit` segments and
    /// marks: a run does not grow without bound for its timeline.
    pub(super) fn bound_trace(&mut self) {
        if let Some(trace) = &self.trace {
            if trace.segments.len() + trace.marks.len() > self.trace_limit {
                self.trace = None;
                self.trace_dropped = true;
            }
        }
    }

    /// Records a job; its index stays valid while the thread's program
    /// holds it (see [`JobStore`]).
    pub(super) fn push_job(&mut self, job: JobRecord) {
        if self.jobs.full() {
            let live = self.live_jobs();
            let names: Vec<&str> = self.threads.iter().map(|t| t.stats.name.as_str()).collect();
            for (at, t, job) in self.jobs.retire(&live, &names) {
                self.mark(at, Some(t), MarkKind::DeadlineMiss { job });
            }
        }
        self.jobs.push(job);
    }

    /// The job records the threads' programs still hold.
    pub(super) fn live_jobs(&self) -> HashSet<usize> {
        let mut live = HashSet::new();
        for th in &self.threads {
            let c = &th.cursor;
            live.extend(c.periodic.iter().filter_map(|p| p.record));
            live.extend(c.frames.iter().map(|f| f.record));
            live.extend(th.wakeup_job);
            if let Some(RandresState {
                phase: RandresPhase::Running { record, .. },
                ..
            }) = c.randres
            {
                live.insert(record);
            }
            if let Some(ConstraintsState {
                phase: ConstraintsPhase::Await { record, .. } | ConstraintsPhase::Running { record },
                ..
            }) = c.constraints
            {
                live.insert(record);
            }
        }
        live
    }

    /// Periodic jobs released before the horizon that their thread never
    /// reached (it was still in an earlier, late job): recorded unfinished,
    /// so that they count as released and, once due, as missed, as a
    /// simulator that keeps a queue of released jobs (SimSo) counts them.
    pub(super) fn record_pending_releases(&mut self, horizon: Instant) {
        for t in 0..self.threads.len() {
            let th = &self.threads[t];
            if th.exited {
                continue;
            }
            // Each periodic timer's first pending release, job number,
            // period, deadline and job count: the releases themselves are
            // made one by one below (there may be a billion of them).
            let mut timers = Vec::new();
            for p in &th.cursor.periodic {
                let Instr::PeriodicStart {
                    period,
                    deadline,
                    jobs,
                    on: None,
                    ..
                } = &th.code[p.start]
                else {
                    continue;
                };
                if p.record.is_none() || period.is_zero() {
                    continue;
                }
                let first = p.next_release.saturating_add(*period);
                timers.push((first, p.job + 1, *period, *deadline, *jobs));
            }
            for (mut release, mut job, period, deadline, jobs) in timers {
                while release < horizon && jobs.is_none_or(|n| job < n) {
                    self.push_job(JobRecord {
                        thread: ThreadId(t as u32),
                        job,
                        release,
                        start: None,
                        finish: None,
                        deadline: release.saturating_add(deadline),
                        admitted: None,
                    });
                    release = release.saturating_add(period);
                    job += 1;
                }
            }
        }
    }

    /// Accounts what `cpu` did from its segment start to `now`.
    pub(super) fn flush(&mut self, cpu: CpuId, now: Instant) {
        let c = &mut self.cpus[cpu.index()];
        let begin = c.seg_start;
        if now <= begin {
            return;
        }
        c.seg_start = now;
        // Handlers come first: they hold the CPU from the segment's start.
        let start = c.irq_end.clamp(begin, now);
        if start > begin {
            c.interrupt += start - begin;
            self.segment(cpu, begin, start, SegmentKind::Interrupt);
            if start == now {
                return;
            }
        }
        let c = &mut self.cpus[cpu.index()];
        match c.thread {
            Some(t) => {
                let switch_end = c.switch_end.clamp(start, now);
                let overhead = switch_end - start;
                let progress = now - switch_end;
                c.overhead += overhead;
                c.busy += progress;
                let th = &mut self.threads[t.index()];
                th.remaining = th.remaining.saturating_sub(progress);
                th.stats.cpu_time += progress;
                if !overhead.is_zero() {
                    self.segment(cpu, start, switch_end, SegmentKind::Switch(t));
                }
                if !progress.is_zero() {
                    self.segment(cpu, switch_end, now, SegmentKind::Run(t));
                }
            }
            None => {
                c.idle += now - start;
                self.segment(cpu, start, now, SegmentKind::Idle);
            }
        }
    }

    pub(super) fn segment(&mut self, cpu: CpuId, start: Instant, end: Instant, what: SegmentKind) {
        let Some(trace) = &mut self.trace else { return };
        let c = &mut self.cpus[cpu.index()];
        if let Some(i) = c.last_segment {
            let last = &mut trace.segments[i];
            if last.what == what && last.end == start {
                last.end = end;
                return;
            }
        }
        c.last_segment = Some(trace.segments.len());
        trace.segments.push(Segment {
            cpu,
            start,
            end,
            what,
        });
        self.bound_trace();
    }

    pub(crate) fn finish(
        mut self,
        disp: &mut Dispatcher,
        scn: &Scenario,
        horizon: Instant,
        seed: u64,
        events: u64,
        wall: std::time::Duration,
    ) -> RunResult {
        disp.close(&mut self, horizon);
        for cpu in 0..self.cpus.len() {
            self.flush(CpuId(cpu as u32), horizon);
        }
        for th in &mut self.threads {
            if let Some(since) = th.waiting_since {
                th.stats.max_runnable_gap = th
                    .stats
                    .max_runnable_gap
                    .max(horizon.saturating_since(since));
            }
        }
        // Frame loops in progress: the deadlines missed since their last frame.
        for t in 0..self.threads.len() {
            for level in 0..self.threads[t].cursor.frames.len() {
                self.frame_misses_until(ThreadId(t as u32), level, horizon);
            }
        }
        self.record_pending_releases(horizon);
        let misses: Vec<(Instant, ThreadId, u64)> = self
            .jobs
            .iter()
            .filter(|j| j.finish.is_none() && j.deadline < horizon)
            .map(|j| (j.deadline, j.thread, j.job))
            .collect();
        for (at, t, job) in misses {
            self.mark(at, Some(t), MarkKind::DeadlineMiss { job });
        }
        let mut log = disp.take_log();
        log.append(&mut self.log);
        log.sort_by_key(|e| e.at); // stable: same-time entries keep their order
        let threads = self
            .threads
            .into_iter()
            .enumerate()
            .map(|(i, th)| {
                let mut stats = th.stats;
                let t = ThreadId(i as u32);
                if let Some(s) = disp.thread_sched(t) {
                    stats.scheduler = disp.sched_name(s).to_string();
                }
                if !th.exited {
                    stats.homes = disp.thread_homes(t);
                }
                stats
            })
            .collect::<Vec<_>>();
        let keep = self.jobs.keep();
        let (jobs, retired_jobs, retired) = self.jobs.into_parts();
        let mut limits = Vec::new();
        if retired > 0 {
            let total = retired + jobs.len() as u64;
            limits.push(format!(
                "jobs: {total} jobs, more than the {keep} job records a run holds (--keep-jobs): \
                 {retired} are counted in the metrics (response times from a histogram, \
                 within 0.8 %) without their records"
            ));
        }
        limits.extend(hsched_model::sketched_latencies_note(&threads));
        if self.log_dropped > 0 {
            limits.push(format!(
                "log: more than {MAX_LOG_ENTRIES} entries of the threads' messages and moves \
                 (MAX_LOG_ENTRIES): the first {MAX_LOG_ENTRIES} are kept, {} more were not",
                self.log_dropped
            ));
        }
        if self.trace_dropped {
            limits.push(format!(
                "trace: more than {} segments and marks (--trace-limit): not kept",
                self.trace_limit
            ));
        }
        let mut trace = self.trace;
        if let Some(trace) = &mut trace {
            trace.thread_names = threads.iter().map(|t| t.name.clone()).collect();
            trace.segments.sort_by_key(|s| (s.cpu, s.start));
            trace.marks.sort_by_key(|m| m.at);
        }
        RunResult {
            scenario: scn.name.clone(),
            platform: "sim".into(),
            seed,
            cpus: scn.machine.cpus,
            horizon: horizon - Instant::ZERO,
            threads,
            nodes: disp.node_results().to_vec(),
            cpu_stats: self
                .cpus
                .iter()
                .enumerate()
                .map(|(i, c)| CpuStats {
                    cpu: CpuId(i as u32),
                    busy: c.busy,
                    overhead: c.overhead,
                    idle: c.idle,
                    interrupt: c.interrupt,
                    interrupts: c.interrupts,
                })
                .collect(),
            decisions: disp.decisions(),
            events,
            wall_ns: wall.as_nanos() as u64,
            jobs,
            retired_jobs,
            limits,
            log,
            trace,
        }
    }
}
