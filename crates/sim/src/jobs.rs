//! The job records of a run, bounded in memory.
//!
//! A record is kept while its job can still change (the thread's program
//! holds its index) and, beyond that, up to a bound on records held
//! ([`DEFAULT_KEEP_JOBS`], `hsched sim --keep-jobs`). When the bound is
//! reached, the older half of the records whose jobs are over are
//! *retired*: counted per thread (count, deadline misses, response times
//! in a bounded histogram) and handed to the job sink if there is one (the
//! jobs CSV, written as the run goes), then dropped. A run that stays
//! under the bound retires nothing and produces the same records, in the
//! same order, as if there were none.

use hsched_core::{Instant, ThreadId};
use hsched_model::{JobRecord, JobTally};
use std::collections::{HashMap, HashSet, VecDeque};
use std::ops::{Index, IndexMut};

/// How many job records a run holds in memory by default: a million
/// records are about 72 MB; a run that releases more (a 1 ms period over
/// 20 minutes, a 1 ns period over 1 ms) keeps counting them without
/// keeping each.
pub const DEFAULT_KEEP_JOBS: usize = 1_000_000;

/// The smallest bound accepted: the newer half of the window, never
/// retired, must hold every record made within one simulated step (a job
/// and the few wakeup jobs the replies to its messages may make) before
/// the thread's state names it.
pub const MIN_KEEP_JOBS: usize = 64;

/// Where retired records go, in the order retired, each exactly once,
/// with the name of the job's thread.
pub type JobSink = Box<dyn FnMut(&JobRecord, &str)>;

/// The job records of a run, indexed by the order they were made.
pub(crate) struct JobStore {
    /// The index of `window[0]`.
    base: usize,
    /// The records from `base` on, in order.
    window: VecDeque<JobRecord>,
    /// Records before `base` whose jobs were still in progress when the
    /// window moved past them.
    held: HashMap<usize, JobRecord>,
    /// The bound on `window`.
    keep: usize,
    /// The end of the run, against which a retired job counts as missed.
    end: Instant,
    /// Per thread (index: thread id), the retired jobs.
    tallies: Vec<JobTally>,
    retired: u64,
    sink: Option<JobSink>,
}

impl JobStore {
    pub(crate) fn new(end: Instant) -> Self {
        JobStore {
            base: 0,
            window: VecDeque::new(),
            held: HashMap::new(),
            keep: DEFAULT_KEEP_JOBS,
            end,
            tallies: Vec::new(),
            retired: 0,
            sink: None,
        }
    }

    /// Sets the bound; at least [`MIN_KEEP_JOBS`].
    pub(crate) fn set_keep(&mut self, keep: usize) {
        self.keep = keep.max(MIN_KEEP_JOBS);
    }

    pub(crate) fn keep(&self) -> usize {
        self.keep
    }

    pub(crate) fn set_sink(&mut self, sink: JobSink) {
        self.sink = Some(sink);
    }

    /// The index the next record gets.
    pub(crate) fn len(&self) -> usize {
        self.base + self.window.len()
    }

    /// Whether the window is at its bound: [`JobStore::retire`] is due
    /// before the next push.
    pub(crate) fn full(&self) -> bool {
        self.window.len() >= self.keep
    }

    pub(crate) fn push(&mut self, job: JobRecord) {
        self.window.push_back(job);
    }

    /// Retires the older half of the window except the records in `live`
    /// (still in progress: those move to `held`), and the held records no
    /// longer live. The newer half stays whatever it holds: a record made
    /// in the step being simulated may not be in `live` yet. Returns the
    /// retired jobs that are unfinished with their deadline before the end
    /// (deadline, thread, job), for the trace's deadline-miss marks.
    pub(crate) fn retire(
        &mut self,
        live: &HashSet<usize>,
        names: &[&str],
    ) -> Vec<(Instant, ThreadId, u64)> {
        let mut missed = Vec::new();
        let mut done: Vec<usize> = self
            .held
            .keys()
            .filter(|i| !live.contains(i))
            .copied()
            .collect();
        done.sort_unstable();
        for i in done {
            let job = self.held.remove(&i).expect("listed from held");
            self.retire_one(&job, names, &mut missed);
        }
        let old = self.window.len() - self.keep / 2;
        for _ in 0..old {
            let job = self.window.pop_front().expect("counted");
            let i = self.base;
            self.base += 1;
            if live.contains(&i) {
                self.held.insert(i, job);
            } else {
                self.retire_one(&job, names, &mut missed);
            }
        }
        missed
    }

    fn retire_one(
        &mut self,
        job: &JobRecord,
        names: &[&str],
        missed: &mut Vec<(Instant, ThreadId, u64)>,
    ) {
        let t = job.thread.index();
        if self.tallies.len() <= t {
            self.tallies.resize_with(t + 1, JobTally::default);
        }
        self.tallies[t].add(job, self.end);
        self.retired += 1;
        if job.finish.is_none() && job.deadline < self.end {
            missed.push((job.deadline, job.thread, job.job));
        }
        if let Some(sink) = &mut self.sink {
            sink(job, names.get(t).copied().unwrap_or_default());
        }
    }

    /// Every record still held, in the order made.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &JobRecord> {
        let mut held: Vec<(&usize, &JobRecord)> = self.held.iter().collect();
        held.sort_unstable_by_key(|(i, _)| **i);
        held.into_iter().map(|(_, j)| j).chain(self.window.iter())
    }

    /// The records still held (in the order made), the tallies of the
    /// retired ones (empty when none was) and how many were retired.
    pub(crate) fn into_parts(self) -> (Vec<JobRecord>, Vec<JobTally>, u64) {
        let mut held: Vec<(usize, JobRecord)> = self.held.into_iter().collect();
        held.sort_unstable_by_key(|(i, _)| *i);
        let jobs = held
            .into_iter()
            .map(|(_, j)| j)
            .chain(self.window)
            .collect();
        (jobs, self.tallies, self.retired)
    }
}

impl Index<usize> for JobStore {
    type Output = JobRecord;

    fn index(&self, i: usize) -> &JobRecord {
        match i.checked_sub(self.base) {
            Some(k) => &self.window[k],
            None => self.held.get(&i).expect("a job in progress is held"),
        }
    }
}

impl IndexMut<usize> for JobStore {
    fn index_mut(&mut self, i: usize) -> &mut JobRecord {
        match i.checked_sub(self.base) {
            Some(k) => &mut self.window[k],
            None => self.held.get_mut(&i).expect("a job in progress is held"),
        }
    }
}
