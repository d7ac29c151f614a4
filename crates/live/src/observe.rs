//! What the managed threads really did, from the kernel's switch and
//! wakeup events: who ran on each managed CPU when (the trace's
//! segments), and each thread's wakeup-to-run latencies, longest wait,
//! context switches and migrations, measured as `hsched sim` measures
//! them in simulation.
//!
//! The agent records every event of a managed thread as it reads it. The
//! figures are counted as the events come, in memory bounded per thread
//! (wakeup latencies past [`hsched_model::MAX_KEPT_LATENCIES`] in a histogram); the
//! events themselves are kept for the timeline up to [`MAX_KEPT_EVENTS`],
//! past which the timeline is given up and the run says so.

use hsched_core::{CpuId, Duration, Instant, ThreadId};
use hsched_model::{record_latency, Segment, SegmentKind, Sketch};

/// How many events a run keeps for its timeline (24 bytes each: about
/// 48 MB), as `hsched sim` keeps at most `DEFAULT_TRACE_LIMIT` segments:
/// a managed CPU switching every millisecond fills it in some 15 minutes.
pub const MAX_KEPT_EVENTS: usize = 2_000_000;

/// One thing seen, on the agent's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// CPU `cpu` (an index into the managed CPUs; `None`: another CPU)
    /// switched from `prev` to `next` (`None`: a thread not managed, or
    /// idle); `blocked` when `prev` left sleeping.
    Switch {
        cpu: Option<usize>,
        prev: Option<ThreadId>,
        blocked: bool,
        next: Option<ThreadId>,
    },
    /// Thread woken.
    Wakeup(ThreadId),
}

/// What was seen: each thread's figures so far, and the events
/// themselves in time order for the timeline, while they fit.
///
/// The events are kept in chunks rather than one vector: the agent
/// records on the CPU it manages, with its memory locked, and doubling a
/// vector of a second's events there (copied, its new pages faulted in)
/// held a managed thread off the CPU for 0.7 ms.
#[derive(Clone, Debug, Default)]
pub struct Observations {
    chunks: Vec<Vec<(Instant, Seen)>>,
    /// Events seen, kept or not.
    seen: u64,
    /// More than [`MAX_KEPT_EVENTS`] were seen: the chunks are dropped.
    events_dropped: bool,
    last: Option<Instant>,
    figures: Vec<ThreadFigures>,
    state: Vec<State>,
    /// By managed CPU: who ran there (a managed thread or not), since when.
    on_cpu: Vec<(Instant, Option<ThreadId>)>,
    /// By managed CPU: the managed threads' time there, up to the last
    /// switch.
    busy: Vec<Duration>,
}

/// A thread as the events left it.
#[derive(Clone, Copy, Debug, Default)]
struct State {
    /// Runnable (woken or preempted) since, and whether by a wakeup.
    waiting: Option<(Instant, bool)>,
    cpu: Option<usize>,
    running: bool,
}

/// Events per chunk of [`Observations`] (64 KiB).
const CHUNK: usize = 2048;

/// A thread's measured figures (see [`hsched_model::ThreadResult`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadFigures {
    /// The first [`hsched_model::MAX_KEPT_LATENCIES`] one by one; past them, all of
    /// them in `wakeup_sketch`.
    pub wakeup_latencies: Vec<Duration>,
    pub wakeup_sketch: Option<Sketch>,
    pub max_runnable_gap: Duration,
    pub context_switches: u64,
    pub migrations: u64,
    /// Time on a managed CPU.
    pub cpu_time: Duration,
}

impl ThreadFigures {
    /// Counts `other`'s figures in too (a family's members as one).
    pub fn absorb(&mut self, other: ThreadFigures) {
        match &other.wakeup_sketch {
            Some(theirs) => {
                let mine = self.wakeup_sketch.get_or_insert_with(|| {
                    let mut s = Sketch::default();
                    for l in &self.wakeup_latencies {
                        s.add(l.as_nanos());
                    }
                    s
                });
                mine.merge(theirs);
            }
            None => {
                for l in other.wakeup_latencies {
                    record_latency(&mut self.wakeup_latencies, &mut self.wakeup_sketch, l);
                }
            }
        }
        self.max_runnable_gap = self.max_runnable_gap.max(other.max_runnable_gap);
        self.context_switches += other.context_switches;
        self.migrations += other.migrations;
        self.cpu_time += other.cpu_time;
    }
}

