//! The dispatcher's watchdogs: the starvation watchdog, which ejects the
//! scheduler that keeps a runnable thread off the CPU past a bound, and the
//! structural checks run after every event in checking mode.

use crate::dispatcher::Dispatcher;
use crate::table::{half, ChildRef, TimerKind};
use hsched_core::{ChildId, CpuId, ParentVp, SchedId, ThreadId, VpState};
use hsched_model::LogKind;

impl Dispatcher {
    // ----- watchdog -------------------------------------------------------------

    pub(crate) fn watchdog(&mut self) {
        let Some(bound) = self.cfg.watchdog else {
            return;
        };
        let now = self.now;
        for i in 0..self.threads.len() {
            let thr = &self.threads[i];
            if !(thr.alive && thr.runnable && thr.running.is_none() && !thr.starving_reported) {
                continue;
            }
            let waited = now.saturating_since(thr.waiting_since);
            if waited <= bound {
                continue;
            }
            self.threads[i].starving_reported = true;
            let name = self.threads[i].name.clone();
            match self.starvation_culprit(ThreadId(i as u32)) {
                Some(s) => {
                    let why = format!("starved thread `{name}` for {waited} (watchdog bound {bound})");
                    self.record(LogKind::Watchdog, why.clone());
                    self.eject(s, why);
                }
                None => self.record(
                    LogKind::Watchdog,
                    format!("thread `{name}` waited {waited} under the default scheduler (bound {bound})"),
                ),
            }
        }
        self.arm(now.saturating_add(half(bound)), TimerKind::Watchdog);
    }

    /// The scheduler to blame for a starving thread. Going up from the
    /// thread: a scheduler that holds a CPU and does not run the thread's
    /// branch is to blame, and so is one that asks for no CPU although the
    /// branch is runnable; one that asks but is not granted passes the blame
    /// up. The default scheduler is never blamed (it is where threads go
    /// after an ejection): the starvation is then only logged.
    fn starvation_culprit(&self, t: ThreadId) -> Option<SchedId> {
        let mut link = self.threads[t.index()].parent?;
        loop {
            let inst = self.inst(link.parent)?;
            let holds = inst.vps.iter().any(|v| matches!(v, VpState::Held(_)));
            let requesting = inst
                .vps
                .iter()
                .zip(&inst.links)
                .find(|(v, l)| **v == VpState::Requesting && l.is_some());
            match requesting {
                Some((_, next)) if !holds => link = next.unwrap(),
                _ => return (Some(link.parent) != self.default).then_some(link.parent),
            }
        }
    }

    // ----- structural checks ------------------------------------------------------

