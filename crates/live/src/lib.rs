//! hsched live: the platform that schedules real Linux threads and
//! processes: through hsched's sched_ext scheduler ([`hsched_scx`]) where
//! the kernel has sched_ext, or from user space on a stock kernel (no
//! module), by [`agent`]'s two backends.
//!
//! The Linux side: [`sys`], the calls made on threads the agent does not
//! own (policy and priority, affinity, stop and continue, `/proc`);
//! [`events`], the kernel's block, wakeup, fork and exit events of the
//! managed threads (tracepoints read from private ftrace instances); and
//! [`guardian`], the separate process that puts every managed thread back
//! as it was if the agent dies or hangs. On them: [`agent`], the dispatcher
//! driving real threads; [`worker`], the process that executes a workload
//! program on a real CPU; [`control`], the socket for messages to
//! schedulers and its client; [`observe`], the figures and trace from the
//! kernel's events; [`cpu_idle`], how long each CPU ran nothing, as the
//! kernel counts it; [`run`], a whole scenario live; [`signals`], Ctrl-C
//! and SIGTERM as an orderly stop.

#![cfg(target_os = "linux")]

pub mod agent;
pub mod control;
pub mod cpu_idle;
pub mod events;
pub mod guardian;
pub mod launch;
pub mod observe;
pub mod run;
pub mod signals;
pub mod sys;
pub mod worker;