impl Observations {
    pub fn push(&mut self, at: Instant, seen: Seen) {
        // In time order, even where the kernel's CPUs' stamps are not.
        let at = self.last.map_or(at, |last| at.max(last));
        self.last = Some(at);
        self.seen += 1;
        self.count(at, seen);
        if self.events_dropped {
            return;
        }
        if self.seen > MAX_KEPT_EVENTS as u64 {
            self.chunks = Vec::new();
            self.events_dropped = true;
            return;
        }
        match self.chunks.last_mut() {
            Some(c) if c.len() < CHUNK => c.push((at, seen)),
            _ => {
                let mut c = Vec::with_capacity(CHUNK);
                c.push((at, seen));
                self.chunks.push(c);
            }
        }
    }

    /// Counts event `seen` at `at` into the figures.
    fn count(&mut self, at: Instant, seen: Seen) {
        let grow = |n: usize, figures: &mut Vec<ThreadFigures>, state: &mut Vec<State>| {
            if figures.len() <= n {
                figures.resize_with(n + 1, ThreadFigures::default);
                state.resize(n + 1, State::default());
            }
        };
        match seen {
            Seen::Wakeup(t) => {
                grow(t.index(), &mut self.figures, &mut self.state);
                let s = &mut self.state[t.index()];
                if !s.running && s.waiting.is_none() {
                    s.waiting = Some((at, true));
                }
            }
            Seen::Switch {
                cpu,
                prev,
                blocked,
                next,
            } => {
                if let Some(p) = prev {
                    grow(p.index(), &mut self.figures, &mut self.state);
                    let s = &mut self.state[p.index()];
                    s.running = false;
                    s.waiting = (!blocked).then_some((at, false));
                }
                let before = cpu.map(|c| {
                    if self.on_cpu.len() <= c {
                        self.on_cpu.resize(c + 1, (Instant::ZERO, None));
                    }
                    self.on_cpu[c]
                });
                if let Some(n) = next {
                    grow(n.index(), &mut self.figures, &mut self.state);
                    let (s, f) = (&mut self.state[n.index()], &mut self.figures[n.index()]);
                    if let Some((since, woken)) = s.waiting.take() {
                        f.max_runnable_gap = f.max_runnable_gap.max(at.saturating_since(since));
                        if woken {
                            let latency = at.saturating_since(since);
                            record_latency(&mut f.wakeup_latencies, &mut f.wakeup_sketch, latency);
                        }
                    }
                    if let (Some(c), Some((_, last))) = (cpu, before) {
                        if last != Some(n) {
                            f.context_switches += 1;
                        }
                        if s.cpu.is_some_and(|old| old != c) {
                            f.migrations += 1;
                        }
                        s.cpu = Some(c);
                    }
                    s.running = true;
                }
                if let (Some(c), Some((since, who))) = (cpu, before) {
                    if who != next {
                        if let Some(w) = who {
                            let ran = at.saturating_since(since);
                            self.figures[w.index()].cpu_time += ran;
                            if self.busy.len() <= c {
                                self.busy.resize(c + 1, Duration::ZERO);
                            }
                            self.busy[c] += ran;
                        }
                        self.on_cpu[c] = (at, next);
                    }
                }
            }
        }
    }

    /// Everything seen, in time order, while it is kept (see
    /// [`Observations::timeline_kept`]).
    pub fn iter(&self) -> impl Iterator<Item = &(Instant, Seen)> {
        self.chunks.iter().flatten()
    }

    /// Whether every event is kept for the timeline (at most
    /// [`MAX_KEPT_EVENTS`]).
    pub fn timeline_kept(&self) -> bool {
        !self.events_dropped
    }

    /// How many events were seen.
    pub fn len(&self) -> u64 {
        self.seen
    }

    pub fn is_empty(&self) -> bool {
        self.seen == 0
    }

    /// Each of `threads` threads' figures at `end`: a wait or a run still
    /// going on counts up to it.
    pub fn thread_figures(&self, threads: usize, end: Instant) -> Vec<ThreadFigures> {
        let mut figures = self.figures.clone();
        figures.resize_with(threads.max(figures.len()), ThreadFigures::default);
        for (s, f) in self.state.iter().zip(&mut figures) {
            if let Some((since, _)) = s.waiting {
                f.max_runnable_gap = f.max_runnable_gap.max(end.saturating_since(since));
            }
        }
        for &(since, who) in &self.on_cpu {
            if let Some(w) = who {
                figures[w.index()].cpu_time += end.saturating_since(since);
            }
        }
        figures.truncate(threads);
        figures
    }

