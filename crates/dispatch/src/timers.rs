//! The dispatcher's clock and timers: policy timers, decision horizons
//! and the watchdog, ordered by (time, sequence), rounded up to the tick
//! when the platform has one.

use crate::dispatcher::{Dispatcher, Platform};
use crate::table::TimerKind;
use hsched_core::Instant;
use std::cmp::Reverse;

impl Dispatcher {
    /// Fires every dispatcher timer due at or before `now` (policy timers,
    /// decision horizons, the watchdog), each followed by its consequences.
    pub fn advance(&mut self, p: &mut dyn Platform, now: Instant) {
        self.set_now(now);
        while let Some(&Reverse((at, _, kind))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            match kind {
                TimerKind::Policy { sched, key, gen } => {
                    let current = self.inst(sched).and_then(|i| i.timers.get(&key)) == Some(&gen);
                    if current {
                        self.fired += 1;
                        self.inst_mut(sched).unwrap().timers.remove(&key);
                        self.call(sched, |s, cx| s.timer(cx, key));
                    }
                }
                TimerKind::Horizon { cpu, gen } => {
                    let c = &self.cpus[cpu as usize];
                    if c.horizon_gen == gen {
                        self.fired += 1;
                        if let Some(depth) = c.path.iter().position(|h| h.until <= now) {
                            self.mark_dirty(cpu as usize, depth);
                        }
                    }
                }
                TimerKind::Watchdog => {
                    self.fired += 1;
                    self.watchdog();
                }
            }
            self.settle(p);
        }
    }

    pub(crate) fn set_now(&mut self, now: Instant) {
        debug_assert!(now >= self.now, "time went backwards: {now} < {}", self.now);
        self.now = now.max(self.now);
        self.event += 1;
    }

    pub(crate) fn quantize(&self, at: Instant) -> Instant {
        match self.cfg.tick {
            Some(tick) if !at.is_never() && tick.as_nanos() > 0 => {
                let t = tick.as_nanos();
                Instant(at.as_nanos().div_ceil(t).saturating_mul(t))
            }
            _ => at,
        }
    }

    pub(crate) fn arm(&mut self, at: Instant, kind: TimerKind) {
        self.seq += 1;
        self.timers.push(Reverse((at, self.seq, kind)));
    }
}
