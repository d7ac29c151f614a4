//! Protection domains, train calls and RPC: cross-domain scheduling after
//! Yau, Tan & Lam, "Decoupled delay and rate" §6 (Figs. 12–14).
//!
//! A domain is a process: it exports stops (entry points, each a body of
//! operations) and is the home of some threads. A thread can be *in* a
//! domain other than its home:
//!
//! - **Train call** (Fig. 13): the caller itself enters the server domain
//!   and runs the stop's body there. It stays under its own scheduler with
//!   its own parameters, and the call is no rescheduling point (no block,
//!   no wakeup: the dispatcher sees nothing). An invocation record (the
//!   caller's domain, code and position) is pushed on the thread's stack
//!   and popped on return; calls nest without limit.
//! - **RPC** (Fig. 12): the caller blocks; a server thread of the domain,
//!   blocked in its `serve` loop under its own scheduler, takes the
//!   request, runs the body and replies, which wakes the caller.
//!
//! Faults (the leg status, Fig. 14). A domain's `alive` flag is its leg
//! status: domains are never deallocated during a run, so the flag
//! outlives the process, as the paper's reference-counted leg status does
//! (no counting is needed). A return checks the caller's domain: dead, the
//! record is popped (that call is `caller gone`) and the return goes to the
//! next caller with `broken pipe`; when no record is left the thread exits.
//! Killing a domain asks every thread in it to leave: each returns to its
//! first valid caller with `server exit` or exits; queued RPC requests are
//! answered `server exit`; a server thread that dies mid-request answers
//! its client `server exit`. So every call made from a live domain
//! returns, with results or an error.
//!
//! A declared domain is alive from the start unless declared with `start =
//! false`; `create` (a program's or the script's) starts one that is not
//! alive, as a new incarnation: the killed one stays dead, so records that
//! name it still see an invalid leg status. A thread whose home domain is
//! not alive when it arrives ends at once.
//!
//! Limits: at most [`MAX_DEPTH`] calls open per thread; a thread killed
//! while it holds a mutex keeps it (the mutex is never released).

use super::domains::{CallOutcome, CallRecord, Domain, Record, Request, MAX_DEPTH};
use super::{Outcome, World};
use hsched_core::{Instant, SyncEvent, ThreadId};
use hsched_model::{DomainSpec, LogKind, Via};

impl World {
    /// The newest incarnation of domain `name`.
    pub(crate) fn domain_by_name(&self, name: &str) -> Option<usize> {
        self.domains.iter().rposition(|d| d.name == name)
    }

    /// Declares a domain; it is alive at once if `spec.start`.
    pub(crate) fn create_domain(&mut self, spec: &DomainSpec) -> Result<String, String> {
        if self.domain_by_name(&spec.name).is_some() {
            return Err(format!("domain `{}` already exists", spec.name));
        }
        let stops = spec
            .stops
            .iter()
            .map(|s| (s.name.clone(), self.compile_ops(&s.body)))
            .collect();
        self.domains
            .push(Domain::new(&spec.name, spec.start, stops));
        Ok(format!(
            "domain `{}` {}",
            spec.name,
            if spec.start { "created" } else { "declared" }
        ))
    }

    /// Starts declared domain `name` (`create`): a new incarnation with the
    /// same stops and no requests. A killed one's entry stays dead, so the
    /// leg status of calls made from or into it stays invalid: a return to
    /// the old process is `broken pipe`, never into the new one.
    pub(crate) fn start_domain(&mut self, name: &str) -> Result<String, String> {
        let Some(d) = self.domain_by_name(name) else {
            return Err(format!("create: no domain `{name}`"));
        };
        if self.domains[d].alive {
            return Err(format!("create: domain `{name}` is already alive"));
        }
        let stops = self.domains[d].stops.clone();
        self.domains.push(Domain::new(name, true, stops));
        Ok(format!("domain `{name}` created"))
    }

    /// The home domain of a thread arriving now: the declared domain that
    /// lists it, else a private one named after it.
    pub(crate) fn home_domain(&mut self, thread: &str, members: &[(String, String)]) -> usize {
        let declared = members
            .iter()
            .find(|(t, _)| t == thread)
            .and_then(|(_, d)| self.domain_by_name(d));
        declared.unwrap_or_else(|| {
            self.domains.push(Domain::new(thread, true, Vec::new()));
            self.domains.len() - 1
        })
    }

    fn open_call(
        &mut self,
        now: Instant,
        t: ThreadId,
        domain: &str,
        stop: &str,
        via: Via,
    ) -> usize {
        self.threads[t.index()].stats.calls.made += 1;
        self.calls.push(CallRecord {
            thread: t,
            domain: domain.to_string(),
            stop: stop.to_string(),
            via,
            start: now,
            end: None,
            outcome: None,
        });
        self.calls.len() - 1
    }

