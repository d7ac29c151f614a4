//! The plugin's side of the ABI: the `extern "C"` entries that
//! [`export_policy!`](crate::export_policy) puts in a library's table.
//!
//! Each entry decodes what the host sent, runs the policy's own
//! `Scheduler` code (a `Box<dyn Scheduler>` that never leaves the library),
//! and encodes the answer. Every entry runs inside `catch_unwind`: a panic
//! becomes [`Status::PANICKED`] with its message, never an unwind into the
//! host (which, through an `extern "C"` function, would abort the process).

use crate::abi::{PluginTable, PolicyVTable, Sink, StaticStr, Status, ABI_VERSION};
use crate::wire::{CxState, PolicyDesc, Request, Response, WEffect, WParams};
use hsched_core::{Cx, Duration, Effect, Instant, PolicyInfo, Scheduler, VpState};
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// One policy a library exports: its `PolicyInfo` (written exactly as for a
/// built-in policy) and, optionally, its row of HLS Table 1.
pub struct Export {
    pub info: &'static PolicyInfo,
    pub hls_rule: Option<&'static str>,
}

impl Export {
    pub const fn new(info: &'static PolicyInfo) -> Self {
        Export {
            info,
            hls_rule: None,
        }
    }

    /// The guarantee conversion the policy performs, in HLS Table 1
    /// notation (e.g. `"ALL -> NULL+"`), for `hsched check`.
    pub const fn hls_rule(mut self, rule: &'static str) -> Self {
        self.hls_rule = Some(rule);
        self
    }

    fn describe(&self) -> PolicyDesc {
        let i = self.info;
        PolicyDesc {
            name: i.name.to_string(),
            summary: i.summary.to_string(),
            doc: i.doc.to_string(),
            params: (i.params)().iter().map(Into::into).collect(),
            child_params: (i.child_params)().iter().map(Into::into).collect(),
            max_parents: i.max_parents,
            max_children: i.max_children,
            hls_rule: self.hls_rule.map(str::to_string),
        }
    }
}

impl PolicyVTable {
    /// The table entry for one exported policy.
    pub fn of(export: &'static Export) -> Self {
        PolicyVTable {
            policy: export as *const Export as *const c_void,
            describe,
            create,
            call,
            check_invariants,
            destroy,
        }
    }
}

impl PluginTable {
    /// The library's table over its policies' entries (`count` of them at
    /// `policies`, which must stay where they are while the library is
    /// loaded).
    pub fn with_policies(policies: *const PolicyVTable, count: u32) -> Self {
        PluginTable {
            abi_version: ABI_VERSION,
            policy_count: count,
            policies,
            sdk_version: StaticStr::new(env!("CARGO_PKG_VERSION")),
        }
    }
}

/// An instance as the library holds it, with buffers reused from call to
/// call so that a steady stream of callbacks does not allocate for them.
struct Instance {
    sched: Box<dyn Scheduler>,
    vps: Vec<VpState>,
    effects: Vec<Effect>,
    wire_effects: Vec<WEffect>,
    out: Vec<u8>,
}

impl Instance {
    fn call(&mut self, request: &[u8]) -> Result<(), String> {
        let Request { cx: state, call } =
            postcard::from_bytes(request).map_err(|e| format!("cannot decode the request: {e}"))?;
        let CxState {
            now,
            cpus,
            tick,
            vps,
            involuntary,
        } = state;
        self.vps.clear();
        self.vps.extend(vps.into_iter().map(VpState::from));
        self.effects.clear();
        let mut cx = Cx::new(
            Instant(now),
            cpus,
            tick.map(Duration),
            &self.vps,
            &mut self.effects,
        );
        cx.set_involuntary(involuntary);
        let outcome = call.run(self.sched.as_mut(), &mut cx);
        self.wire_effects.clear();
        self.wire_effects
            .extend(self.effects.iter().map(WEffect::from));
        let response = Response {
            effects: std::mem::take(&mut self.wire_effects),
            outcome,
        };
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        let encoded = postcard::to_extend(&response, out);
        self.wire_effects = response.effects;
        self.out = encoded.map_err(|e| format!("cannot encode the response: {e}"))?;
        Ok(())
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with no message".into())
}

/// Runs `f`, turning a panic into [`Status::PANICKED`] with its message.
fn guarded(out: *mut Sink, f: impl FnOnce() -> Status) -> Status {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(status) => status,
        Err(payload) => {
            let msg = panic_message(payload.as_ref());
            // Formatting the message cannot unwind, but be sure nothing does.
            let _ = catch_unwind(AssertUnwindSafe(|| unsafe {
                Sink::put(out, msg.as_bytes())
            }));
            Status::PANICKED
        }
    }
}