    /// The dispatcher's own invariants: every CPU's path is a chain of valid
    /// grants from the root to at most one thread; every running child
    /// appears on exactly the path of its CPU; no thread runs on two CPUs.
    pub fn check_structure(&self) -> Result<(), String> {
        let mut running_threads = vec![None; self.threads.len()];
        for (cpu, c) in self.cpus.iter().enumerate() {
            let cpu_id = CpuId(cpu as u32);
            if self.root.is_none() {
                continue;
            }
            let first = c
                .path
                .first()
                .ok_or_else(|| format!("cpu{cpu}: empty path"))?;
            if Some(first.sched) != self.root || first.vp != ParentVp(cpu as u32) {
                return Err(format!(
                    "cpu{cpu}: path does not start at the root's VP {cpu}"
                ));
            }
            for (k, hop) in c.path.iter().enumerate() {
                let inst = self
                    .inst(hop.sched)
                    .ok_or_else(|| format!("cpu{cpu}: path holds destroyed {}", hop.sched))?;
                if k > 0 && inst.vps[hop.vp.index()] != VpState::Held(cpu_id) {
                    return Err(format!(
                        "cpu{cpu}: {} {} is on the path but not held",
                        inst.name, hop.vp
                    ));
                }
                let Some(child) = hop.child else {
                    if k + 1 != c.path.len() || c.thread.is_some() {
                        return Err(format!("cpu{cpu}: an idle grant is not the last"));
                    }
                    continue;
                };
                let kid = inst
                    .kid(child)
                    .ok_or_else(|| format!("cpu{cpu}: {} runs unknown {child}", inst.name))?;
                if kid.running != Some(cpu_id) || !kid.runnable {
                    return Err(format!(
                        "cpu{cpu}: {} {child} on the path is not runnable+running here",
                        inst.name
                    ));
                }
                match kid.what {
                    ChildRef::Thread(t) => {
                        if k + 1 != c.path.len() || c.thread != Some(t) {
                            return Err(format!("cpu{cpu}: thread grant is not the leaf"));
                        }
                        let thr = &self.threads[t.index()];
                        if !thr.runnable || thr.running != Some(cpu_id) {
                            return Err(format!(
                                "cpu{cpu}: thread {} is not runnable+running",
                                thr.name
                            ));
                        }
                        if running_threads[t.index()].replace(cpu).is_some() {
                            return Err(format!("thread {} runs on two CPUs", thr.name));
                        }
                    }
                    ChildRef::Vp(cs, cvp) => {
                        let next = c
                            .path
                            .get(k + 1)
                            .ok_or_else(|| format!("cpu{cpu}: path ends at a VP grant"))?;
                        if (next.sched, next.vp) != (cs, cvp) {
                            return Err(format!("cpu{cpu}: path does not follow the grant"));
                        }
                    }
                }
            }
        }
        for (i, thr) in self.threads.iter().enumerate() {
            if thr.running.is_some() != running_threads[i].is_some() {
                return Err(format!(
                    "thread {} thinks it runs but no CPU path says so",
                    thr.name
                ));
            }
        }
        for (s, inst) in self.scheds.iter().enumerate() {
            let Some(inst) = inst else { continue };
            for (c, kid) in inst.children.iter().enumerate() {
                let Some(kid) = kid else { continue };
                if let Some(cpu) = kid.running {
                    let on_path = self.cpus[cpu.index()].path.iter().any(|h| {
                        h.sched == SchedId(s as u32) && h.child == Some(ChildId(c as u32))
                    });
                    if !on_path {
                        return Err(format!(
                            "{} child{c} marked running on {cpu} but not on its path",
                            inst.name
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::dispatcher::{Config, Dispatcher, Platform};
    use crate::hierarchy::AttachLink;
    use hsched_core::{CpuId, Duration, Instant, Params, ThreadId, Value};

    struct NoPlatform;
    impl Platform for NoPlatform {
        fn set_cpu(&mut self, _: Instant, _: CpuId, _: Option<ThreadId>) {}
    }

    /// An `fp` under the default `rr` that keeps its low thread waiting is
    /// ejected by the watchdog: both its threads are reported (a live
    /// platform hands them back to its operating system), once.
    #[test]
    fn the_threads_of_an_ejected_scheduler_are_reported_once() {
        let mut d = Dispatcher::new(
            Config {
                cpus: 1,
                tick: None,
                watchdog: Some(Duration::from_millis(100)),
                check_invariants: true,
            },
            hsched_policies::builtins(),
        );
        let p = &mut NoPlatform;
        let root = d.create_root("root", "rr", &Params::new()).unwrap();
        d.set_default(root);
        let fp = d.create("fp", "fp", &Params::new(), 1).unwrap();
        let link = AttachLink {
            parent: root,
            vps: 1,
            params: Params::new(),
        };
        d.attach(p, Instant::ZERO, fp, &[link]).unwrap();
        let prio = |v| Params::new().with("prio", Value::Int(v));
        let (high, _) = d.add_thread(Instant::ZERO, "high", fp, &prio(2));
        let (low, _) = d.add_thread(Instant::ZERO, "low", fp, &prio(1));
        for t in [high, low] {
            d.thread_ready(p, Instant::ZERO, t);
        }
        assert!(d.take_ejected_threads().is_empty());
        for ms in (10..=400).step_by(10) {
            d.advance(p, Instant::ZERO + Duration::from_millis(ms));
        }
        let mut ejected = d.take_ejected_threads();
        ejected.sort();
        assert_eq!(ejected, vec![high, low], "{:#?}", d.take_log());
        assert_eq!(d.thread_sched(low), Some(root));
        d.advance(p, Instant::ZERO + Duration::from_millis(800));
        assert!(d.take_ejected_threads().is_empty());
    }
}