    /// Each of `cpus` managed CPUs' busy time at `end`: the time managed
    /// threads ran there, counted as their `cpu_time` is (a run still
    /// going on counts up to `end`).
    pub fn cpu_busy(&self, cpus: usize, end: Instant) -> Vec<Duration> {
        let mut busy = self.busy.clone();
        busy.resize(cpus.max(busy.len()), Duration::ZERO);
        for (c, &(since, who)) in self.on_cpu.iter().enumerate() {
            if who.is_some() {
                busy[c] += end.saturating_since(since);
            }
        }
        busy.truncate(cpus);
        busy
    }

    /// What each of `cpus` managed CPUs did over `[0, end)`: a managed
    /// thread's run, or idle (nothing managed on it), adjacent equal spans
    /// merged.
    pub fn segments(&self, cpus: usize, end: Instant) -> Vec<Segment> {
        let mut current: Vec<(Instant, Option<ThreadId>)> = vec![(Instant::ZERO, None); cpus];
        let mut out = Vec::new();
        let mut close = |cpu: usize, from: Instant, to: Instant, who: Option<ThreadId>| {
            let to = to.min(end);
            if to <= from {
                return;
            }
            let what = who.map_or(SegmentKind::Idle, SegmentKind::Run);
            out.push(Segment {
                cpu: CpuId(cpu as u32),
                start: from,
                end: to,
                what,
            });
        };
        for &(at, seen) in self.iter() {
            let Seen::Switch {
                cpu: Some(c), next, ..
            } = seen
            else {
                continue;
            };
            let (since, who) = current[c];
            if who == next {
                continue;
            }
            close(c, since, at, who);
            current[c] = (at.min(end).max(since), next);
        }
        for (c, &(since, who)) in current.iter().enumerate() {
            close(c, since, end, who);
        }
        out.sort_by_key(|s| (s.cpu, s.start));
        // Merge what a switch between two unmanaged threads split.
        let mut merged: Vec<Segment> = Vec::with_capacity(out.len());
        for s in out {
            match merged.last_mut() {
                Some(m) if m.cpu == s.cpu && m.what == s.what && m.end == s.start => m.end = s.end,
                _ => merged.push(s),
            }
        }
        merged
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsched_core::Duration;

    fn t(i: u32) -> Option<ThreadId> {
        Some(ThreadId(i))
    }

    fn switch(cpu: usize, prev: Option<ThreadId>, blocked: bool, next: Option<ThreadId>) -> Seen {
        Seen::Switch {
            cpu: Some(cpu),
            prev,
            blocked,
            next,
        }
    }

    fn example() -> Observations {
        let mut o = Observations::default();
        // Thread 0 runs on CPU 0 from 10, is preempted by 1 at 30 (woken
        // at 25), gets back at 50 on CPU 1, blocks at 60.
        o.push(Instant(5), Seen::Wakeup(ThreadId(0)));
        o.push(Instant(10), switch(0, None, false, t(0)));
        o.push(Instant(25), Seen::Wakeup(ThreadId(1)));
        o.push(Instant(30), switch(0, t(0), false, t(1)));
        o.push(Instant(50), switch(1, None, false, t(0)));
        o.push(Instant(60), switch(1, t(0), true, None));
        o
    }

    #[test]
    fn latencies_waits_switches_and_migrations() {
        let f = example().thread_figures(2, Instant(100));
        assert_eq!(f[0].wakeup_latencies, vec![Duration(5)]);
        assert_eq!(f[0].max_runnable_gap, Duration(20), "preempted 30..50");
        assert_eq!(f[0].context_switches, 2);
        assert_eq!(f[0].migrations, 1);
        assert_eq!(f[1].wakeup_latencies, vec![Duration(5)]);
        assert_eq!(f[1].context_switches, 1);
        // As the segments have it: 0 ran 10..30 and 50..60, 1 from 30 on.
        assert_eq!(f[0].cpu_time, Duration(30));
        assert_eq!(f[1].cpu_time, Duration(70), "still running at the end");
    }

    /// A CPU's busy time is its managed threads' time there, as their
    /// `cpu_time` counts it.
    #[test]
    fn a_cpu_is_busy_while_managed_threads_run_on_it() {
        let o = example();
        // CPU 0: thread 0 10..30, thread 1 30..100; CPU 1: thread 0 50..60.
        assert_eq!(
            o.cpu_busy(2, Instant(100)),
            vec![Duration(90), Duration(10)]
        );
        assert_eq!(
            o.cpu_busy(3, Instant(100))[2],
            Duration::ZERO,
            "a CPU nothing ran on"
        );
        let f = o.thread_figures(2, Instant(100));
        let busy = (o.cpu_busy(2, Instant(100)).into_iter()).fold(Duration::ZERO, |a, b| a + b);
        assert_eq!(busy, f[0].cpu_time + f[1].cpu_time);
    }

    /// Past the events a run keeps, the timeline is given up and the
    /// figures still count every event; past the latencies a thread keeps,
    /// they are counted in a histogram.
    #[test]
    fn a_long_run_keeps_bounded_events_and_counts_them_all() {
        let mut o = Observations::default();
        // Thread 0 woken, then run for 1 ns on CPU 0, over and over.
        let rounds = MAX_KEPT_EVENTS as u64 / 3 + 1;
        for i in 0..rounds {
            o.push(Instant(10 * i), Seen::Wakeup(ThreadId(0)));
            o.push(Instant(10 * i + 2), switch(0, None, false, t(0)));
            o.push(Instant(10 * i + 3), switch(0, t(0), true, None));
        }
        assert!(!o.timeline_kept());
        assert_eq!(o.iter().count(), 0, "the events are dropped");
        assert_eq!(o.len(), 3 * rounds);
        let f = &o.thread_figures(1, Instant(10 * rounds))[0];
        assert_eq!(f.cpu_time, Duration(rounds));
        assert_eq!(f.context_switches, rounds);
        assert_eq!(f.wakeup_latencies.len(), hsched_model::MAX_KEPT_LATENCIES);
        let sketch = f.wakeup_sketch.as_ref().expect("past the bound");
        assert_eq!(sketch.count(), rounds);
        assert_eq!(sketch.max(), Some(2));
    }

    #[test]
    fn a_family_counts_its_members_figures_and_histograms() {
        let mut head = ThreadFigures {
            wakeup_latencies: vec![Duration(1)],
            cpu_time: Duration(5),
            ..Default::default()
        };
        let mut sketch = Sketch::default();
        sketch.add(7);
        sketch.add(9);
        head.absorb(ThreadFigures {
            wakeup_latencies: vec![Duration(7)],
            wakeup_sketch: Some(sketch),
            cpu_time: Duration(3),
            context_switches: 2,
            ..Default::default()
        });
        assert_eq!(head.cpu_time, Duration(8));
        assert_eq!(head.context_switches, 2);
        let all = head.wakeup_sketch.expect("a member had one");
        assert_eq!((all.count(), all.max()), (3, Some(9)));
    }

    #[test]
    fn a_thread_still_waiting_at_the_end_counts_its_wait() {
        let mut o = Observations::default();
        o.push(Instant(40), Seen::Wakeup(ThreadId(0)));
        let f = o.thread_figures(1, Instant(100));
        assert_eq!(f[0].max_runnable_gap, Duration(60));
        assert!(f[0].wakeup_latencies.is_empty(), "it never ran");
    }

    #[test]
    fn segments_cover_each_cpu_exactly() {
        let segs = example().segments(2, Instant(100));
        let on = |cpu: u32| -> Vec<(u64, u64, SegmentKind)> {
            segs.iter()
                .filter(|s| s.cpu == CpuId(cpu))
                .map(|s| (s.start.0, s.end.0, s.what))
                .collect()
        };
        use SegmentKind::{Idle, Run};
        assert_eq!(
            on(0),
            vec![
                (0, 10, Idle),
                (10, 30, Run(ThreadId(0))),
                (30, 100, Run(ThreadId(1)))
            ]
        );
        assert_eq!(
            on(1),
            vec![(0, 50, Idle), (50, 60, Run(ThreadId(0))), (60, 100, Idle)]
        );
    }
}
