//! How long each CPU of a live run sat idle, as the kernel counts it: the
//! `idle` and `iowait` columns of its `cpuN` line in `/proc/stat`, read at
//! the run's start and at its end.
//!
//! Why the kernel's count and not the agent's events: the agent hears only
//! of the switches of the threads it manages, and a switch from one of
//! them to a task it does not manage looks the same as a switch to the
//! idle task (the next thread is not one of its own either way); only the
//! kernel knows when a CPU ran nothing at all. The count is in clock ticks
//! (`USER_HZ`, 100 a second on Linux): a CPU's idle time over a run is
//! exact to a tick at either end, 20 ms at most.

use hsched_core::Duration;

/// Each CPU's idle ticks at one moment, in the order of the CPUs asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdleTicks(Vec<u64>);

/// The idle ticks of real CPUs `cpus` now.
pub fn sample(cpus: &[usize]) -> Result<IdleTicks, String> {
    let stat = std::fs::read_to_string("/proc/stat").map_err(|e| format!("/proc/stat: {e}"))?;
    parse(&stat, cpus)
}

/// The idle ticks (`idle` + `iowait`) of real CPUs `cpus` in the text of
/// `/proc/stat`: its `cpuN user nice system idle iowait ...` lines.
pub fn parse(stat: &str, cpus: &[usize]) -> Result<IdleTicks, String> {
    let mut ticks = Vec::with_capacity(cpus.len());
    for &cpu in cpus {
        let name = format!("cpu{cpu}");
        let line = stat
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name.as_str()))
            .ok_or_else(|| format!("/proc/stat: no line `{name}`"))?;
        let column = |i: usize| -> Result<u64, String> {
            match line.split_whitespace().nth(i) {
                // `iowait` came with Linux 2.6; before it, none was counted.
                None if i == 5 => Ok(0),
                None => Err(format!("/proc/stat: line `{name}` has no column {i}")),
                Some(v) => v.parse().map_err(|_| {
                    format!("/proc/stat: line `{name}`: column {i} is `{v}`, not a count")
                }),
            }
        };
        ticks.push(column(4)?.saturating_add(column(5)?));
    }
    Ok(IdleTicks(ticks))
}

/// How long each CPU was idle from `start` to `end`, with `per_second`
/// ticks a second, in the order of the CPUs sampled.
pub fn idle_between(start: &IdleTicks, end: &IdleTicks, per_second: u64) -> Vec<Duration> {
    let per_second = per_second.max(1);
    (start.0.iter().zip(&end.0))
        .map(|(&a, &b)| {
            let ticks = b.saturating_sub(a);
            let nanos = u128::from(ticks) * 1_000_000_000 / u128::from(per_second);
            Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
        })
        .collect()
}

/// The kernel's clock ticks a second (`USER_HZ`), the unit of
/// `/proc/stat`.
pub fn ticks_per_second() -> u64 {
    // SAFETY: sysconf reads a constant of the system; no memory is passed.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(hz).ok().filter(|&hz| hz > 0).unwrap_or(100)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two samples of a 4-CPU machine's `/proc/stat`, one second apart
    /// (100 ticks a second): CPU 1 idle throughout, CPU 2 busy but for
    /// 30 ticks of idle and 10 of I/O wait, CPU 3 busy throughout.
    const BEFORE: &str = "\
cpu  8000 20 3000 400000 900 0 50 0 0 0
cpu0 2000 5 750 100000 200 0 10 0 0 0
cpu1 2000 5 750 100000 300 0 20 0 0 0
cpu2 2000 5 750 100000 200 0 10 0 0 0
cpu3 2000 5 750 100000 200 0 10 0 0 0
intr 123456 0 0
ctxt 987654
btime 1700000000
";
    const AFTER: &str = "\
cpu  8160 20 3040 400230 910 0 50 0 0 0
cpu0 2050 5 760 100090 200 0 10 0 0 0
cpu1 2000 5 750 100100 300 0 20 0 0 0
cpu2 2045 5 765 100030 210 0 10 0 0 0
cpu3 2065 5 765 100010 200 0 10 0 0 0
intr 123999 0 0
";

    #[test]
    fn idle_and_iowait_are_counted_per_cpu() {
        let cpus = [1, 2, 3];
        let (a, b) = (parse(BEFORE, &cpus).unwrap(), parse(AFTER, &cpus).unwrap());
        assert_eq!(a, IdleTicks(vec![100_300, 100_200, 100_200]));
        let idle = idle_between(&a, &b, 100);
        assert_eq!(
            idle,
            vec![
                Duration::from_millis(1000),
                Duration::from_millis(400),
                Duration::from_millis(100),
            ]
        );
    }

    #[test]
    fn the_total_line_is_not_cpu_0() {
        // `cpu ` (all CPUs) must not be taken for `cpu0`, nor `cpu1` for
        // `cpu10`.
        let stat = "cpu 1 1 1 999 1\ncpu10 1 1 1 7 1\ncpu0 1 1 1 5 2\ncpu1 1 1 1 3 0\n";
        assert_eq!(parse(stat, &[0, 1]).unwrap(), IdleTicks(vec![7, 3]));
    }

    #[test]
    fn a_missing_cpu_or_a_bad_column_is_an_error_naming_it() {
        let e = parse(BEFORE, &[7]).unwrap_err();
        assert!(e.contains("no line `cpu7`"), "{e}");
        let e = parse("cpu0 1 2 3 x 5\n", &[0]).unwrap_err();
        assert!(e.contains("`cpu0`") && e.contains("`x`"), "{e}");
        let e = parse("cpu0 1 2\n", &[0]).unwrap_err();
        assert!(e.contains("no column 4"), "{e}");
        // An old kernel's line, with no `iowait`.
        assert_eq!(parse("cpu0 1 2 3 4\n", &[0]).unwrap(), IdleTicks(vec![4]));
    }

    #[test]
    fn a_counter_that_went_back_counts_nothing() {
        let idle = idle_between(&IdleTicks(vec![10]), &IdleTicks(vec![5]), 100);
        assert_eq!(idle, vec![Duration::ZERO]);
    }

    #[test]
    fn this_machine_s_stat_parses() {
        let Ok(stat) = std::fs::read_to_string("/proc/stat") else {
            return;
        };
        parse(&stat, &[0]).unwrap();
        assert!(ticks_per_second() > 0);
    }
}
