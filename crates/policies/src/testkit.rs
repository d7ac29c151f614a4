//! What the unit tests of the policies share: the dispatcher's testkit
//! (one policy in a real dispatcher) and proptest strategies over it.

pub(crate) use hsched_dispatch::testkit::*;

/// Proptest strategies shared by the policies' property tests.
pub(crate) mod strategy {
    use super::{Parent, Step};
    use proptest::prelude::*;

    /// A random step; time advances by up to 30ms.
    pub fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            2 => any::<u8>().prop_map(Step::Register),
            1 => any::<u8>().prop_map(Step::Unregister),
            4 => any::<u8>().prop_map(Step::Wake),
            3 => any::<u8>().prop_map(Step::Block),
            2 => any::<u8>().prop_map(Step::Grant),
            1 => any::<u8>().prop_map(Step::Revoke),
            3 => (0u32..30_000).prop_map(Step::Advance),
        ]
    }

    pub fn parent() -> impl Strategy<Value = Parent> {
        prop_oneof![
            Just(Parent::Root),
            Just(Parent::Manual),
            Just(Parent::Eager)
        ]
    }
}
