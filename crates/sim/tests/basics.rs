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
    let scn = workloads::cpu_bound(
        7,
        4,
        3,
        Duration::from_millis(3),
        Duration::from_millis(200),
    );
    let r = run(&scn, &checked()).unwrap();
    assert!(r.log.is_empty(), "{:?}", r.log);
    let total: u64 = r.threads.iter().map(|t| t.cpu_time.as_nanos()).sum();
    assert_eq!(total, 3 * 200_000_000);
}

mod hierarchy_changes {
    use hsched_core::{Duration, Instant, Params, Value};
    use hsched_model::{
        Action, Dist, LogKind, Machine, Op, ParentLink, Program, Scenario, SchedulerSpec,
        ScriptEvent, ThreadSpec,
    };
    use hsched_sim::{run, SimOptions};

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    fn spec(name: &str, policy: &str, parent: Option<(&str, i64)>) -> SchedulerSpec {
        SchedulerSpec {
            name: name.into(),
            policy: policy.into(),
            params: Params::new(),
            parents: parent
                .map(|(p, prio)| {
                    vec![ParentLink {
                        parent: p.into(),
                        vps: 1,
                        params: Params::new().with("prio", Value::Int(prio)),
                    }]
                })
                .unwrap_or_default(),
        }
    }

    fn busy(name: &str, parent: &str) -> ThreadSpec {
        ThreadSpec {
            name: name.into(),
            parent: parent.into(),
            params: Params::new(),
            arrival: Instant::ZERO,
            program: Program::new(vec![Op::Loop {
                count: None,
                body: vec![Op::Run(Dist::Fixed(ms(1000)))],
            }]),
            needs: None,
        }
    }

    fn at(t: u64, action: Action) -> ScriptEvent {
        ScriptEvent {
            at: Instant::ZERO + ms(t),
            action,
        }
    }

    /// fp root; `app` (rr, high) holds thread `a`; `ts` (rr, low, default) holds `b`.
    fn two_level() -> Scenario {
        Scenario {
            name: "changes".into(),
            description: String::new(),
            machine: Machine {
                cpus: 1,
                context_switch: Duration::ZERO,
                tick: None,
                watchdog: None,
            },
            horizon: ms(400),
            seed: 3,
            schedulers: vec![
                spec("root", "fp", None),
                spec("app", "rr", Some(("root", 10))),
                spec("ts", "rr", Some(("root", 0))),
            ],
            default_scheduler: "ts".into(),
            threads: vec![busy("a", "app"), busy("b", "ts")],
            script: vec![],
        }
    }

    fn opts() -> SimOptions {
        SimOptions {
            check_invariants: true,
            ..Default::default()
        }
    }

    #[test]
    fn a_detached_scheduler_keeps_its_threads_and_resumes_when_attached_again() {
        let mut scn = two_level();
        scn.script = vec![
            at(100, Action::Detach("app".into())),
            at(
                300,
                Action::Attach {
                    scheduler: "app".into(),
                    parents: vec![ParentLink {
                        parent: "root".into(),
                        vps: 1,
                        params: Params::new().with("prio", Value::Int(10)),
                    }],
                },
            ),
        ];
        let r = run(&scn, &opts()).unwrap();
        let a = r.threads.iter().find(|t| t.name == "a").unwrap();
        let b = r.threads.iter().find(|t| t.name == "b").unwrap();
        // a runs [0,100) and [300,400); b runs while app is detached.
        assert_eq!(a.cpu_time, ms(200));
        assert_eq!(b.cpu_time, ms(200));
        assert_eq!(a.scheduler, "app");
        assert!(
            r.log.iter().all(|e| e.kind != LogKind::Refused),
            "{:?}",
            r.log
        );
    }

    #[test]
    fn unloading_a_scheduler_returns_its_threads_to_the_default() {
        let mut scn = two_level();
        scn.script = vec![at(100, Action::Unload("app".into()))];
        let r = run(&scn, &opts()).unwrap();
        let a = r.threads.iter().find(|t| t.name == "a").unwrap();
        let b = r.threads.iter().find(|t| t.name == "b").unwrap();
        // a alone until 100ms, then a and b share ts for 300ms.
        assert_eq!(a.scheduler, "ts");
        assert_eq!(a.cpu_time, ms(100 + 150));
        assert_eq!(b.cpu_time, ms(150));
        let homes: Vec<(Instant, &str)> = a
            .homes
            .iter()
            .map(|h| (h.since, h.scheduler.as_str()))
            .collect();
        assert_eq!(
            homes,
            [(Instant::ZERO, "app"), (Instant::ZERO + ms(100), "ts")]
        );
    }

