//! The ring buffer's binary pages decoded: records laid out as the
//! kernel publishes them (`events/header_page`, `events/sched/*/format`),
//! read into [`SchedEvent`]s without the kernel formatting them as text.

use super::sched_event::{SchedEvent, EVENTS};

/// The `prev_state` bits of `sched_switch` (its format's flag table) that
/// say the thread left blocked: S, D, X, Z, P and I; not stopped (T) or
/// traced (t), as the agent's hard parking stops processes, and not
/// preempted (no bit, or the one above these).
pub(super) const BLOCKED: i64 = 0xf3;

/// Where a field lies in an event's record, as its `format` file says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Field {
    offset: usize,
    size: usize,
    signed: bool,
}

impl Field {
    /// The field's value in `record`; `None` if the record is too short.
    pub(super) fn read(&self, record: &[u8]) -> Option<i64> {
        let b = record.get(self.offset..self.offset.checked_add(self.size)?)?;
        Some(match (self.size, self.signed) {
            (1, true) => b[0] as i8 as i64,
            (1, false) => b[0] as i64,
            (2, true) => i16::from_ne_bytes(b.try_into().ok()?) as i64,
            (2, false) => u16::from_ne_bytes(b.try_into().ok()?) as i64,
            (4, true) => i32::from_ne_bytes(b.try_into().ok()?) as i64,
            (4, false) => u32::from_ne_bytes(b.try_into().ok()?) as i64,
            (8, _) => i64::from_ne_bytes(b.try_into().ok()?),
            _ => return None,
        })
    }
}

/// The fields of a `format` file (`events/sched/NAME/format` or
/// `events/header_page`) by name, and its event id if it has one.
fn fields(format: &str) -> (Option<u16>, Vec<(&str, Field)>) {
    let id = format
        .lines()
        .find_map(|l| l.strip_prefix("ID:"))
        .and_then(|v| v.trim().parse().ok());
    let fields = format
        .lines()
        .filter_map(|l| {
            // `field:pid_t prev_pid;<TAB>offset:24;<TAB>size:4;<TAB>signed:1;`
            let (decl, rest) = l.trim().strip_prefix("field:")?.split_once(';')?;
            let name = decl.split_whitespace().last()?.split('[').next()?;
            let num = |key: &str| -> Option<usize> {
                rest.split(';')
                    .find_map(|kv| kv.trim().strip_prefix(key)?.strip_prefix(':'))?
                    .trim()
                    .parse()
                    .ok()
            };
            let field = Field {
                offset: num("offset")?,
                size: num("size")?,
                signed: num("signed") == Some(1),
            };
            Some((name, field))
        })
        .collect();
    (id, fields)
}

/// Where the fields the reader takes lie in a record of one of [`EVENTS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Record {
    Switch {
        prev_pid: Field,
        prev_state: Field,
        next_pid: Field,
    },
    Wakeup {
        pid: Field,
    },
    Fork {
        parent_pid: Field,
        child_pid: Field,
    },
    Exit {
        pid: Field,
    },
}

/// How to decode the ring buffer's pages and the events' records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Layout {
    /// The page header: its base time stamp, the length of its data (with
    /// the lost-events flags above it), where its data starts.
    page_stamp: Field,
    page_commit: Field,
    page_data: usize,
    /// The event id every record starts with.
    common_type: Field,
    /// Each event's id and record.
    records: Vec<(i64, Record)>,
}

