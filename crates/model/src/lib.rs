//! hsched model
