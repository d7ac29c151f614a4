//! The events' text form, one line of `trace_pipe`: for reading a
//! trace by hand (the reader decodes the binary pages instead).

use super::sched_event::SchedEvent;

/// One line of `trace_pipe`, the events' text form (the reader does not
/// use it; it is for reading a trace by hand).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line {
    Event(SchedEvent),
    /// `CPU:1 [LOST 12 EVENTS]`: the buffer overflowed.
    Lost(u64),
}

/// The value of `key=` in an event's fields (`prev_pid=42 ...`).
fn value<'a>(fields: &'a str, key: &str) -> Option<&'a str> {
    let mut rest = fields;
    loop {
        let at = rest.find(key)?;
        let before_ok = at == 0 || rest.as_bytes()[at - 1] == b' ';
        let after = &rest[at + key.len()..];
        if before_ok {
            if let Some(v) = after.strip_prefix('=') {
                return Some(v.split(' ').next().unwrap_or(""));
            }
        }
        rest = after;
    }
}

/// Parses one line of `trace_pipe`; `None` for anything else (other
/// events, blank lines, a line the kernel cut).
pub fn parse(line: &str) -> Option<Line> {
    if let Some(rest) = line.trim_start().strip_prefix("CPU:") {
        let n = rest.split("[LOST ").nth(1)?.split(' ').next()?;
        return n.parse().ok().map(Line::Lost);
    }
    let (marker, at) = [
        " sched_switch: ",
        " sched_waking: ",
        " sched_wakeup_new: ",
        " sched_process_fork: ",
        " sched_process_exit: ",
    ]
    .iter()
    .find_map(|m| line.find(m).map(|i| (*m, i)))?;
    let head = &line[..at];
    let fields = &line[at + marker.len()..];
    // `comm-pid [cpu] flags secs.usecs:`, the command name free text: read
    // from the right.
    let mut words = head.split_whitespace().rev();
    let stamp = words.next()?.strip_suffix(':')?;
    let (secs, usecs) = stamp.split_once('.')?;
    let time_ns = secs
        .parse::<u64>()
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(usecs.parse::<u64>().ok()?.checked_mul(1_000)?)?;
    let cpu = words.find_map(|w| w.strip_prefix('[')?.strip_suffix(']')?.parse::<u32>().ok())?;
    let pid = |key| value(fields, key)?.parse::<i32>().ok();
    Some(Line::Event(match marker {
        " sched_switch: " => {
            let state = value(fields, "prev_state")?;
            SchedEvent::Switch {
                time_ns,
                cpu,
                prev: pid("prev_pid")?,
                // Running (preempted), or stopped or traced (the agent's
                // hard parking stops processes): not blocked.
                prev_blocked: !state.starts_with(['R', 'T', 't']),
                next: pid("next_pid")?,
            }
        }
        " sched_process_fork: " => SchedEvent::Fork {
            time_ns,
            parent: pid("pid")?,
            child: pid("child_pid")?,
        },
        " sched_process_exit: " => SchedEvent::Exit {
            time_ns,
            tid: pid("pid")?,
        },
        _ => SchedEvent::Wakeup {
            time_ns,
            cpu,
            tid: pid("pid")?,
        },
    }))
}
