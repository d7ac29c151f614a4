//! hsched scenario