    #[test]
    fn a_thread_moves_and_a_loaded_scheduler_serves_it() {
        let mut scn = two_level();
        scn.script = vec![
            at(100, Action::Load(spec("late", "fifo", Some(("root", 20))))),
            at(
                200,
                Action::Move {
                    thread: "b".into(),
                    to: "late".into(),
                    params: Params::new(),
                },
            ),
        ];
        let r = run(&scn, &opts()).unwrap();
        let a = r.threads.iter().find(|t| t.name == "a").unwrap();
        let b = r.threads.iter().find(|t| t.name == "b").unwrap();
        assert_eq!(b.scheduler, "late");
        let homes: Vec<(Instant, &str)> = b
            .homes
            .iter()
            .map(|h| (h.since, h.scheduler.as_str()))
            .collect();
        assert_eq!(
            homes,
            [(Instant::ZERO, "ts"), (Instant::ZERO + ms(200), "late")]
        );
        assert_eq!(a.homes.len(), 1, "a never moved: {:?}", a.homes);
        assert_eq!(a.cpu_time, ms(200));
        assert_eq!(
            b.cpu_time,
            ms(200),
            "b preempts a from 200ms on, at priority 20"
        );
    }

    #[test]
    fn unloading_the_root_rebuilds_a_default_and_loses_nothing() {
        // The root is unloaded: a fresh rr default root is made, and the
        // schedulers left with no parent go under it with their threads,
        // which it serves in turns from then on.
        let mut scn = two_level();
        scn.script = vec![at(100, Action::Unload("root".into()))];
        let r = run(&scn, &opts()).unwrap();
        let a = r.threads.iter().find(|t| t.name == "a").unwrap();
        let b = r.threads.iter().find(|t| t.name == "b").unwrap();
        assert_eq!((a.scheduler.as_str(), b.scheduler.as_str()), ("app", "ts"));
        for name in ["app", "ts"] {
            let text = format!(
                "scheduler `{name}` lost its last parent with `root`: attached under the default scheduler `default`"
            );
            assert!(r.log.iter().any(|e| e.text == text), "{:#?}", r.log);
        }
        // 100 ms for `a` at priority 10 first; then `default` alternates
        // `app` and `ts` every 10 ms quantum: 150 ms each.
        assert_eq!(a.cpu_time, ms(250));
        assert_eq!(b.cpu_time, ms(150));
    }

    #[test]
    fn unloading_the_default_puts_a_fresh_one_under_a_machine_root() {
        let mut scn = two_level();
        scn.script = vec![at(100, Action::Unload("ts".into()))];
        let r = run(&scn, &opts()).unwrap();
        let a = r.threads.iter().find(|t| t.name == "a").unwrap();
        let b = r.threads.iter().find(|t| t.name == "b").unwrap();
        assert_eq!(b.scheduler, "default");
        assert_eq!(a.cpu_time, ms(400), "the old hierarchy keeps precedence");
        let machine = r
            .nodes
            .iter()
            .find(|n| n.name == "machine")
            .expect("a machine root");
        assert!(machine.alive);
        assert_eq!(machine.received, ms(300));
    }
}

