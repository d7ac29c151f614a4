//! hsched analysis
