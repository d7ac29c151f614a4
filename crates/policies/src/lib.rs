//! hsched policies
