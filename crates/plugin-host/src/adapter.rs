//! [`PluginScheduler`]: a plugin's policy instance seen as a
//! `Box<dyn Scheduler>`, so the dispatcher drives it like a built-in one.
//!
//! Each callback becomes one call through the library's `call` entry: the
//! host encodes the callback and a snapshot of its `Cx` (the time, the CPU
//! count, the tick, the instance's VP states), the library runs the policy's
//! own code and returns the result with the effects it asked for, and the
//! host asks for the same effects through its own `Cx`, in order, so the
//! dispatcher applies them after the callback as always.
//!
//! Failures become what the dispatcher already handles: a panic in the
//! plugin (reported by the library, never unwound across it), an answer the
//! host cannot decode, or one of the wrong kind become a panic *here*,
//! inside the dispatcher's `catch_unwind`, so the instance is ejected and
//! its threads return to the default scheduler. `check_invariants`, which
//! the dispatcher calls outside `catch_unwind`, reports them as a broken
//! invariant instead (also an ejection).

use crate::library::Loaded;
use hsched_core::{
    ChildId, CpuId, Cx, Dispatch, Duration, Msg, Params, ParentVp, Reject, Reply, Scheduler,
    Sender, TimerKey,
};
use hsched_plugin::abi::{PolicyVTable, Sink, Status};
use hsched_plugin::wire::{Call, CxState, Outcome, Request, Response, WParams};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Callbacks made into plugin instances (`calls`).
static CALLS: AtomicU64 = AtomicU64::new(0);

/// How many callbacks this process has made into plugin instances so far
/// (`check_invariants` included): what a benchmark divides by.
pub fn calls() -> u64 {
    CALLS.load(Ordering::Relaxed)
}

/// One instance of a plugin policy. Holds the library open.
pub struct PluginScheduler {
    name: &'static str,
    /// Keeps the library (and so `vtable` and `instance`) alive; dropped
    /// after `instance` is destroyed (fields drop after `Drop::drop`).
    loaded: Arc<Loaded>,
    vtable: *const PolicyVTable,
    instance: *mut c_void,
    /// Reused from call to call.
    request: Vec<u8>,
    response: Vec<u8>,
}

/// How a call into the library went wrong.
enum Failure {
    Panicked(String),
    Broken(String),
}

impl PluginScheduler {
    /// Creates an instance in the library. `params` are already resolved
    /// against the policy's declaration.
    pub(crate) fn create(
        name: &'static str,
        loaded: Arc<Loaded>,
        vtable: *const PolicyVTable,
        params: &Params,
    ) -> Result<Self, String> {
        let encoded = postcard::to_allocvec(&WParams::from(params))
            .map_err(|e| format!("cannot encode the parameters: {e}"))?;
        let mut out = Vec::new();
        let mut instance: *mut c_void = std::ptr::null_mut();
        let status = unsafe {
            let vt = &*vtable;
            (vt.create)(
                vt.policy,
                encoded.as_ptr(),
                encoded.len(),
                &mut instance,
                &mut Sink::to_vec(&mut out),
            )
        };
        let text = || String::from_utf8_lossy(&out).into_owned();
        match status {
            Status::OK if !instance.is_null() => Ok(PluginScheduler {
                name,
                loaded,
                vtable,
                instance,
                request: Vec::new(),
                response: Vec::new(),
            }),
            Status::OK => Err(format!(
                "plugin {}: `{name}` returned no instance",
                loaded.label
            )),
            Status::REFUSED => Err(text()),
            Status::PANICKED => Err(format!(
                "plugin {}: building `{name}` panicked: {}",
                loaded.label,
                text()
            )),
            other => Err(format!(
                "plugin {}: building `{name}` failed ({other:?}): {}",
                loaded.label,
                text()
            )),
        }
    }

