//! hsched report
