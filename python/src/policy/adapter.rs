//! [`PyScheduler`]: an instance of a Python policy seen as a
//! `Box<dyn Scheduler>`, so the dispatcher drives it like a built-in one
//! (as `hsched_plugin_host`'s adapter does for a plugin).
//!
//! Each callback attaches to the interpreter (`Python::attach`: free when
//! the simulation was started from Python and still holds the GIL, an
//! acquisition when it runs detached or on another thread), hands the
//! method a fresh `Cx` snapshot, and after it returns applies the effects
//! it recorded through the dispatcher's own `Cx`, in order.
//!
//! Failures become what the dispatcher already handles: an exception in
//! the callback, or an answer of the wrong type, is a panic *here*, inside
//! the dispatcher's `catch_unwind`, with the Python traceback as its
//! message, so the instance is ejected, the run log says why, and its
//! threads return to the default scheduler. `check_invariants`, which the
//! dispatcher calls outside `catch_unwind`, reports them as a broken
//! invariant instead (also an ejection).

use super::objects::{self, Dispatch, PyCx, PyMsg, PySender, Reject};
use hsched_core::{
    ChildId, CpuId, Cx, Dispatch as CoreDispatch, Duration, Msg, Params, ParentVp,
    Reject as CoreReject, Reply, Scheduler, Sender, SyncEvent, TimerKey,
};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::Interned;
use pyo3::types::{PyDict, PyInt, PyTuple};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

/// Callbacks made into Python policy instances (`calls`).
static CALLS: AtomicU64 = AtomicU64::new(0);

/// How many callbacks this process has made into Python policies so far
/// (`check_invariants` included): what the benchmark divides by.
pub fn calls() -> u64 {
    CALLS.load(Ordering::Relaxed)
}

/// The callbacks a policy may leave to the protocol's defaults, as bits of
/// [`Overrides`]; the others are required.
pub const OPTIONAL: [&str; 8] = [
    "init",
    "deinit",
    "vp_revoke",
    "charge",
    "timer",
    "msg",
    "sync",
    "check_invariants",
];

/// Which optional callbacks the class defines itself (bit `i`:
/// `OPTIONAL[i]`). A callback it leaves out is not called at all, so a
/// policy pays for the callbacks it uses only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Overrides(pub u16);

impl Overrides {
    pub fn from_names(names: &[String]) -> Result<Self, String> {
        let mut bits = 0;
        for n in names {
            let i = OPTIONAL
                .iter()
                .position(|o| o == n)
                .ok_or_else(|| format!("`{n}` is not an optional callback"))?;
            bits |= 1 << i;
        }
        Ok(Overrides(bits))
    }
    fn has(self, name: &str) -> bool {
        OPTIONAL
            .iter()
            .position(|o| *o == name)
            .is_some_and(|i| self.0 & (1 << i) != 0)
    }
}

thread_local! {
    /// Set just before a panic this module raises on purpose (its message
    /// goes to the run log), so the panic hook does not also print it.
    static QUIET_NEXT: Cell<bool> = const { Cell::new(false) };
    /// Nonzero while panics are expected and reported otherwise (the
    /// conformance suite turns its failures into an `AssertionError`).
    static QUIET_DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Installs, once, a panic hook that stays silent for the panics above and
/// passes every other one to the hook that was there before.
pub fn install_quiet_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let quiet = QUIET_NEXT.with(|q| q.replace(false)) || QUIET_DEPTH.with(|d| d.get() > 0);
            if !quiet {
                previous(info);
            }
        }));
    });
}

/// Runs `f` with the panic hook silent on this thread.
pub fn quietly<R>(f: impl FnOnce() -> R) -> R {
    struct Restore;
    impl Drop for Restore {
        fn drop(&mut self) {
            QUIET_DEPTH.with(|d| d.set(d.get() - 1));
        }
    }
    QUIET_DEPTH.with(|d| d.set(d.get() + 1));
    let _restore = Restore;
    f()
}

/// Panics with `message` without printing it (the dispatcher logs it).
fn fail(message: String) -> ! {
    QUIET_NEXT.with(|q| q.set(true));
    std::panic::panic_any(message)
}