mod workload_programs {
    use hsched_core::{Duration, Instant, Params};
    use hsched_model::{
        Dist, Machine, Op, Program, RunResult, Scenario, SchedulerSpec, ThreadSpec,
    };
    use hsched_sim::{run, SimOptions};

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }
    fn t(x: u64) -> Instant {
        Instant::ZERO + ms(x)
    }

    fn scenario(cpus: u32, policy: &str, threads: Vec<(&str, u64, Vec<Op>)>) -> Scenario {
        Scenario {
            name: "programs".into(),
            description: String::new(),
            machine: Machine {
                cpus,
                context_switch: Duration::ZERO,
                tick: None,
                watchdog: None,
            },
            horizon: ms(200),
            seed: 5,
            schedulers: vec![SchedulerSpec {
                name: "s".into(),
                policy: policy.into(),
                params: Params::new(),
                parents: vec![],
            }],
            default_scheduler: "s".into(),
            threads: threads
                .into_iter()
                .map(|(name, arrival, ops)| ThreadSpec {
                    name: name.into(),
                    parent: "s".into(),
                    params: Params::new(),
                    arrival: t(arrival),
                    program: Program::new(ops),
                    needs: None,
                })
                .collect(),
            script: vec![],
        }
    }

    fn go(scn: &Scenario) -> RunResult {
        run(
            scn,
            &SimOptions {
                check_invariants: true,
                ..Default::default()
            },
        )
        .unwrap()
    }

    fn run_for(d: u64) -> Op {
        Op::Run(Dist::Fixed(ms(d)))
    }

    #[test]
    fn periodic_jobs_are_released_on_the_grid_and_recorded() {
        let periodic = Op::Periodic {
            period: ms(10),
            deadline: ms(4),
            offset: ms(3),
            jobs: Some(10),
            body: vec![run_for(2)],
        };
        let r = go(&scenario(1, "fifo", vec![("p", 0, vec![periodic])]));
        assert_eq!(r.jobs.len(), 10);
        for (k, j) in r.jobs.iter().enumerate() {
            let release = t(3 + 10 * k as u64);
            assert_eq!(
                (j.job, j.release, j.start, j.finish),
                (k as u64, release, Some(release), Some(release + ms(2)))
            );
            assert_eq!(j.deadline, release + ms(4));
            assert!(!j.missed(t(200)));
        }
        assert_eq!(r.threads[0].exit, Some(t(95)));
        assert_eq!(r.threads[0].wakeup_latencies, vec![Duration::ZERO; 10]);
    }

    #[test]
    fn an_overrunning_job_keeps_the_grid_and_misses_its_deadline() {
        // Each job needs 15ms of a 10ms period: job 1, released at 10ms,
        // starts late at 15ms; the grid does not shift.
        let periodic = Op::Periodic {
            period: ms(10),
            deadline: ms(10),
            offset: Duration::ZERO,
            jobs: Some(2),
            body: vec![run_for(15)],
        };
        let r = go(&scenario(1, "fifo", vec![("p", 0, vec![periodic])]));
        let (j0, j1) = (&r.jobs[0], &r.jobs[1]);
        assert_eq!((j0.release, j0.finish), (t(0), Some(t(15))));
        assert_eq!(
            (j1.release, j1.start, j1.finish),
            (t(10), Some(t(15)), Some(t(30)))
        );
        assert!(j0.missed(t(200)) && j1.missed(t(200)));
        assert_eq!(j1.lateness_ns(), Some(10_000_000));
    }

    #[test]
    fn a_mutex_hands_over_in_fifo_order() {
        let a = vec![Op::Lock("m".into()), run_for(10), Op::Unlock("m".into())];
        let b = vec![Op::Lock("m".into()), run_for(5), Op::Unlock("m".into())];
        let c = vec![Op::Lock("m".into()), run_for(1), Op::Unlock("m".into())];
        let r = go(&scenario(
            3,
            "rr",
            vec![("a", 0, a), ("b", 1, b), ("c", 2, c)],
        ));
        let exit = |n: &str| r.threads.iter().find(|t| t.name == n).unwrap().exit;
        assert_eq!(exit("a"), Some(t(10)));
        assert_eq!(exit("b"), Some(t(15)));
        assert_eq!(exit("c"), Some(t(16)));
    }

    #[test]
    fn sleeping_blocks_for_the_given_time() {
        let ops = vec![run_for(1), Op::Sleep(Dist::Fixed(ms(5))), run_for(1)];
        let r = go(&scenario(1, "rr", vec![("s", 0, ops)]));
        assert_eq!(r.threads[0].exit, Some(t(7)));
        assert_eq!(r.threads[0].cpu_time, ms(2));
        assert_eq!(r.cpu_stats[0].idle, ms(200 - 2));
    }

    #[test]
    fn the_seed_drives_every_draw() {
        let ops = || {
            vec![Op::Loop {
                count: Some(50),
                body: vec![
                    Op::Run(Dist::Exponential {
                        mean: ms(1),
                        max: ms(10),
                    }),
                    Op::Sleep(Dist::Normal {
                        mean: ms(2),
                        sd: ms(1),
                        min: Duration::ZERO,
                        max: ms(5),
                    }),
                ],
            }]
        };
        let scn = scenario(1, "rr", vec![("x", 0, ops()), ("y", 0, ops())]);
        let a = go(&scn);
        let b = go(&scn);
        assert_eq!(format!("{:?}", a.threads), format!("{:?}", b.threads));
        let mut other = scn.clone();
        other.seed = 6;
        let c = go(&other);
        assert_ne!(a.threads[0].cpu_time, c.threads[0].cpu_time);
        // Each thread has its own stream: x and y draw differently.
        assert_ne!(a.threads[0].cpu_time, a.threads[1].cpu_time);
    }
}

/// `spin` busy-waits on the wall clock: against one CPU-bound thread under
/// `rr` it gets half of its 100ms, then goes on exactly at 100ms, on the CPU
/// or off it; and a spinner alone gets all of it.
#[test]
fn spin_ends_on_the_wall_clock_whatever_cpu_it_got() {
    use hsched_core::{Duration, Instant};
    use hsched_model::{Dist, Op, Program};
    let ms = Duration::from_millis;
    for (competitors, expected) in [(1usize, ms(50)), (0, ms(100))] {
        let mut scn = workloads::cpu_bound(1 + competitors, 1, 1, ms(10), ms(300));
        scn.threads[0].program = Program::new(vec![
            Op::Spin(Dist::Fixed(ms(100))),
            Op::Sleep(Dist::Fixed(ms(500))),
        ]);
        let r = run(&scn, &checked()).unwrap();
        assert_eq!(r.threads[0].cpu_time, expected, "{competitors} competitors");
        let trace = r.trace.as_ref().unwrap();
        let last = trace
            .segments
            .iter()
            .filter(|s| s.what == hsched_model::SegmentKind::Run(r.threads[0].id))
            .map(|s| s.end)
            .max()
            .unwrap();
        assert!(last <= Instant::ZERO + ms(100), "ran until {last}");
    }
}
