//! Events from the platform: a thread wakes, blocks, faults, exits or
//! synchronises, a message arrives, the run ends. Each is delivered to the
//! schedulers it concerns, then the dispatcher settles.

use crate::dispatcher::{Dispatcher, Platform};
use hsched_core::{Instant, Msg, Reply, SchedId, Sender, SyncEvent, ThreadId};
use hsched_model::guard::{Change, Ruling};
use hsched_model::{Action, LogKind};

impl Dispatcher {
    /// A thread became runnable.
    pub fn thread_ready(&mut self, p: &mut dyn Platform, now: Instant, t: ThreadId) {
        self.set_now(now);
        let thr = &mut self.threads[t.index()];
        if !thr.alive || thr.runnable {
            return;
        }
        thr.runnable = true;
        thr.waiting_since = now;
        thr.starving_reported = false;
        if let Some(link) = thr.parent {
            self.deliver_request(link);
        }
        self.settle(p);
    }

    /// A thread blocked (or yielded: block then ready at the same instant).
    pub fn thread_block(&mut self, p: &mut dyn Platform, now: Instant, t: ThreadId) {
        self.set_now(now);
        self.block_inner(t);
        self.settle(p);
    }

    /// A thread blocked involuntarily (a page fault): its scheduler's
    /// `vp_release` sees `Cx::involuntary()` set.
    pub fn thread_fault(&mut self, p: &mut dyn Platform, now: Instant, t: ThreadId) {
        self.set_now(now);
        self.involuntary = true;
        self.block_inner(t);
        self.involuntary = false;
        self.settle(p);
    }

    /// A thread ended. Its scheduler learns it through `vp_release` (if it
    /// was runnable) and `unregister_vp`.
    pub fn thread_exit(&mut self, p: &mut dyn Platform, now: Instant, t: ThreadId) {
        self.set_now(now);
        self.block_inner(t);
        self.detach_thread(t);
        self.threads[t.index()].alive = false;
        self.settle(p);
    }

    /// A thread took, waits for or gave up a mutex, or an RPC began or
    /// ended: the scheduler `event`'s acting thread is a direct child of
    /// hears of it (see [`SyncEvent`]). A hand-over to a waiter under
    /// another scheduler is a `Released` with no `to` here and an
    /// `Acquired` there; an RPC between threads of different schedulers is
    /// not delivered (inheritance does not cross schedulers).
    pub fn sync(&mut self, p: &mut dyn Platform, now: Instant, event: SyncEvent<ThreadId>) {
        self.set_now(now);
        let link = |d: &Self, t: ThreadId| {
            d.threads
                .get(t.index())
                .filter(|th| th.alive)
                .and_then(|th| th.parent)
        };
        let Some(actor) = link(self, event.actor()) else {
            return;
        };
        let local = |d: &Self, t: ThreadId| {
            link(d, t)
                .filter(|l| l.parent == actor.parent)
                .map(|l| l.child)
        };
        let mut handed_elsewhere = None;
        let delivered = match event {
            SyncEvent::Acquired {
                mutex, protocol, ..
            } => Some(SyncEvent::Acquired {
                thread: actor.child,
                mutex,
                protocol,
            }),
            SyncEvent::Blocked {
                mutex, protocol, ..
            } => Some(SyncEvent::Blocked {
                thread: actor.child,
                mutex,
                protocol,
            }),
            SyncEvent::Released {
                mutex,
                to,
                protocol,
                ..
            } => {
                let to_here = to.and_then(|w| local(self, w));
                if to_here.is_none() {
                    handed_elsewhere = to.map(|w| SyncEvent::Acquired {
                        thread: w,
                        mutex,
                        protocol,
                    });
                }
                Some(SyncEvent::Released {
                    thread: actor.child,
                    mutex,
                    to: to_here,
                    protocol,
                })
            }
            SyncEvent::CallServed { server, .. } => {
                local(self, server).map(|server| SyncEvent::CallServed {
                    client: actor.child,
                    server,
                })
            }
            SyncEvent::CallEnded { server, .. } => {
                local(self, server).map(|server| SyncEvent::CallEnded {
                    client: actor.child,
                    server,
                })
            }
        };
        if let Some(ev) = delivered {
            self.call(actor.parent, |s, cx| s.sync(cx, &ev));
        }
        self.settle(p);
        if let Some(ev) = handed_elsewhere {
            self.sync(p, now, ev);
        }
    }