/// An exception as Python prints it: the traceback, then the type and
/// message.
pub fn traceback_text(py: Python<'_>, err: &PyErr) -> String {
    let formatted = py.import("traceback").and_then(|tb| {
        tb.call_method1(
            "format_exception",
            (err.get_type(py), err.value(py), err.traceback(py)),
        )?
        .extract::<Vec<String>>()
    });
    match formatted {
        Ok(lines) => lines.concat().trim_end().to_string(),
        Err(_) => err.to_string(),
    }
}

/// A callback's name, and the same as a Python string made once.
struct Callback {
    name: &'static str,
    interned: Interned,
}

macro_rules! callbacks {
    ($($id:ident = $name:literal),* $(,)?) => {
        $(static $id: Callback = Callback { name: $name, interned: Interned::new($name) };)*
    };
}

callbacks!(
    INIT = "init",
    DEINIT = "deinit",
    UNREGISTER_VP = "unregister_vp",
    VP_REQUEST = "vp_request",
    VP_RELEASE = "vp_release",
    VP_GRANT = "vp_grant",
    VP_REVOKE = "vp_revoke",
    CHARGE = "charge",
    TIMER = "timer",
    SYNC = "sync",
);

/// One instance of a Python policy.
pub struct PyScheduler {
    name: &'static str,
    instance: Py<PyAny>,
    overrides: Overrides,
}

impl PyScheduler {
    pub fn new(name: &'static str, instance: Py<PyAny>, overrides: Overrides) -> Self {
        PyScheduler {
            name,
            instance,
            overrides,
        }
    }

    /// Calls `method` with a fresh `Cx` and the arguments `args` builds
    /// after it; on return, applies the effects it recorded to `cx` and
    /// reads the result with `read`. An exception or an unreadable result
    /// is a panic naming the policy and the callback.
    fn invoke<R>(
        &mut self,
        cx: &mut Cx,
        callback: &'static Callback,
        args: impl for<'py> FnOnce(Python<'py>, Bound<'py, PyCx>) -> PyResult<Bound<'py, PyTuple>>,
        read: impl for<'py> FnOnce(Python<'py>, Bound<'py, PyAny>) -> Result<R, String>,
    ) -> R {
        CALLS.fetch_add(1, Ordering::Relaxed);
        let method = callback.name;
        let outcome = Python::attach(|py| {
            let pycx = Bound::new(py, PyCx::of(cx, method)).map_err(|e| traceback_text(py, &e))?;
            let called = args(py, pycx.clone()).and_then(|a| {
                self.instance
                    .bind(py)
                    .call_method1(callback.interned.get(py), a)
            });
            // Whatever happened, the Cx is dead from here on.
            let effects = pycx.borrow_mut().close();
            let value = called.map_err(|e| {
                format!(
                    "Python policy `{}` raised in {method}:\n{}",
                    self.name,
                    traceback_text(py, &e)
                )
            })?;
            effects.into_iter().for_each(|e| cx.replay(e));
            read(py, value).map_err(|why| {
                format!(
                    "Python policy `{}` answered {method} wrongly: {why}",
                    self.name
                )
            })
        });
        match outcome {
            Ok(r) => r,
            Err(message) => fail(message),
        }
    }

    /// A callback that answers nothing (its result is ignored).
    fn notify(
        &mut self,
        cx: &mut Cx,
        callback: &'static Callback,
        args: impl for<'py> FnOnce(Python<'py>, Bound<'py, PyCx>) -> PyResult<Bound<'py, PyTuple>>,
    ) {
        self.invoke(cx, callback, args, |_, _| Ok(()))
    }
}

fn tuple<'py, const N: usize>(
    py: Python<'py>,
    items: [Bound<'py, PyAny>; N],
) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(py, items)
}

/// An id, a time or a key as a Python int.
fn int<'py>(py: Python<'py>, v: u64) -> Bound<'py, PyAny> {
    PyInt::new(py, v).into_any()
}

