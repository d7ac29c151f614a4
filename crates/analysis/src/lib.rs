//! hsched analysis: the HLS guarantee algebra (Regehr & Stankovic §3–§4).
//!
//! This layer will label every edge of a hierarchy with the guarantee it
//! carries (ALL, NULL, RESBH/RESBS/RESCH/RESCS, RESU, PSBE, PS), apply each
//! policy's conversion rules, and check admission at every node before
//! anything runs. It is pure: no I/O, no clock, integer arithmetic.
//!
//! Status: a placeholder for the layer's place in the workspace. The
//! guarantee types, rewrite rules and the top-down analysis arrive with the
//! HLS guarantees work; until then `hsched check` validates the scenario and
//! prints the hierarchy without guarantees.
