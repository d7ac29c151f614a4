//! Deliberately broken policies are ejected, and their threads keep running
//! under the default scheduler with nothing lost (as Linux ejects a broken
//! sched_ext scheduler).

use hsched_core::{
    ChildId, CpuId, Cx, Dispatch, Duration, Instant, Params, ParentVp, PolicyInfo, Reject,
    Scheduler, Value,
};
use hsched_model::{
    Dist, LogKind, Machine, Op, ParentLink, Program, RunResult, Scenario, SchedulerSpec, ThreadSpec,
};
use hsched_sim::conformance::assert_all_work_done_under;
use hsched_sim::{run_with_policies, SimOptions};

/// What each broken policy does wrong.
#[derive(Clone, Copy, Default)]
enum Fault {
    /// Grants a child that never asked for a CPU.
    #[default]
    GrantsIdleChild,
    /// Holds the CPU and never runs anyone ("never answers").
    NeverAnswers,
    /// Panics when a child wakes up.
    Panics,
    /// Reports broken invariants once it has a runnable child.
    BreaksInvariants,
    /// Asks for a reschedule in every decision (livelock).
    Livelocks,
    /// Reports broken invariants once it has been charged for a run.
    BreaksWhenCharged,
}

#[derive(Default)]
struct Broken {
    fault: Fault,
    children: Vec<ChildId>,
    runnable: Vec<ChildId>,
    charged: bool,
}

impl Scheduler for Broken {
    fn policy(&self) -> &'static str {
        "broken"
    }
    fn register_vp(
        &mut self,
        _cx: &mut Cx,
        child: ChildId,
        _params: &Params,
    ) -> Result<(), Reject> {
        self.children.push(child);
        Ok(())
    }
    fn unregister_vp(&mut self, _cx: &mut Cx, child: ChildId) {
        self.children.retain(|&c| c != child);
        self.runnable.retain(|&c| c != child);
    }
    fn vp_request(&mut self, cx: &mut Cx, child: ChildId) {
        if let Fault::Panics = self.fault {
            panic!("deliberately broken");
        }
        self.runnable.push(child);
        cx.want_cpus(self.runnable.len() as u32);
    }
    fn vp_release(&mut self, _cx: &mut Cx, child: ChildId) {
        self.runnable.retain(|&c| c != child);
    }
    fn vp_grant(&mut self, cx: &mut Cx, vp: ParentVp, _cpu: CpuId) -> Dispatch {
        match self.fault {
            Fault::GrantsIdleChild => {
                let idle = self.children.iter().find(|c| !self.runnable.contains(c));
                match idle {
                    Some(&c) => Dispatch::run(c),
                    None => Dispatch::Release,
                }
            }
            Fault::NeverAnswers => Dispatch::Idle {
                until: Instant::NEVER,
            },
            // One child per VP, so that both CPUs run at once.
            Fault::BreaksWhenCharged => self
                .runnable
                .get(vp.index())
                .map_or(Dispatch::Release, |&c| Dispatch::run(c)),
            Fault::Livelocks => {
                cx.reschedule(vp);
                self.runnable
                    .first()
                    .map_or(Dispatch::Release, |&c| Dispatch::run(c))
            }
            _ => self
                .runnable
                .first()
                .map_or(Dispatch::Release, |&c| Dispatch::run(c)),
        }
    }
    fn charge(&mut self, _cx: &mut Cx, _child: ChildId, _ran: Duration) {
        self.charged = true;
    }
    fn check_invariants(&self) -> Result<(), String> {
        match self.fault {
            Fault::BreaksWhenCharged if self.charged => Err("deliberately broken".into()),
            Fault::BreaksInvariants if !self.runnable.is_empty() => {
                Err("deliberately broken".into())
            }
            _ => Ok(()),
        }
    }
}

macro_rules! broken_policy {
    ($info:ident, $name:literal, $fault:expr) => {
        static $info: PolicyInfo = PolicyInfo {
            name: $name,
            summary: "a deliberately broken policy",
            doc: "",
            params: Vec::new,
            child_params: Vec::new,
            build: |_| {
                Ok(Box::new(Broken {
                    fault: $fault,
                    ..Default::default()
                }))
            },
            max_parents: 1,
            max_children: u32::MAX,
        };
    };
}

broken_policy!(GRANTS_IDLE, "grants-idle-child", Fault::GrantsIdleChild);
broken_policy!(NEVER_ANSWERS, "never-answers", Fault::NeverAnswers);
broken_policy!(PANICS, "panics", Fault::Panics);
broken_policy!(BAD_INVARIANTS, "bad-invariants", Fault::BreaksInvariants);
broken_policy!(LIVELOCKS, "livelocks", Fault::Livelocks);
broken_policy!(
    BREAKS_WHEN_CHARGED,
    "breaks-when-charged",
    Fault::BreaksWhenCharged
);

