//! The slot table that turns a plugin policy into a `&'static PolicyInfo`.
//!
//! `PolicyInfo::{params, child_params, build}` are plain `fn` pointers: they
//! cannot capture the library they belong to. Slot `n`'s three functions
//! are generic over `n` (one monomorphised copy per slot) and find their
//! policy in a process-wide table under a mutex. A policy is identified by
//! where it was loaded from, its index in the library and its whole
//! description: loading it again reuses its slot (and its leaked
//! `PolicyInfo`), so the leak is bounded by [`MAX_POLICIES`].
//!
//! A slot holds only a weak reference to the library: instances keep it
//! open, the slot does not. `build` on a slot whose library was closed opens
//! it again and checks that the policy at that index still describes itself
//! identically (a rebuilt file with another policy there is refused).

use crate::adapter::PluginScheduler;
use crate::error::{LoadError, LoadErrorKind};
use crate::library::{open, Loaded, Source};
use hsched_core::{ParamSpec, Params, PolicyInfo, Scheduler};
use hsched_plugin::wire::{PolicyDesc, WParamSpec};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// How many distinct plugin policies one process can load.
pub const MAX_POLICIES: usize = 64;

struct Slot {
    source: Source,
    label: String,
    index: u32,
    desc: PolicyDesc,
    info: &'static PolicyInfo,
    params: Vec<ParamSpec>,
    child_params: Vec<ParamSpec>,
    loaded: Weak<Loaded>,
}

static SLOTS: Mutex<Vec<Slot>> = Mutex::new(Vec::new());

fn slots() -> MutexGuard<'static, Vec<Slot>> {
    // Nothing panics while holding the lock, but do not let an unrelated
    // poisoning make every plugin unusable.
    SLOTS.lock().unwrap_or_else(|e| e.into_inner())
}

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}

/// A declaration with host-owned text (leaked once per slot).
pub(crate) fn spec_of(s: &WParamSpec) -> ParamSpec {
    ParamSpec {
        name: leak(&s.name),
        kind: s.kind.into(),
        default: s.default.clone().map(Into::into),
        doc: leak(&s.doc),
    }
}

/// The `PolicyInfo` of policy `index` of `loaded`: its slot's, reused if
/// this policy was loaded before.
pub(crate) fn register(
    source: &Source,
    index: u32,
    desc: PolicyDesc,
    loaded: &Arc<Loaded>,
) -> Result<&'static PolicyInfo, LoadError> {
    let mut slots = slots();
    if let Some(slot) = slots
        .iter_mut()
        .find(|s| s.source == *source && s.index == index && s.desc == desc)
    {
        if slot.loaded.strong_count() == 0 {
            slot.loaded = Arc::downgrade(loaded);
        }
        return Ok(slot.info);
    }
    let n = slots.len();
    if n == MAX_POLICIES {
        return Err(LoadError {
            path: loaded.label.clone(),
            kind: LoadErrorKind::TooMany,
            message: format!("this process has already loaded {MAX_POLICIES} plugin policies"),
        });
    }
    let t = &TRAMPOLINES[n];
    let info: &'static PolicyInfo = Box::leak(Box::new(PolicyInfo {
        name: leak(&desc.name),
        summary: leak(&desc.summary),
        doc: leak(&desc.doc),
        params: t.params,
        child_params: t.child_params,
        build: t.build,
        max_parents: desc.max_parents,
        max_children: desc.max_children,
    }));
    slots.push(Slot {
        source: source.clone(),
        label: loaded.label.clone(),
        index,
        params: desc.params.iter().map(spec_of).collect(),
        child_params: desc.child_params.iter().map(spec_of).collect(),
        desc,
        info,
        loaded: Arc::downgrade(loaded),
    });
    Ok(info)
}

fn params_of<const N: usize>() -> Vec<ParamSpec> {
    slots()[N].params.clone()
}

fn child_params_of<const N: usize>() -> Vec<ParamSpec> {
    slots()[N].child_params.clone()
}

fn build_in<const N: usize>(params: &Params) -> Result<Box<dyn Scheduler>, String> {
    let (name, loaded, index) = {
        let mut slots = slots();
        let slot = &mut slots[N];
        let loaded = match slot.loaded.upgrade() {
            Some(l) => l,
            None => {
                let l = open(&slot.source, &slot.label).map_err(|e| e.to_string())?;
                let desc = l
                    .describe(slot.index)
                    .map_err(|e| format!("reopening {}: {e}", slot.label))?;
                if desc != slot.desc {
                    return Err(format!(
                        "plugin `{}` changed since it was loaded: policy `{}` describes itself \
                         differently now",
                        slot.label, slot.info.name
                    ));
                }
                slot.loaded = Arc::downgrade(&l);
                l
            }
        };
        (slot.info.name, loaded, slot.index)
    };
    let vtable = loaded.vtable(index);
    let instance = PluginScheduler::create(name, loaded, vtable, params)?;
    Ok(Box::new(instance))
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