unsafe extern "C" fn describe(policy: *const c_void, out: *mut Sink) -> Status {
    // SAFETY: the host passes back this table's `policy` (an `Export`) and
    // a live sink of its own: the ABI's contract (`abi::PolicyVTable`).
    guarded(out, || unsafe {
        let export = &*(policy as *const Export);
        match postcard::to_allocvec(&export.describe()) {
            Ok(bytes) => {
                Sink::put(out, &bytes);
                Status::OK
            }
            Err(e) => {
                Sink::put(
                    out,
                    format!("cannot encode the description: {e}").as_bytes(),
                );
                Status::BAD_REQUEST
            }
        }
    })
}

unsafe extern "C" fn create(
    policy: *const c_void,
    params: *const u8,
    params_len: usize,
    instance: *mut *mut c_void,
    out: *mut Sink,
) -> Status {
    // SAFETY: the host passes back this table's `policy` (an `Export`),
    // `params_len` readable bytes, a writable `instance` slot and a live
    // sink: the ABI's contract (`abi::PolicyVTable`).
    guarded(out, || unsafe {
        let export = &*(policy as *const Export);
        let bytes = std::slice::from_raw_parts(params, params_len);
        let params = match postcard::from_bytes::<WParams>(bytes) {
            Ok(p) => p.into(),
            Err(e) => {
                Sink::put(out, format!("cannot decode the parameters: {e}").as_bytes());
                return Status::BAD_REQUEST;
            }
        };
        match (export.info.build)(&params) {
            Ok(sched) => {
                let inst = Box::new(Instance {
                    sched,
                    vps: Vec::new(),
                    effects: Vec::new(),
                    wire_effects: Vec::new(),
                    out: Vec::new(),
                });
                *instance = Box::into_raw(inst) as *mut c_void;
                Status::OK
            }
            Err(e) => {
                Sink::put(out, e.as_bytes());
                Status::REFUSED
            }
        }
    })
}

unsafe extern "C" fn call(
    instance: *mut c_void,
    request: *const u8,
    request_len: usize,
    out: *mut Sink,
) -> Status {
    // SAFETY: `instance` is what `create` stored and `destroy` has not
    // freed, `request` has `request_len` readable bytes and the sink is
    // live: the ABI's contract (`abi::PolicyVTable`).
    guarded(out, || unsafe {
        let inst = &mut *(instance as *mut Instance);
        match inst.call(std::slice::from_raw_parts(request, request_len)) {
            Ok(()) => {
                Sink::put(out, &inst.out);
                Status::OK
            }
            Err(e) => {
                Sink::put(out, e.as_bytes());
                Status::BAD_REQUEST
            }
        }
    })
}

unsafe extern "C" fn check_invariants(instance: *mut c_void, out: *mut Sink) -> Status {
    // SAFETY: `instance` is what `create` stored and `destroy` has not
    // freed, and the sink is live: the ABI's contract.
    guarded(out, || unsafe {
        let inst = &*(instance as *const Instance);
        match inst.sched.check_invariants() {
            Ok(()) => Status::OK,
            Err(e) => {
                Sink::put(out, e.as_bytes());
                Status::REFUSED
            }
        }
    })
}

unsafe extern "C" fn destroy(instance: *mut c_void) {
    if instance.is_null() {
        return;
    }
    // SAFETY: `instance` is what `create` stored, freed once: the host
    // destroys each instance exactly once (the ABI's contract).
    let _ = catch_unwind(AssertUnwindSafe(|| unsafe {
        drop(Box::from_raw(instance as *mut Instance));
    }));
}
