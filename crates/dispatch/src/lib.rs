//! hsched dispatch