/// `repr` of an answer, for the message of a wrong one.
fn shown(v: &Bound<'_, PyAny>) -> String {
    let ty = v
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default();
    match v.repr() {
        Ok(r) => format!("{r} ({ty})"),
        Err(_) => format!("a {ty}"),
    }
}

impl Scheduler for PyScheduler {
    fn policy(&self) -> &'static str {
        self.name
    }

    fn init(&mut self, cx: &mut Cx) {
        if self.overrides.has("init") {
            self.notify(cx, &INIT, |py, c| tuple(py, [c.into_any()]));
        }
    }

    fn deinit(&mut self, cx: &mut Cx) {
        if self.overrides.has("deinit") {
            self.notify(cx, &DEINIT, |py, c| tuple(py, [c.into_any()]));
        }
    }

    fn register_vp(
        &mut self,
        cx: &mut Cx,
        child: ChildId,
        params: &Params,
    ) -> Result<(), CoreReject> {
        // A `Reject` is an answer, not a failure: caught here, before
        // `invoke` would turn it into an ejection.
        let name = self.name;
        CALLS.fetch_add(1, Ordering::Relaxed);
        let outcome = Python::attach(|py| {
            let pycx =
                Bound::new(py, PyCx::of(cx, "register_vp")).map_err(|e| traceback_text(py, &e))?;
            let called = objects::params_to_py(py, params).and_then(|p| {
                self.instance
                    .bind(py)
                    .call_method1(intern!(py, "register_vp"), (pycx.clone(), child.0, p))
            });
            let effects = pycx.borrow_mut().close();
            match called {
                Ok(_) => {
                    effects.into_iter().for_each(|e| cx.replay(e));
                    Ok(Ok(()))
                }
                Err(e) if e.is_instance_of::<Reject>(py) => {
                    effects.into_iter().for_each(|e| cx.replay(e));
                    Ok(Err(CoreReject(e.value(py).to_string())))
                }
                Err(e) => Err(format!(
                    "Python policy `{name}` raised in register_vp:\n{}",
                    traceback_text(py, &e)
                )),
            }
        });
        match outcome {
            Ok(r) => r,
            Err(message) => fail(message),
        }
    }

    fn unregister_vp(&mut self, cx: &mut Cx, child: ChildId) {
        self.notify(cx, &UNREGISTER_VP, |py, c| {
            tuple(py, [c.into_any(), int(py, child.0.into())])
        });
    }

    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        self.notify(cx, &VP_REQUEST, |py, c| {
            tuple(py, [c.into_any(), int(py, child.0.into())])
        });
    }

    fn vp_release(&mut self, cx: &mut Cx, child: ChildId) {
        self.notify(cx, &VP_RELEASE, |py, c| {
            tuple(py, [c.into_any(), int(py, child.0.into())])
        });
    }

    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, cpu: CpuId) -> CoreDispatch {
        self.invoke(
            cx,
            &VP_GRANT,
            |py, c| {
                tuple(
                    py,
                    [c.into_any(), int(py, vp.0.into()), int(py, cpu.0.into())],
                )
            },
            |_, v| match v.cast::<Dispatch>() {
                Ok(d) => Ok(d.get().inner),
                Err(_) => Err(format!(
                    "returned {}, expected an hsched.Dispatch (Dispatch.run(child), \
                     Dispatch.idle(until), Dispatch.spin(until) or Dispatch.release())",
                    shown(&v)
                )),
            },
        )
    }

    fn vp_revoke(&mut self, cx: &mut Cx, vp: ParentVp, cpu: CpuId) {
        if self.overrides.has("vp_revoke") {
            self.notify(cx, &VP_REVOKE, |py, c| {
                tuple(
                    py,
                    [c.into_any(), int(py, vp.0.into()), int(py, cpu.0.into())],
                )
            });
        }
    }

    fn charge(&mut self, cx: &mut Cx, child: ChildId, ran: Duration) {
        if self.overrides.has("charge") {
            self.notify(cx, &CHARGE, |py, c| {
                tuple(
                    py,
                    [
                        c.into_any(),
                        int(py, child.0.into()),
                        int(py, ran.as_nanos()),
                    ],
                )
            });
        }
    }

    fn timer(&mut self, cx: &mut Cx, key: TimerKey) {
        if self.overrides.has("timer") {
            self.notify(cx, &TIMER, |py, c| tuple(py, [c.into_any(), int(py, key)]));
        }
    }

    fn msg(&mut self, cx: &mut Cx, from: Sender, msg: &Msg) -> Reply {
        if !self.overrides.has("msg") {
            return Reply::unknown(self.name, msg);
        }
        // As `register_vp`: a `Reject` is a refusal, not a failure.
        let name = self.name;
        CALLS.fetch_add(1, Ordering::Relaxed);
        let outcome = Python::attach(|py| {
            let pycx = Bound::new(py, PyCx::of(cx, "msg")).map_err(|e| traceback_text(py, &e))?;
            let called = Bound::new(py, PyMsg::of(py, msg).map_err(|e| traceback_text(py, &e))?)
                .and_then(|m| {
                    self.instance
                        .bind(py)
                        .call_method1(intern!(py, "msg"), (pycx.clone(), PySender::of(from), m))
                });
            let effects = pycx.borrow_mut().close();
            let reply = match called {
                Ok(v) => reply_of(py, &v)
                    .map_err(|why| format!("Python policy `{name}` answered msg wrongly: {why}"))?,
                Err(e) if e.is_instance_of::<Reject>(py) => Reply::Err(e.value(py).to_string()),
                Err(e) => {
                    return Err(format!(
                        "Python policy `{name}` raised in msg:\n{}",
                        traceback_text(py, &e)
                    ))
                }
            };
            effects.into_iter().for_each(|e| cx.replay(e));
            Ok(reply)
        });
        match outcome {
            Ok(r) => r,
            Err(message) => fail(message),
        }
    }

    fn sync(&mut self, cx: &mut Cx, event: &SyncEvent<ChildId>) {
        if self.overrides.has("sync") {
            self.notify(cx, &SYNC, |py, c| {
                tuple(
                    py,
                    [c.into_any(), objects::sync_to_py(py, event)?.into_any()],
                )
            });
        }
    }

    fn check_invariants(&self) -> Result<(), String> {
        if !self.overrides.has("check_invariants") {
            return Ok(());
        }
        CALLS.fetch_add(1, Ordering::Relaxed);
        Python::attach(|py| {
            match self
                .instance
                .bind(py)
                .call_method0(intern!(py, "check_invariants"))
            {
                Ok(v) if v.is_none() => Ok(()),
                Ok(v) => match v.extract::<String>() {
                    Ok(why) => Err(why),
                    Err(_) => Err(format!(
                        "Python policy `{}`: check_invariants returned {}, expected None \
                         (holds) or a str (what is broken)",
                        self.name,
                        shown(&v)
                    )),
                },
                Err(e) => Err(format!(
                    "Python policy `{}` raised in check_invariants:\n{}",
                    self.name,
                    traceback_text(py, &e)
                )),
            }
        })
    }
}

/// A `msg` answer as a [`Reply`]: `None` or a dict (accepted, with those
/// values), or an `hsched.Reply`.
fn reply_of(py: Python<'_>, v: &Bound<'_, PyAny>) -> Result<Reply, String> {
    let bad = |e: PyErr| e.value(py).to_string();
    if v.is_none() {
        return Ok(Reply::ok());
    }
    if v.is_instance_of::<PyDict>() {
        return objects::params_from_py(Some(v), "msg reply")
            .map(Reply::Ok)
            .map_err(bad);
    }
    let ok = v.getattr(intern!(py, "ok"));
    let values = v.getattr(intern!(py, "values"));
    let reason = v.getattr(intern!(py, "reason"));
    match (ok, values, reason) {
        (Ok(ok), Ok(values), Ok(reason)) => {
            if ok.is_truthy().map_err(bad)? {
                objects::params_from_py(Some(&values), "Reply.values")
                    .map(Reply::Ok)
                    .map_err(bad)
            } else {
                Ok(Reply::Err(reason.str().map_err(bad)?.to_string()))
            }
        }
        _ => Err(format!(
            "returned {}, expected None, a dict, or an hsched.Reply",
            shown(v)
        )),
    }
}
