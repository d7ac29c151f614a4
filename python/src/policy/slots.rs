//! The slot table that turns a registered Python policy class into a
//! `&'static PolicyInfo` (as `hsched_plugin_host`'s slots do for plugins).
//!
//! `PolicyInfo::{params, child_params, build}` are plain `fn` pointers:
//! they cannot capture the class. Slot `n`'s three functions are generic
//! over `n` (one monomorphised copy per slot) and find their class in a
//! process-wide table under a mutex. A slot belongs to a policy *name*:
//! registering the same name again replaces the class (and its
//! declarations) for instances built from then on, in the same slot, so
//! the table is bounded by [`MAX_POLICIES`] names. Texts are interned, so
//! re-registering (a notebook cell run again) leaks nothing new unless the
//! texts change.
//!
//! Lock order: the table's mutex is never held while attaching to Python
//! (`build` copies what it needs out first), and Python code never runs
//! with it held, so a thread holding the GIL that registers and a thread
//! building an instance cannot deadlock.

use super::adapter::{traceback_text, Overrides, PyScheduler};
use super::objects::{params_to_py, Reject};
use hsched_core::{ParamSpec, Params, PolicyInfo, Scheduler};
use pyo3::prelude::*;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};

/// How many distinct Python policy names one process can register.
pub const MAX_POLICIES: usize = 64;

/// What one registration declares.
pub struct Declaration {
    pub name: String,
    pub summary: String,
    pub doc: String,
    pub params: Vec<ParamSpec>,
    pub child_params: Vec<ParamSpec>,
    pub max_parents: u32,
    pub max_children: u32,
    pub hls_rule: Option<String>,
    pub overrides: Overrides,
}

struct Slot {
    info: &'static PolicyInfo,
    class: Arc<Py<PyAny>>,
    params: Vec<ParamSpec>,
    child_params: Vec<ParamSpec>,
    hls_rule: Option<String>,
    overrides: Overrides,
}

static SLOTS: Mutex<Vec<Slot>> = Mutex::new(Vec::new());

fn slots() -> MutexGuard<'static, Vec<Slot>> {
    // Nothing panics while holding the lock; do not let an unrelated
    // poisoning make every Python policy unusable.
    SLOTS.lock().unwrap_or_else(|e| e.into_inner())
}

/// A `&'static str` for `s`, leaked once per distinct text.
pub fn intern(s: &str) -> &'static str {
    static TEXTS: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut texts = TEXTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(t) = texts.get(s) {
        return t;
    }
    let t: &'static str = Box::leak(s.to_string().into_boxed_str());
    texts.insert(t);
    t
}

/// Registers `class` under `decl.name` (replacing the class registered
/// under that name before, if any); returns its `PolicyInfo`.
pub fn register(class: Py<PyAny>, decl: Declaration) -> Result<&'static PolicyInfo, String> {
    let mut slots = slots();
    let n = match slots.iter().position(|s| s.info.name == decl.name) {
        Some(n) => n,
        None if slots.len() == MAX_POLICIES => {
            return Err(format!(
                "this process has already registered {MAX_POLICIES} Python policies; \
                 reuse a name to replace one"
            ))
        }
        None => slots.len(),
    };
    let t = &TRAMPOLINES[n];
    let wanted = PolicyInfo {
        name: intern(&decl.name),
        summary: intern(&decl.summary),
        doc: intern(&decl.doc),
        params: t.params,
        child_params: t.child_params,
        build: t.build,
        max_parents: decl.max_parents,
        max_children: decl.max_children,
    };
    // The same description again reuses the `PolicyInfo` already handed
    // out; another one is leaked once (it is `'static` for the simulator).
    let same = |i: &PolicyInfo| {
        std::ptr::eq(i.summary, wanted.summary)
            && std::ptr::eq(i.doc, wanted.doc)
            && i.max_parents == wanted.max_parents
            && i.max_children == wanted.max_children
    };
    let info = match slots.get(n) {
        Some(s) if same(s.info) => s.info,
        _ => Box::leak(Box::new(wanted)),
    };
    let slot = Slot {
        info,
        class: Arc::new(class),
        params: decl.params,
        child_params: decl.child_params,
        hls_rule: decl.hls_rule,
        overrides: decl.overrides,
    };
    if n == slots.len() {
        slots.push(slot);
    } else {
        let old = std::mem::replace(&mut slots[n], slot);
        // Dropping the old class may run Python code: not under the lock.
        drop(slots);
        drop(old);
    }
    Ok(info)
}

/// Every registered Python policy, in registration order.
pub fn infos() -> Vec<&'static PolicyInfo> {
    slots().iter().map(|s| s.info).collect()
}

/// The registered policy named `name`.
pub fn find(name: &str) -> Option<&'static PolicyInfo> {
    slots().iter().find(|s| s.info.name == name).map(|s| s.info)
}

/// The class registered under `name`.
pub fn class_of(name: &str) -> Option<Arc<Py<PyAny>>> {
    slots()
        .iter()
        .find(|s| s.info.name == name)
        .map(|s| s.class.clone())
}

/// Each policy's declared HLS Table 1 row, if it declares one.
pub fn hls_rules() -> Vec<(&'static str, String)> {
    slots()
        .iter()
        .filter_map(|s| s.hls_rule.clone().map(|r| (s.info.name, r)))
        .collect()
}

fn params_of<const N: usize>() -> Vec<ParamSpec> {
    slots()[N].params.clone()
}

fn child_params_of<const N: usize>() -> Vec<ParamSpec> {
    slots()[N].child_params.clone()
}

/// An instance of slot `N`'s class: `cls(params)` with the resolved
/// parameters as a dict. A `Reject` or any other exception from the
/// constructor is a refusal to build, with its reason.
fn build_in<const N: usize>(params: &Params) -> Result<Box<dyn Scheduler>, String> {
    let (name, class, overrides) = {
        let slots = slots();
        let s = &slots[N];
        (s.info.name, s.class.clone(), s.overrides)
    };
    Python::attach(|py| {
        let args = params_to_py(py, params).map_err(|e| traceback_text(py, &e))?;
        match class.bind(py).call1((args,)) {
            Ok(instance) => Ok(
                Box::new(PyScheduler::new(name, instance.unbind(), overrides))
                    as Box<dyn Scheduler>,
            ),
            Err(e) if e.is_instance_of::<Reject>(py) => Err(e.value(py).to_string()),
            Err(e) => Err(format!(
                "Python policy `{name}`: building an instance raised:\n{}",
                traceback_text(py, &e)
            )),
        }
    })
}

struct Trampoline {
    params: fn() -> Vec<ParamSpec>,
    child_params: fn() -> Vec<ParamSpec>,
    build: fn(&Params) -> Result<Box<dyn Scheduler>, String>,
}

macro_rules! trampolines {
    ($($n:literal)*) => {
        static TRAMPOLINES: [Trampoline; MAX_POLICIES] = [$(Trampoline {
            params: params_of::<$n>,
            child_params: child_params_of::<$n>,
            build: build_in::<$n>,
        }),*];
    };
}

trampolines!(
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
);
