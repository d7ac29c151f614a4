//! Basic behaviour of the simulator with built-in policies.

use hsched_core::Duration;
use hsched_sim::{run, workloads, SimOptions};

fn checked() -> SimOptions {
    SimOptions {
        check_invariants: true,
        trace: true,
        ..Default::default()
    }
}

#[test]
fn round_robin_shares_equally_and_accounts_every_nanosecond() {
    let scn = workloads::cpu_bound(4, 1, 1, Duration::from_millis(10), Duration::from_secs(1));
    let r = run(&scn, &checked()).unwrap();
    assert!(r.log.is_empty(), "{:?}", r.log);
    for t in &r.threads {
        assert_eq!(t.cpu_time, Duration::from_millis(250), "{}", t.name);
    }
    let c = &r.cpu_stats[0];
    assert_eq!(c.busy + c.overhead + c.idle, Duration::from_secs(1));
    // One at t=0, then one per quantum expiry before the horizon (the one at 1s is not run).
    assert_eq!(r.decisions, 100);
}

#[test]
fn deep_hierarchies_on_several_cpus_keep_every_invariant() {
    let scn = workloads::cpu_bound(7, 4, 3, Duration::from_millis(3), Duration::from_millis(200));
    let r = run(&scn, &checked()).unwrap();
    assert!(r.log.is_empty(), "{:?}", r.log);
    let total: u64 = r.threads.iter().map(|t| t.cpu_time.as_nanos()).sum();
    assert_eq!(total, 3 * 200_000_000);
}
