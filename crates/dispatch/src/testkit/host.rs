//! A [`Cx`] for one callback, outside any dispatcher: what exactly one
//! callback asks for.

use hsched_core::{Cx, Duration, Effect, Instant, Scheduler, VpState};

/// Makes a [`Cx`] for one callback and collects the effects it asks for.
#[derive(Clone, Debug)]
pub struct Host {
    pub now: Instant,
    pub cpus: u32,
    pub tick: Option<Duration>,
    pub vps: Vec<VpState>,
}

impl Host {
    /// A host with `vp_count` idle VPs on a machine of as many CPUs.
    pub fn new(vp_count: u32) -> Self {
        Host {
            now: Instant::ZERO,
            cpus: vp_count.max(1),
            tick: None,
            vps: vec![VpState::Idle; vp_count as usize],
        }
    }

    /// Runs one callback of `sched` and returns its result and the effects it
    /// asked for (not applied).
    pub fn call<S: Scheduler + ?Sized, R>(
        &self,
        sched: &mut S,
        f: impl FnOnce(&mut S, &mut Cx) -> R,
    ) -> (R, Vec<Effect>) {
        let mut effects = Vec::new();
        let mut cx = Cx::new(self.now, self.cpus, self.tick, &self.vps, &mut effects);
        let r = f(sched, &mut cx);
        (r, effects)
    }
}