    /// Runs one callback in the library and applies its effects to `cx`.
    fn invoke(&mut self, cx: &mut Cx, call: Call) -> Result<Outcome, Failure> {
        CALLS.fetch_add(1, Ordering::Relaxed);
        let request = Request {
            cx: CxState::of(cx),
            call,
        };
        self.request.clear();
        self.request = postcard::to_extend(&request, std::mem::take(&mut self.request))
            .map_err(|e| Failure::Broken(format!("cannot encode the request: {e}")))?;
        self.response.clear();
        let status = unsafe {
            let vt = &*self.vtable;
            (vt.call)(
                self.instance,
                self.request.as_ptr(),
                self.request.len(),
                &mut Sink::to_vec(&mut self.response),
            )
        };
        match status {
            Status::OK => {}
            Status::PANICKED => return Err(Failure::Panicked(self.text())),
            other => {
                return Err(Failure::Broken(format!(
                    "the library failed the call ({other:?}): {}",
                    self.text()
                )))
            }
        }
        let response: Response = postcard::from_bytes(&self.response)
            .map_err(|e| Failure::Broken(format!("cannot decode its answer: {e}")))?;
        for effect in response.effects {
            effect.apply(cx);
        }
        Ok(response.outcome)
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.response).into_owned()
    }

    /// Like `invoke`, for the dispatcher: a failure is a panic, which the
    /// dispatcher's `catch_unwind` turns into an ejection.
    fn run(&mut self, cx: &mut Cx, call: Call) -> Outcome {
        match self.invoke(cx, call) {
            Ok(outcome) => outcome,
            Err(Failure::Panicked(msg)) => panic!("{msg} (in plugin {})", self.loaded.label),
            Err(Failure::Broken(msg)) => {
                panic!("plugin {} broke the plugin ABI: {msg}", self.loaded.label)
            }
        }
    }

    /// A callback answered with the wrong kind of outcome.
    fn wrong(&self, what: &str, got: &Outcome) -> ! {
        panic!(
            "plugin {} broke the plugin ABI: `{what}` answered {got:?}",
            self.loaded.label
        )
    }

    fn done(&mut self, cx: &mut Cx, what: &str, call: Call) {
        match self.run(cx, call) {
            Outcome::Done => {}
            other => self.wrong(what, &other),
        }
    }
}

impl Scheduler for PluginScheduler {
    fn policy(&self) -> &'static str {
        self.name
    }

    fn init(&mut self, cx: &mut Cx) {
        self.done(cx, "init", Call::Init);
    }

    fn deinit(&mut self, cx: &mut Cx) {
        self.done(cx, "deinit", Call::Deinit);
    }

    fn register_vp(&mut self, cx: &mut Cx, child: ChildId, params: &Params) -> Result<(), Reject> {
        let call = Call::RegisterVp {
            child: child.0,
            params: params.into(),
        };
        match self.run(cx, call) {
            Outcome::Registered(r) => r.map_err(Reject),
            other => self.wrong("register_vp", &other),
        }
    }

    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        self.done(cx, "unregister_vp", Call::UnregisterVp { child: child.0 });
    }

    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        self.done(cx, "vp_request", Call::VpRequest { child: child.0 });
    }

    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        self.done(cx, "vp_release", Call::VpRelease { child: child.0 });
    }

    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, cpu: CpuId) -> Dispatch {
        match self.run(
            cx,
            Call::VpGrant {
                vp: vp.0,
                cpu: cpu.0,
            },
        ) {
            Outcome::Dispatch(d) => d.into(),
            other => self.wrong("vp_grant", &other),
        }
    }

    fn vp_revoke(&mut self, cx: &mut Cx, vp: ParentVp, cpu: CpuId) {
        self.done(
            cx,
            "vp_revoke",
            Call::VpRevoke {
                vp: vp.0,
                cpu: cpu.0,
            },
        );
    }

    fn charge(&mut self, cx: &mut Cx, child: ChildId, ran: Duration) {
        let call = Call::Charge {
            child: child.0,
            ran: ran.as_nanos(),
        };
        self.done(cx, "charge", call);
    }

    fn timer(&mut self, cx: &mut Cx, key: TimerKey) {
        self.done(cx, "timer", Call::Timer { key });
    }

    fn msg(&mut self, cx: &mut Cx, from: Sender, msg: &Msg) -> Reply {
        match self.run(cx, Call::msg(from, msg)) {
            Outcome::Reply(r) => r.into(),
            other => self.wrong("msg", &other),
        }
    }

    fn check_invariants(&self) -> Result<(), String> {
        CALLS.fetch_add(1, Ordering::Relaxed);
        let mut out = Vec::new();
        let status = unsafe {
            let vt = &*self.vtable;
            (vt.check_invariants)(self.instance, &mut Sink::to_vec(&mut out))
        };
        let text = String::from_utf8_lossy(&out);
        match status {
            Status::OK => Ok(()),
            Status::REFUSED => Err(text.into_owned()),
            Status::PANICKED => Err(format!(
                "check_invariants panicked: {text} (in plugin {})",
                self.loaded.label
            )),
            other => Err(format!(
                "plugin {} broke the plugin ABI: check_invariants answered {other:?}: {text}",
                self.loaded.label
            )),
        }
    }
}

impl Drop for PluginScheduler {
    fn drop(&mut self) {
        // The library is still loaded: `self.loaded` drops after this.
        unsafe { ((*self.vtable).destroy)(self.instance) };
    }
}