impl Layout {
    /// From the text of `events/header_page` and of the `format` of each
    /// of [`EVENTS`], in order.
    pub(super) fn parse(header_page: &str, formats: &[&str]) -> Result<Layout, String> {
        let find = |fields: &[(&str, Field)], name: &str, what: &str| {
            fields
                .iter()
                .find(|(n, _)| *n == name)
                .map(|&(_, f)| f)
                .ok_or_else(|| format!("no field `{name}` in the format of {what}"))
        };
        let (_, page) = fields(header_page);
        let mut common_type = None;
        let mut records = Vec::new();
        for (&event, format) in EVENTS.iter().zip(formats) {
            let (id, fields) = fields(format);
            let id = id.ok_or_else(|| format!("no ID in the format of {event}"))?;
            let get = |name| find(&fields, name, event);
            common_type = Some(get("common_type")?);
            let record = match event {
                "sched_switch" => Record::Switch {
                    prev_pid: get("prev_pid")?,
                    prev_state: get("prev_state")?,
                    next_pid: get("next_pid")?,
                },
                "sched_process_fork" => Record::Fork {
                    parent_pid: get("parent_pid")?,
                    child_pid: get("child_pid")?,
                },
                "sched_process_exit" => Record::Exit { pid: get("pid")? },
                _ => Record::Wakeup { pid: get("pid")? },
            };
            records.push((id as i64, record));
        }
        Ok(Layout {
            page_stamp: find(&page, "timestamp", "header_page")?,
            page_commit: find(&page, "commit", "header_page")?,
            page_data: find(&page, "data", "header_page")?.offset,
            common_type: common_type.ok_or("no events")?,
            records,
        })
    }

    /// The event in `record`, stamped `time_ns` on CPU `cpu`; `None` for
    /// another event or a record too short.
    fn event(&self, record: &[u8], time_ns: u64, cpu: u32) -> Option<SchedEvent> {
        let id = self.common_type.read(record)?;
        let &(_, r) = self.records.iter().find(|&&(i, _)| i == id)?;
        let pid = |f: Field| f.read(record).map(|v| v as i32);
        Some(match r {
            Record::Switch {
                prev_pid,
                prev_state,
                next_pid,
            } => SchedEvent::Switch {
                time_ns,
                cpu,
                prev: pid(prev_pid)?,
                prev_blocked: prev_state.read(record)? & BLOCKED != 0,
                next: pid(next_pid)?,
            },
            Record::Wakeup { pid: tid } => SchedEvent::Wakeup {
                time_ns,
                cpu,
                tid: pid(tid)?,
            },
            Record::Fork {
                parent_pid,
                child_pid,
            } => SchedEvent::Fork {
                time_ns,
                parent: pid(parent_pid)?,
                child: pid(child_pid)?,
            },
            Record::Exit { pid: tid } => SchedEvent::Exit {
                time_ns,
                tid: pid(tid)?,
            },
        })
    }
}