    /// A message to scheduler `to` from a thread (or the operator when
    /// `from` is `None`), answered at once. `join` and `leave` are the
    /// dispatcher's own (Vassal's JOIN): the sender moves to `to` (with the
    /// message's arguments as attachment parameters) or back to the default.
    pub fn message(
        &mut self,
        p: &mut dyn Platform,
        now: Instant,
        from: Option<ThreadId>,
        to: SchedId,
        msg: &Msg,
    ) -> Reply {
        self.set_now(now);
        let reply = self.message_inner(from, to, msg);
        self.settle(p);
        reply
    }

    fn message_inner(&mut self, from: Option<ThreadId>, to: SchedId, msg: &Msg) -> Reply {
        if self.inst(to).is_none() {
            return Reply::Err(format!("no scheduler {to} (it was destroyed)"));
        }
        match (msg.name.as_str(), from) {
            ("join", Some(t)) => self.guarded_move(t, to, &msg.args),
            ("leave", Some(t)) => match self.default {
                Some(d) => self.guarded_move(t, d, &hsched_core::Params::new()),
                None => Reply::Err("there is no default scheduler".into()),
            },
            _ => {
                let child = from.and_then(|t| {
                    self.threads[t.index()]
                        .parent
                        .filter(|l| l.parent == to)
                        .map(|l| l.child)
                });
                let sender = Sender {
                    thread: from,
                    child,
                };
                let reply = self
                    .call(to, |s, cx| s.msg(cx, sender, msg))
                    .unwrap_or_else(|| {
                        Reply::Err("the scheduler was ejected while answering".into())
                    });
                if let (Reply::Ok(_), Some(t), Some(inst)) = (&reply, from, self.inst(to)) {
                    let change = Change::Admitted {
                        thread: &self.threads[t.index()].name,
                        to: &inst.name,
                        msg,
                    };
                    self.applied(self.now, &change);
                }
                reply
            }
        }
    }

    /// Thread `t` asks to move to `to` (`join`, `leave`): put to the guard
    /// as a move, then to `to`'s admission.
    fn guarded_move(&mut self, t: ThreadId, to: SchedId, params: &hsched_core::Params) -> Reply {
        if self.guard.is_none() {
            return match self.move_thread_inner(t, to, params) {
                Ok(()) => Reply::ok(),
                Err(e) => Reply::Err(e),
            };
        }
        let action = Action::Move {
            thread: self.threads[t.index()].name.clone(),
            to: self.sched_name(to).to_string(),
            params: params.clone(),
        };
        let change = Change::Hierarchy(&action);
        let warning = match self.review(self.now, &change) {
            Ruling::Refuse(why) => return Reply::Err(why),
            Ruling::Warn(why) => Some(why),
            Ruling::Accept => None,
        };
        match self.move_thread_inner(t, to, params) {
            Ok(()) => {
                self.applied(self.now, &change);
                if let Some(why) = warning {
                    let text = format!(
                        "thread `{}` moved to `{}` by message: {why}",
                        self.threads[t.index()].name,
                        self.sched_name(to)
                    );
                    self.record(LogKind::Uncomposed, text);
                }
                Reply::ok()
            }
            Err(e) => Reply::Err(e),
        }
    }

    /// Ends the run at `now`: charges every CPU's current run segment so that
    /// each scheduler's received time covers the whole run.
    pub fn close(&mut self, p: &mut dyn Platform, now: Instant) {
        self.set_now(now);
        for cpu in 0..self.cpus.len() {
            self.end_segment(cpu);
        }
        self.settle(p);
    }

    fn block_inner(&mut self, t: ThreadId) {
        let thr = &mut self.threads[t.index()];
        if !thr.alive || !thr.runnable {
            return;
        }
        thr.runnable = false;
        let running = thr.running;
        let Some(link) = thr.parent else { return };
        if let Some(cpu) = running {
            self.end_segment(cpu.index());
            let depth = self.cpus[cpu.index()].path.len() - 1;
            self.unwind_below(cpu.index(), depth);
            self.mark_dirty(cpu.index(), depth);
        }
        self.deliver_release(link);
    }
}
