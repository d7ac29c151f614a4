//! What the managed threads really did, from the kernel's switch and
//! wakeup events: who ran on each managed CPU when (the trace's
//! segments), and each thread's wakeup-to-run latencies, longest wait,
//! context switches and migrations, measured as `hsched sim` measures
//! them in simulation.
//!
//! The agent records every event of a managed thread as it reads it; the
//! figures are computed once, after the run.

use hsched_core::{CpuId, Instant, ThreadId};
use hsched_model::{Segment, SegmentKind};

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

/// Everything seen, in time order.
///
/// Kept in chunks rather than one vector: the agent records
/// on the CPU it manages, with its memory locked, and doubling a vector of
/// a second's events there (copied, its new pages faulted in) held a
/// managed thread off the CPU for 0.7 ms.
#[derive(Clone, Debug, Default)]
pub struct Observations {
    chunks: Vec<Vec<(Instant, Seen)>>,
}

/// Events per chunk of [`Observations`] (64 KiB).
const CHUNK: usize = 2048;

/// A thread's measured figures (see [`hsched_model::ThreadResult`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadFigures {
    pub wakeup_latencies: Vec<hsched_core::Duration>,
    pub max_runnable_gap: hsched_core::Duration,
    pub context_switches: u64,
    pub migrations: u64,
}

impl Observations {
    pub fn push(&mut self, at: Instant, seen: Seen) {
        // In time order, even where the kernel's CPUs' stamps are not.
        let last = self.chunks.last().and_then(|c| c.last());
        let at = last.map_or(at, |&(last, _)| at.max(last));
        match self.chunks.last_mut() {
            Some(c) if c.len() < CHUNK => c.push((at, seen)),
            _ => {
                let mut c = Vec::with_capacity(CHUNK);
                c.push((at, seen));
                self.chunks.push(c);
            }
        }
    }

    /// Everything seen, in time order.
    pub fn iter(&self) -> impl Iterator<Item = &(Instant, Seen)> {
        self.chunks.iter().flatten()
    }

    /// How many events were seen.
    pub fn len(&self) -> usize {
        self.chunks.iter().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// Each of `threads` threads' figures, up to `end`.
    pub fn thread_figures(&self, threads: usize, end: Instant) -> Vec<ThreadFigures> {
        #[derive(Clone, Copy, Default)]
        struct State {
            /// Runnable (woken or preempted) since, and whether by a wakeup.
            waiting: Option<(Instant, bool)>,
            cpu: Option<usize>,
            running: bool,
        }
        let mut figures = vec![ThreadFigures::default(); threads];
        let mut state = vec![State::default(); threads];
        let mut last_on_cpu: Vec<Option<ThreadId>> = Vec::new();
        let gap = |f: &mut ThreadFigures, since: Instant, at: Instant| {
            f.max_runnable_gap = f.max_runnable_gap.max(at.saturating_since(since));
        };
        for &(at, seen) in self.iter() {
            match seen {
                Seen::Wakeup(t) => {
                    let s = &mut state[t.index()];
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
                        let s = &mut state[p.index()];
                        s.running = false;
                        s.waiting = (!blocked).then_some((at, false));
                    }
                    if let Some(n) = next {
                        let (s, f) = (&mut state[n.index()], &mut figures[n.index()]);
                        if let Some((since, woken)) = s.waiting.take() {
                            gap(f, since, at);
                            if woken {
                                f.wakeup_latencies.push(at.saturating_since(since));
                            }
                        }
                        if let Some(c) = cpu {
                            if last_on_cpu.len() <= c {
                                last_on_cpu.resize(c + 1, None);
                            }
                            if last_on_cpu[c] != Some(n) {
                                f.context_switches += 1;
                            }
                            if s.cpu.is_some_and(|old| old != c) {
                                f.migrations += 1;
                            }
                            s.cpu = Some(c);
                        }
                        s.running = true;
                    }
                    if let Some(c) = cpu {
                        if last_on_cpu.len() <= c {
                            last_on_cpu.resize(c + 1, None);
                        }
                        last_on_cpu[c] = next;
                    }
                }
            }
        }
        // Still waiting at the end: the wait so far counts.
        for (s, f) in state.iter().zip(&mut figures) {
            if let Some((since, _)) = s.waiting {
                gap(f, since, end);
            }
        }
        figures
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
