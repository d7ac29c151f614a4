//! The policy types a dispatcher may build instances of, found by name.
//!
//! The dispatcher knows no policy itself: its caller hands it a [`Registry`]
//! (the built-in policies of `hsched-policies`, plus whatever plugins,
//! Python policies or test doubles it adds), and names in it the policies
//! the dispatcher falls back on when the hierarchy leaves a thread nowhere
//! to go ([`Fallback`]).

use crate::{Params, PolicyInfo, Scheduler};

/// Policy types by name, in the order they were added; the first of a name
/// wins, so an added policy cannot shadow one that was there before it.
#[derive(Clone)]
pub struct Registry {
    policies: Vec<&'static PolicyInfo>,
    fallback: Fallback,
}

/// The policies the dispatcher builds on its own, to re-home threads and
/// schedulers the hierarchy can no longer hold (see the dispatcher's
/// hierarchy changes).
#[derive(Clone, Copy)]
pub struct Fallback {
    /// Takes every thread, with default attachment parameters, and shares
    /// the CPUs among them: the default scheduler made when there is none,
    /// and the scheduler a thread the default refused goes to.
    pub shared: &'static PolicyInfo,
    /// A root placed above the old hierarchy and a fresh `shared` instance:
    /// its children attach with an integer `prio`, the higher one first.
    pub machine: &'static PolicyInfo,
}

impl Registry {
    /// A registry of `policies` (first of a name wins) with `fallback`.
    pub fn new(
        policies: impl IntoIterator<Item = &'static PolicyInfo>,
        fallback: Fallback,
    ) -> Self {
        Registry {
            policies: policies.into_iter().collect(),
            fallback,
        }
    }

    /// Makes `info` available by name, unless a policy of that name is
    /// there already.
    pub fn add(&mut self, info: &'static PolicyInfo) {
        self.policies.push(info);
    }

    /// The policy type registered under `name`.
    pub fn find(&self, name: &str) -> Option<&'static PolicyInfo> {
        self.policies.iter().copied().find(|p| p.name == name)
    }

    /// Like [`Registry::find`], with an error that lists the known names.
    pub fn get(&self, name: &str) -> Result<&'static PolicyInfo, String> {
        self.find(name).ok_or_else(|| {
            let known: Vec<&str> = self.iter().map(|p| p.name).collect();
            format!("unknown policy `{name}` (known: {})", known.join(", "))
        })
    }

    /// Every policy type, in the order they were added.
    pub fn iter(&self) -> impl Iterator<Item = &'static PolicyInfo> + '_ {
        self.policies.iter().copied()
    }

    pub fn fallback(&self) -> Fallback {
        self.fallback
    }
}

impl PolicyInfo {
    /// Builds an instance from unchecked parameters: resolves them against
    /// the declaration (defaults, types, ranges) first. The error names the
    /// parameter; the caller adds which instance or policy it was.
    pub fn instantiate(&self, params: &Params) -> Result<Box<dyn Scheduler>, String> {
        let resolved = params.resolve(&(self.params)())?;
        (self.build)(&resolved)
    }
}
