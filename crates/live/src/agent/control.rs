//! The agent's side of the control socket ([`crate::control`]): requests
//! authorized, carried out between events (messages to schedulers,
//! changes of the hierarchy, plugin libraries loaded off the loop) and
//! logged.

use super::{Agent, PluginLoad};
use crate::control::{authorize, ControlSocket, Peer, Request, Response, Speaker};
use hsched_core::{Msg, Params, Reply, ThreadId};
use hsched_model::guard::{Change, Ruling};
use hsched_model::{Action, LogEntry, LogKind};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

impl Agent {
    /// Listens for control requests at `path` from now on (see
    /// [`crate::control`]).
    pub fn listen(&mut self, path: &Path) -> Result<(), String> {
        self.control =
            Some(ControlSocket::bind(path).map_err(|e| format!("the control socket: {e}"))?);
        Ok(())
    }

    /// Answers the control requests that have come in.
    pub(super) fn serve_control(&mut self) {
        let Some(mut control) = self.control.take() else {
            return;
        };
        control.serve(|peer, id, req| self.answer(peer, id, req));
        self.control = Some(control);
        self.control_served = std::time::Instant::now();
    }

    /// Applies the plugin library loaded off the loop, if it is, and
    /// answers the request that asked for it.
    pub(super) fn finish_plugin_load(&mut self) {
        let Some(load) = &self.plugin_load else {
            return;
        };
        let loaded = match load.result.try_recv() {
            Ok(loaded) => loaded,
            Err(std::sync::mpsc::TryRecvError::Empty) => return,
            Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                Err("loading the plugin failed (its loader ended)".into())
            }
        };
        let load = self.plugin_load.take().expect("checked above");
        let response = match loaded.and_then(|p| self.add_plugin(p)) {
            Ok(text) => Response {
                ok: true,
                text,
                reply: Params::new(),
            },
            Err(e) => Response::refused(e),
        };
        let response = self.logged(response, &load.peer);
        if let Some(c) = &mut self.control {
            c.complete(load.connection, &response);
        }
        self.serve_control();
    }

    /// Carries out one control request from `peer` on connection
    /// `connection`, logging what it did; `None` when the answer comes
    /// later (a plugin loaded off the loop).
    fn answer(&mut self, peer: &Peer, connection: u64, req: Request) -> Option<Response> {
        let managed: Vec<(String, i32)> = (0..self.platform.tids.len())
            .map(|i| {
                let name = self.disp.thread_name(ThreadId(i as u32)).to_string();
                (name, self.platform.pids[i])
            })
            .collect();
        let speaker = match authorize(peer, &managed, &req) {
            Ok(s) => s,
            Err(e) => return Some(self.logged(Response::refused(e), peer)),
        };
        let response = self.carry_out(peer, connection, speaker, req);
        // Under sched_ext the kernel learns the decisions the request made
        // before its sender hears the answer: a thread told to wait
        // (rtwake's `wait`) wakes at the answer, and must not find its CPU
        // still decided for it (measured: a job 16 ms early).
        self.flush();
        response
    }

    /// [`Agent::answer`] once `speaker` may make request `req`.
    fn carry_out(
        &mut self,
        peer: &Peer,
        connection: u64,
        speaker: Speaker,
        req: Request,
    ) -> Option<Response> {
        let now = self.now;
        let action = match req {
            Request::Status => {
                return Some(Response {
                    ok: true,
                    text: self.status(),
                    reply: Params::new(),
                })
            }
            Request::Msg { to, name, args, .. } => {
                return Some(self.message(peer, &speaker, to.as_deref(), Msg { name, args }))
            }
            Request::Move { thread, to, params } => Action::Move { thread, to, params },
            Request::Load { scheduler } => Action::Load(scheduler),
            Request::Plugin { path } => {
                return match self.start_plugin_load(path, *peer, connection) {
                    Ok(()) => None,
                    Err(e) => Some(self.logged(Response::refused(e), peer)),
                };
            }
            Request::Unload { scheduler } => Action::Unload(scheduler),
            Request::Detach { scheduler } => Action::Detach(scheduler),
            Request::Attach { scheduler, parents } => Action::Attach { scheduler, parents },
        };
        // The scenario's rules first: a request is refused as the same step
        // of a script would be.
        let name = |s: Option<hsched_core::SchedId>| s.map(|s| self.disp.sched_name(s));
        let exists = |n: &str| self.disp.sched_by_name(n).is_some();
        let rules = hsched_scenario::rules::Hierarchy {
            root: name(self.disp.root()).unwrap_or_default(),
            default: name(self.disp.default_sched()).unwrap_or_default(),
            cpus: self.platform.cpus.len() as u32,
            exists: &exists,
        };
        let result = hsched_scenario::rules::check_action(&action, &rules).and_then(|()| {
            hsched_dispatch::apply(&mut self.disp, &mut self.platform, now, &action)
                .expect("control requests are hierarchy actions")
        });
        let response = match result {
            Ok(text) => Response {
                ok: true,
                text,
                reply: Params::new(),
            },
            Err(e) => Response::refused(e),
        };
        Some(self.logged(response, peer))
    }

    /// Starts loading the plugin library at `path` for `peer` on a thread
    /// of its own: a library's constructors run as it loads, for as long as
    /// they take, and the loop must not wait for them. Only a regular file
    /// is opened (a named pipe would block the opener); one load at a time.
    fn start_plugin_load(
        &mut self,
        path: PathBuf,
        peer: Peer,
        connection: u64,
    ) -> Result<(), String> {
        if self.plugin_load.is_some() {
            return Err(format!(
                "plugin {}: another plugin is being loaded; ask again when it is",
                path.display()
            ));
        }
        match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => {}
            Ok(_) => {
                return Err(format!(
                    "plugin {}: not a regular file (a directory, named pipe or device): expected a plugin library",
                    path.display()
                ))
            }
            Err(e) => return Err(format!("plugin {}: {e}", path.display())),
        }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("hsched-plugin".into())
            .spawn(move || {
                let _ = tx.send(hsched_plugin_host::Plugin::load(&path).map_err(|e| e.to_string()));
            })
            .map_err(|e| format!("a thread to load the plugin on: {e}"))?;
        self.plugin_load = Some(PluginLoad {
            peer,
            connection,
            result: rx,
        });
        Ok(())
    }

    /// Adds the policies of a loaded plugin library to the ones the
    /// hierarchy may create. Refused if one of them has the name of a
    /// built-in policy or of one loaded before.
    fn add_plugin(&mut self, plugin: hsched_plugin_host::Plugin) -> Result<String, String> {
        let names: Vec<&str> = plugin.policies().iter().map(|p| p.info.name).collect();
        for name in &names {
            let loaded = self
                .plugins
                .iter()
                .flat_map(|p| p.policies())
                .any(|p| p.info.name == *name);
            if hsched_policies::find(name).is_some() || loaded {
                return Err(format!(
                    "plugin `{}`: policy `{name}` is already known; a plugin cannot replace it",
                    plugin.label()
                ));
            }
        }
        // The change guard learns each policy's HLS rule first: a rule it
        // cannot use refuses the library (its instances would be analysed
        // by no rule at all).
        // The dispatcher's own clock, not the wall clock: events already read
        // may carry earlier kernel times, which it must not have passed.
        let now = self.disp.now();
        for p in plugin.policies() {
            let change = Change::PolicyAdded {
                policy: p.info.name,
                rule: p.hls_rule.as_deref(),
            };
            if let Ruling::Refuse(why) = self.disp.review(now, &change) {
                return Err(format!(
                    "plugin `{}`: policy `{}`: {why}",
                    plugin.label(),
                    p.info.name
                ));
            }
        }
        for p in plugin.policies() {
            self.disp.add_policy(p.info);
            self.disp.applied(
                now,
                &Change::PolicyAdded {
                    policy: p.info.name,
                    rule: p.hls_rule.as_deref(),
                },
            );
        }
        let text = format!("loaded plugin `{}`: {}", plugin.label(), names.join(", "));
        self.plugins.push(plugin);
        Ok(text)
    }

    /// Message `msg` to scheduler `to` (by default the speaker's) from
    /// `speaker`.
    fn message(&mut self, peer: &Peer, speaker: &Speaker, to: Option<&str>, msg: Msg) -> Response {
        let from = match speaker {
            Speaker::Operator => None,
            Speaker::Thread(name) => match self.disp.thread_by_name(name) {
                Some(t) => Some(t),
                None => return self.logged(Response::refused(format!("no thread `{name}`")), peer),
            },
        };
        let target = match to {
            Some(name) => self
                .disp
                .sched_by_name(name)
                .ok_or(format!("no scheduler `{name}`")),
            None => from.and_then(|t| self.disp.thread_sched(t)).ok_or_else(|| {
                "name the scheduler (`to`): the operator has none of its own".into()
            }),
        };
        let s = match target {
            Ok(s) => s,
            Err(e) => return self.logged(Response::refused(e), peer),
        };
        let reply = self
            .disp
            .message(&mut self.platform, self.now, from, s, &msg);
        let sender = from.map_or("operator".to_string(), |t| {
            format!("`{}`", self.disp.thread_name(t))
        });
        let text = format!("{sender} -> `{}` {msg}: {reply}", self.disp.sched_name(s));
        let response = match reply {
            Reply::Ok(reply) => Response {
                ok: true,
                text,
                reply,
            },
            Reply::Err(_) => Response::refused(text),
        };
        self.logged(response, peer)
    }

    /// Logs a control request's outcome (as the simulator logs script
    /// steps and replies) and returns it.
    fn logged(&mut self, response: Response, peer: &Peer) -> Response {
        let kind = if response.ok {
            LogKind::Reply
        } else {
            LogKind::Refused
        };
        self.log.push(LogEntry {
            at: self.now,
            kind,
            text: format!("control (pid {}): {}", peer.pid, response.text),
        });
        response
    }

    /// The managed threads (their schedulers, and when they ended) and
    /// the schedulers, one per line.
    fn status(&self) -> String {
        let mut out = format!("{} decisions {}\n", self.now, self.disp.decisions());
        for (i, tid) in self.platform.tids.iter().enumerate() {
            let t = ThreadId(i as u32);
            let _ = write!(
                out,
                "thread {} tid {tid} under {}",
                self.disp.thread_name(t),
                self.sched_of(t)
            );
            let _ = match self.exits[i] {
                Some(at) => writeln!(out, " ended at {at}"),
                None => writeln!(out),
            };
        }
        for n in self.disp.node_results() {
            let _ = writeln!(
                out,
                "scheduler {} ({}) received {}",
                n.name, n.policy, n.received
            );
        }
        out
    }
}