    /// Closes call `call` (once: a later outcome for it is ignored) and
    /// logs an error.
    fn finish_call(&mut self, now: Instant, call: usize, outcome: CallOutcome) {
        let c = &mut self.calls[call];
        if c.outcome.is_some() {
            return;
        }
        c.end = Some(now);
        c.outcome = Some(outcome);
        let counts = &mut self.threads[c.thread.index()].stats.calls;
        *match outcome {
            CallOutcome::Ok => &mut counts.ok,
            CallOutcome::BrokenPipe => &mut counts.broken_pipe,
            CallOutcome::ServerExit => &mut counts.server_exit,
            CallOutcome::CallerGone => &mut counts.caller_gone,
            CallOutcome::Abandoned => &mut counts.abandoned,
            CallOutcome::TooDeep => &mut counts.too_deep,
        } += 1;
        if outcome != CallOutcome::Ok {
            let text = format!(
                "thread `{}`: {} call to `{}.{}` returned {}",
                self.threads[c.thread.index()].stats.name,
                match c.via {
                    Via::Train => "train",
                    Via::Rpc => "rpc",
                },
                c.domain,
                c.stop,
                outcome
            );
            self.record(now, LogKind::Refused, text);
        }
    }

    /// Executes a `call`: `None` to go on at once (a train entered its
    /// stop, or the call failed), `Some(Blocked)` for an RPC.
    pub(super) fn call(
        &mut self,
        now: Instant,
        t: ThreadId,
        domain: &str,
        stop: &str,
        via: Via,
    ) -> Option<Outcome> {
        self.threads[t.index()].cursor.pc += 1;
        let call = self.open_call(now, t, domain, stop, via);
        let target = self
            .domain_by_name(domain)
            .filter(|&d| self.domains[d].alive);
        let found = target.and_then(|d| {
            let s = self.domains[d].stops.iter().position(|(n, _)| n == stop)?;
            Some((d, s))
        });
        let Some((d, s)) = found else {
            self.finish_call(now, call, CallOutcome::ServerExit);
            return None;
        };
        if self.threads[t.index()].stack.len() >= MAX_DEPTH {
            self.finish_call(now, call, CallOutcome::TooDeep);
            return None;
        }
        match via {
            Via::Train => {
                let code = self.domains[d].stops[s].1.clone();
                let th = &mut self.threads[t.index()];
                let record = Record {
                    caller: th.domain,
                    code: std::mem::replace(&mut th.code, code),
                    cursor: std::mem::take(&mut th.cursor),
                    call,
                    serving: None,
                };
                th.stack.push(record);
                th.domain = d;
                None
            }
            Via::Rpc => {
                self.threads[t.index()].waiting_call = Some(call);
                let dom = &mut self.domains[d];
                dom.requests.push_back(Request {
                    client: t,
                    stop: s,
                    call,
                });
                if let Some(server) = dom.idle.pop_front() {
                    self.handed_over.push(server);
                }
                Some(Outcome::Blocked)
            }
        }
    }

    /// A server thread's `serve` loop: take the next request and run its
    /// stop's body (`None`), or block until one comes.
    pub(super) fn serve(&mut self, t: ThreadId, domain: &str) -> Option<Outcome> {
        let Some(d) = self
            .domain_by_name(domain)
            .filter(|&d| self.domains[d].alive)
        else {
            return Some(Outcome::Exit);
        };
        let Some(req) = self.domains[d].requests.pop_front() else {
            self.domains[d].idle.push_back(t);
            return Some(Outcome::Blocked);
        };
        let code = self.domains[d].stops[req.stop].1.clone();
        // The server works for the client now: the client's scheduler
        // lends it the client's scheduling state until the reply.
        self.sync_out.push(SyncEvent::CallServed {
            client: req.client,
            server: t,
        });
        let th = &mut self.threads[t.index()];
        let record = Record {
            caller: th.domain,
            code: std::mem::replace(&mut th.code, code),
            // The cursor stays on `serve`: after the reply, it serves again.
            cursor: std::mem::take(&mut th.cursor),
            call: req.call,
            serving: Some(req.client),
        };
        th.stack.push(record);
        th.domain = d;
        None
    }

    /// Answers the client of an RPC and lets it go on; `server`: the thread
    /// that served it, if one took it.
    fn reply(
        &mut self,
        now: Instant,
        client: ThreadId,
        server: Option<ThreadId>,
        call: usize,
        outcome: CallOutcome,
    ) {
        self.finish_call(now, call, outcome);
        if let Some(server) = server {
            self.sync_out.push(SyncEvent::CallEnded { client, server });
        }
        let c = &mut self.threads[client.index()];
        if c.waiting_call == Some(call) {
            c.waiting_call = None;
            self.handed_over.push(client);
        }
    }