/// Decodes one page of CPU `cpu`'s ring buffer as `trace_pipe_raw` gives
/// it, appending its events to `out`; returns how many events the kernel
/// lost before it.
///
/// The format is the kernel's (`kernel/trace/ring_buffer.c`): records of
/// a 32-bit header, 5 bits of type (or of length in words) and 27 of time
/// since the previous record, among them time extensions and absolute
/// stamps. Nothing in `page` makes it panic: it stops where the page stops
/// making sense.
pub(super) fn decode_page(
    page: &[u8],
    cpu: u32,
    layout: &Layout,
    out: &mut Vec<SchedEvent>,
) -> u64 {
    const PADDING: u32 = 29;
    const TIME_EXTEND: u32 = 30;
    const TIME_STAMP: u32 = 31;
    const MISSED_EVENTS: i64 = 1 << 31;
    const MISSED_STORED: i64 = 1 << 30;
    let (Some(stamp), Some(commit)) = (layout.page_stamp.read(page), layout.page_commit.read(page))
    else {
        return 0;
    };
    let mut time = stamp as u64;
    let len = (commit & ((1 << 27) - 1)) as usize;
    let data = page.get(layout.page_data..).unwrap_or(&[]);
    let data = &data[..len.min(data.len())];
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(
            data.get(at..at.checked_add(4)?)?.try_into().ok()?,
        ))
    };
    let mut at = 0;
    while let Some(header) = word(at) {
        let kind = header & 0x1f;
        let delta = (header >> 5) as u64;
        let size = match kind {
            PADDING => match word(at + 4) {
                // A discarded record, whose time the kernel's own reader
                // does not count; with no time, the page's empty end.
                Some(n) if delta != 0 => 4 + n as usize,
                _ => break,
            },
            TIME_EXTEND | TIME_STAMP => {
                let Some(high) = word(at + 4) else { break };
                let t = ((high as u64) << 27) | delta;
                if kind == TIME_EXTEND {
                    time = time.wrapping_add(t);
                } else {
                    // 59 bits: the top ones are those of the time so far.
                    const TOP: u64 = 0xf << 59;
                    let mut abs = t | (time & TOP);
                    if time & TOP != 0 && abs < time {
                        abs = abs.wrapping_add(1 << 59);
                    }
                    time = abs;
                }
                8
            }
            _ => {
                time = time.wrapping_add(delta);
                // Type 0: the length in bytes is the next word, which it
                // counts.
                let (start, size) = match kind {
                    0 => match word(at + 4) {
                        Some(n) => (at + 8, (n as usize).saturating_sub(4)),
                        None => break,
                    },
                    words => (at + 4, words as usize * 4),
                };
                let Some(record) = data.get(start..start.saturating_add(size)) else {
                    break;
                };
                out.extend(layout.event(record, time, cpu));
                start - at + size
            }
        };
        at = at.saturating_add(size.max(4));
    }
    // How many were lost before this page: after its data if there was
    // room for the count, else at least one.
    if commit & MISSED_EVENTS == 0 {
        0
    } else if commit & MISSED_STORED != 0 {
        let at = layout.page_data + len;
        page.get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map_or(1, |b| u64::from_ne_bytes(b).max(1))
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::tracefs::{read, tracefs};
    use proptest::prelude::*;

    /// What a 6.x kernel publishes (`events/header_page`, and the fields of
    /// the events' `format`, the print format left out).
    const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;
";
    const COMMON: &str = "format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

";
    const SWITCHED: &str = "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;
\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;
";
    const WAKING: &str = "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;
";

    const FORK: &str = "\tfield:__data_loc char[] parent_comm;\toffset:8;\tsize:4;\tsigned:0;
\tfield:pid_t parent_pid;\toffset:12;\tsize:4;\tsigned:1;
\tfield:__data_loc char[] child_comm;\toffset:16;\tsize:4;\tsigned:0;
\tfield:pid_t child_pid;\toffset:20;\tsize:4;\tsigned:1;
";
    const EXIT: &str = "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:bool group_dead;\toffset:32;\tsize:1;\tsigned:0;
";

    fn layout() -> Layout {
        let formats = [
            (372, SWITCHED),
            (375, WAKING),
            (373, WAKING),
            (366, FORK),
            (369, EXIT),
        ]
        .map(|(id, fields)| format!("ID: {id}\n{COMMON}{fields}"));
        let formats: Vec<&str> = formats.iter().map(String::as_str).collect();
        Layout::parse(HEADER_PAGE, &formats).unwrap()
    }

    /// A page being written: records appended after the header.
    struct Page(Vec<u8>);

    impl Page {
        fn new(stamp: u64) -> Page {
            let mut p = stamp.to_ne_bytes().to_vec();
            p.extend([0; 8]);
            Page(p)
        }
        fn word(&mut self, w: u32) -> &mut Self {
            self.0.extend(w.to_ne_bytes());
            self
        }
        fn header(&mut self, kind: u32, delta: u32) -> &mut Self {
            self.word(kind | (delta << 5))
        }
        /// A record of `size` bytes, `fields` (offset, value, size) set.
        fn record(&mut self, id: u16, size: usize, fields: &[(usize, i64, usize)]) -> &mut Self {
            let mut r = vec![0u8; size];
            r[..2].copy_from_slice(&id.to_ne_bytes());
            for &(at, v, n) in fields {
                r[at..at + n].copy_from_slice(&v.to_ne_bytes()[..n]);
            }
            self.0.extend(r);
            self
        }
        /// Sets the length of the data, with `flags`; the rest of a 4 KiB
        /// page zero.
        fn finish(&mut self, flags: i64) -> Vec<u8> {
            let len = self.0.len() as i64 - 16;
            self.0[8..16].copy_from_slice(&(len | flags).to_ne_bytes());
            let mut p = self.0.clone();
            p.resize(4096, 0);
            p
        }
    }

    fn switch(p: &mut Page, delta: u32, prev: i32, state: i64, next: i32) {
        p.header(16, delta).record(
            372,
            64,
            &[(24, prev as i64, 4), (32, state, 8), (56, next as i64, 4)],
        );
    }

    #[test]
    fn a_ring_buffer_page_decodes() {
        let l = layout();
        let t0 = 5_000_000_000u64;
        let mut p = Page::new(t0);
        // A time extension of 2^27 + 5 ns, then a block 10 ns later.
        p.header(30, 5).word(1);
        let t1 = t0 + (1 << 27) + 5 + 10;
        switch(&mut p, 10, 42, 0x01, 0);
        // A discarded record (its length counts all but the header):
        // skipped, its time not counted.
        p.header(29, 7).word(12).word(0).word(0);
        // A wakeup whose length is in the word after the header.
        p.header(0, 3).word(36 + 4).record(375, 36, &[(24, 43, 4)]);
        let t2 = t1 + 3;
        // An absolute time stamp, then a new thread's wakeup at it.
        let t3 = t2 + 1_000_000_007;
        p.header(31, (t3 & ((1 << 27) - 1)) as u32)
            .word((t3 >> 27) as u32);
        p.header(9, 0).record(373, 36, &[(24, 44, 4)]);
        // Preempted (the bit above the states) and stopped: not blocks.
        switch(&mut p, 100, 43, 0x100, 42);
        switch(&mut p, 0, 42, 0x04, 0);
        // A fork (its names after the record's fixed part) and an exit.
        p.header(9, 2).record(366, 36, &[(12, 44, 4), (20, 45, 4)]);
        p.header(9, 3).record(369, 36, &[(24, 42, 4)]);
        // Another event, then the empty end of the page.
        p.header(9, 1).record(999, 36, &[]);
        p.header(29, 0);
        switch(&mut p, 1, 1, 1, 1);
        let page = p.finish(0);
        let mut out = Vec::new();
        assert_eq!(decode_page(&page, 3, &l, &mut out), 0);
        let block = |time_ns, prev, prev_blocked, next| SchedEvent::Switch {
            time_ns,
            cpu: 3,
            prev,
            prev_blocked,
            next,
        };
        let wakeup = |time_ns, tid| SchedEvent::Wakeup {
            time_ns,
            cpu: 3,
            tid,
        };
        assert_eq!(
            out,
            [
                block(t1, 42, true, 0),
                wakeup(t2, 43),
                wakeup(t3, 44),
                block(t3 + 100, 43, false, 42),
                block(t3 + 100, 42, false, 0),
                SchedEvent::Fork {
                    time_ns: t3 + 102,
                    parent: 44,
                    child: 45,
                },
                SchedEvent::Exit {
                    time_ns: t3 + 105,
                    tid: 42,
                },
            ]
        );
    }

    #[test]
    fn lost_events_are_counted() {
        let l = layout();
        let mut p = Page::new(1);
        switch(&mut p, 1, 5, 1, 0);
        let mut counted = p.finish(0);
        // The count after the data, with both flags.
        let at = 16 + 4 + 64;
        counted[at..at + 8].copy_from_slice(&12u64.to_ne_bytes());
        let len = (4 + 64) as i64 | 1 << 31 | 1 << 30;
        counted[8..16].copy_from_slice(&len.to_ne_bytes());
        let mut out = Vec::new();
        assert_eq!(decode_page(&counted, 0, &l, &mut out), 12);
        assert_eq!(out.len(), 1);
        // No room for the count: at least one.
        let uncounted = p.finish(1 << 31);
        assert_eq!(decode_page(&uncounted, 0, &l, &mut out), 1);
    }

    #[test]
    fn this_kernel_s_formats_parse() {
        let Ok(tracefs) = tracefs() else {
            return;
        };
        let read = |p: &str| read(&tracefs.join(p)).unwrap();
        let formats: Vec<String> = EVENTS
            .iter()
            .map(|e| read(&format!("events/sched/{e}/format")))
            .collect();
        let formats: Vec<&str> = formats.iter().map(String::as_str).collect();
        let l = Layout::parse(&read("events/header_page"), &formats).unwrap();
        assert_eq!(l.records.len(), EVENTS.len());
    }

    proptest! {
        #[test]
        fn arbitrary_pages_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let mut out = Vec::new();
            let _ = decode_page(&bytes, 0, &layout(), &mut out);
        }
    }
}