/// fp root over the broken scheduler (high) and the default rr (low); three
/// threads under the broken one, each with 30ms of work; one of them starts
/// asleep so that a child exists that has not asked for a CPU.
fn scenario(policy: &str) -> Scenario {
    let thread = |name: &str, ops: Vec<Op>| ThreadSpec {
        name: name.into(),
        parent: "broken".into(),
        params: Params::new(),
        arrival: Instant::ZERO,
        program: Program::new(ops),
        needs: None,
    };
    let work = || Op::Run(Dist::Fixed(Duration::from_millis(30)));
    Scenario {
        name: policy.into(),
        description: String::new(),
        machine: Machine {
            cpus: 2,
            context_switch: Duration::from_micros(5),
            tick: None,
            watchdog: Some(Duration::from_millis(100)),
        },
        horizon: Duration::from_secs(2),
        seed: 7,
        schedulers: vec![
            SchedulerSpec {
                name: "root".into(),
                policy: "fp".into(),
                params: Params::new(),
                parents: vec![],
            },
            SchedulerSpec {
                name: "broken".into(),
                policy: policy.into(),
                params: Params::new(),
                parents: vec![ParentLink {
                    parent: "root".into(),
                    vps: 2,
                    params: Params::new().with("prio", Value::Int(10)),
                }],
            },
            SchedulerSpec {
                name: "ts".into(),
                policy: "rr".into(),
                params: Params::new(),
                parents: vec![ParentLink {
                    parent: "root".into(),
                    vps: 2,
                    params: Params::new(),
                }],
            },
        ],
        default_scheduler: "ts".into(),
        threads: vec![
            thread(
                "sleeper",
                vec![Op::Sleep(Dist::Fixed(Duration::from_millis(50))), work()],
            ),
            thread("a", vec![work()]),
            thread("b", vec![work()]),
        ],
        script: vec![],
    }
}

fn run_broken(info: &'static PolicyInfo) -> RunResult {
    let opts = SimOptions {
        check_invariants: true,
        ..Default::default()
    };
    run_with_policies(&scenario(info.name), &opts, &[info]).expect("the scenario loads")
}

fn assert_ejected_and_nothing_lost(r: &RunResult, why: &str) {
    let ejections: Vec<_> = r.log.iter().filter(|e| e.kind == LogKind::Eject).collect();
    assert_eq!(ejections.len(), 1, "exactly one ejection: {:#?}", r.log);
    assert!(
        ejections[0].text.contains("`broken`"),
        "{}",
        ejections[0].text
    );
    assert!(
        ejections[0].text.contains(why),
        "reason `{why}` in {}",
        ejections[0].text
    );
    assert_all_work_done_under(r, Duration::from_millis(30), "ts");
    let broken = r.nodes.iter().find(|n| n.name == "broken").unwrap();
    assert!(!broken.alive);
}

#[test]
fn granting_a_child_that_did_not_request_is_ejected() {
    let r = run_broken(&GRANTS_IDLE);
    assert_ejected_and_nothing_lost(&r, "did not request");
}

#[test]
fn never_answering_is_caught_by_the_watchdog() {
    let r = run_broken(&NEVER_ANSWERS);
    assert_ejected_and_nothing_lost(&r, "starved thread");
    let eject = r.log.iter().find(|e| e.kind == LogKind::Eject).unwrap();
    // The bound is 100ms and the watchdog looks every 50ms.
    assert!(
        eject.at <= Instant::ZERO + Duration::from_millis(150),
        "{}",
        eject.at
    );
}

#[test]
fn panicking_is_ejected() {
    let r = run_broken(&PANICS);
    assert_ejected_and_nothing_lost(&r, "panicked");
}

#[test]
fn breaking_its_invariants_is_ejected() {
    let r = run_broken(&BAD_INVARIANTS);
    assert_ejected_and_nothing_lost(&r, "invariants");
}

#[test]
fn livelocking_is_ejected() {
    let r = run_broken(&LIVELOCKS);
    assert_ejected_and_nothing_lost(&r, "livelock");
}

/// A broken root running threads on both CPUs: ejecting it ends the run
/// segment on the other CPU, which charges it and fails its checks again.
/// The second ejection must not trip over the first (it once panicked the
/// dispatcher), and the threads finish under a fresh default scheduler with
/// their work counted once (a thread that moved CPUs in the same instant
/// was once shown on both).
#[test]
fn a_root_that_fails_again_while_being_ejected_is_ejected_once() {
    let mut scn = scenario(BREAKS_WHEN_CHARGED.name);
    scn.schedulers.retain(|s| s.name == "broken");
    scn.schedulers[0].parents.clear();
    scn.default_scheduler = "broken".into();
    scn.threads.retain(|t| t.name != "sleeper");
    let opts = SimOptions {
        check_invariants: true,
        ..Default::default()
    };
    let r = run_with_policies(&scn, &opts, &[&BREAKS_WHEN_CHARGED]).expect("the scenario loads");
    let ejections = r.log.iter().filter(|e| e.kind == LogKind::Eject).count();
    assert_eq!(ejections, 1, "{:#?}", r.log);
    // `a` exits at the instant the root fails, still under it; `b` goes on
    // under the fresh default scheduler.
    for t in &r.threads {
        assert_eq!(
            t.cpu_time,
            Duration::from_millis(30),
            "{} did its work",
            t.name
        );
        assert!(t.exit.is_some(), "{} finished", t.name);
    }
}