    /// Returns from the innermost call with `outcome`, skipping callers
    /// whose domain died (`broken pipe` for the next). False when no valid
    /// caller is left: the thread exits.
    pub(crate) fn unwind(&mut self, now: Instant, t: ThreadId, mut outcome: CallOutcome) -> bool {
        loop {
            let Some(rec) = self.threads[t.index()].stack.pop() else {
                return false;
            };
            let caller_alive = self.domains[rec.caller].alive;
            if let Some(client) = rec.serving {
                let answer = if caller_alive {
                    outcome
                } else {
                    CallOutcome::ServerExit
                };
                self.reply(now, client, Some(t), rec.call, answer);
            } else if caller_alive {
                self.finish_call(now, rec.call, outcome);
            } else {
                self.finish_call(now, rec.call, CallOutcome::CallerGone);
            }
            if caller_alive {
                let th = &mut self.threads[t.index()];
                th.code = rec.code;
                th.cursor = rec.cursor;
                th.domain = rec.caller;
                return true;
            }
            outcome = CallOutcome::BrokenPipe;
        }
    }

    /// The thread is exiting: every call still open on its stack is
    /// closed, and an RPC it was serving is answered `server exit`.
    pub(crate) fn abandon_stack(&mut self, now: Instant, t: ThreadId) {
        while let Some(rec) = self.threads[t.index()].stack.pop() {
            match rec.serving {
                Some(client) => self.reply(now, client, Some(t), rec.call, CallOutcome::ServerExit),
                None => self.finish_call(now, rec.call, CallOutcome::Abandoned),
            }
        }
    }

    /// Kills domain `name`. `current` is the thread executing the `kill`
    /// (it handles its own departure when its step goes on); every other
    /// thread in the domain is resumed after the current step.
    pub(crate) fn kill_domain(&mut self, now: Instant, name: &str, current: Option<ThreadId>) {
        let Some(d) = self.domain_by_name(name).filter(|&d| self.domains[d].alive) else {
            self.record(
                now,
                LogKind::Refused,
                format!("kill: no live domain `{name}`"),
            );
            return;
        };
        self.domains[d].alive = false;
        self.domains[d].idle.clear();
        self.record(now, LogKind::Script, format!("domain `{name}` killed"));
        while let Some(req) = self.domains[d].requests.pop_front() {
            self.reply(now, req.client, None, req.call, CallOutcome::ServerExit);
        }
        for u in 0..self.threads.len() {
            let th = &self.threads[u];
            if th.exited || th.domain != d {
                continue;
            }
            let u = ThreadId(u as u32);
            self.leave(now, u, current == Some(u));
        }
    }

    /// Asks thread `u` to leave its (dead) domain: whatever it was doing
    /// there stops, and its next step returns to its first valid caller
    /// with `server exit` or exits.
    fn leave(&mut self, now: Instant, u: ThreadId, is_current: bool) {
        if !is_current {
            self.cut_run(u, now);
        }
        let th = &mut self.threads[u.index()];
        th.remaining = hsched_core::Duration::ZERO;
        th.wake_gen += 1;
        th.spin_gen += 1;
        th.abort_gen += 1;
        th.cursor.randres = None;
        th.cursor.constraints = None;
        th.leaving = true;
        // Its own RPC in progress was made from the dead domain.
        if let Some(call) = th.waiting_call.take() {
            for dom in &mut self.domains {
                dom.requests.retain(|r| r.call != call);
            }
            self.finish_call(now, call, CallOutcome::CallerGone);
        }
        for m in &mut self.mutexes {
            m.waiters.retain(|&w| w != u);
        }
        for s in &mut self.semaphores {
            s.waiters.retain(|&w| w != u);
        }
        // A signal handed to it and not yet taken dies with the process.
        self.threads[u.index()].signalled = None;
        for dom in &mut self.domains {
            dom.idle.retain(|&w| w != u);
        }
        if !is_current {
            self.handed_over.push(u);
        }
    }

    /// Threads left somewhere they can never leave: not exited and in a
    /// dead domain, or waiting for an RPC answer nobody will give. Empty
    /// in every correct run.
    pub(crate) fn stranded(&self) -> Vec<String> {
        let mut out = Vec::new();
        for th in &self.threads {
            if th.exited {
                continue;
            }
            let name = &th.stats.name;
            if !self.domains[th.domain].alive {
                out.push(format!(
                    "`{name}` is in dead domain `{}`",
                    self.domains[th.domain].name
                ));
            }
            if let Some(call) = th.waiting_call {
                let queued = self
                    .domains
                    .iter()
                    .any(|d| d.alive && d.requests.iter().any(|r| r.call == call));
                let served = self.threads.iter().any(|s| {
                    !s.exited
                        && self.domains[s.domain].alive
                        && s.stack
                            .iter()
                            .any(|r| r.call == call && r.serving.is_some())
                });
                if !queued && !served {
                    out.push(format!(
                        "`{name}` waits for an answer to call {call} nobody will give"
                    ));
                }
            }
        }
        out
    }
}
