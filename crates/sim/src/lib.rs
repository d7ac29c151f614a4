//! hsched sim
