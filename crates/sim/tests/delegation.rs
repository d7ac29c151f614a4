//! Vassal's delegation: a scheduler may decline a grant, and its parent
//! decides instead. Declining is legal (not a protocol breach).

use hsched_core::{
    ChildId, CpuId, Cx, Dispatch, Duration, Instant, Params, ParentVp, PolicyInfo, Reject,
    Scheduler, TimerKey, Value, VpState,
};
use hsched_model::{
    Dist, LogKind, Machine, Op, ParentLink, Program, Scenario, SchedulerSpec, ThreadSpec,
};
use hsched_sim::{run_with_policies, SimOptions};

const WINDOW: Duration = Duration::from_millis(100);

/// Runs its one child in even 100ms windows and declines every grant in odd
/// ones, so that its parent hands the CPU to someone else then.
#[derive(Default)]
struct EvenWindows {
    child: Option<ChildId>,
    runnable: bool,
}

impl EvenWindows {
    fn odd_window(now: Instant) -> bool {
        (now.as_nanos() / WINDOW.as_nanos()) % 2 == 1
    }
}

impl Scheduler for EvenWindows {
    fn policy(&self) -> &'static str {
        "even-windows"
    }
    fn init(&mut self, cx: &mut Cx) {
        cx.set_timer(0, Instant::ZERO + WINDOW);
    }
    fn register_vp(
        &mut self,
        _cx: &mut Cx,
        child: ChildId,
        _params: &Params,
    ) -> Result<(), Reject> {
        self.child = Some(child);
        Ok(())
    }
    fn unregister_vp(&mut self, _cx: &mut Cx, _child: ChildId) {
        self.child = None;
        self.runnable = false;
    }
    fn vp_request(&mut self, cx: &mut Cx, _child: ChildId) {
        self.runnable = true;
        cx.want_cpus(1);
    }
    fn vp_release(&mut self, cx: &mut Cx, _child: ChildId) {
        self.runnable = false;
        cx.want_cpus(0);
    }
    fn vp_grant(&mut self, cx: &mut Cx, _vp: ParentVp, _cpu: CpuId) -> Dispatch {
        match self.child {
            Some(c) if self.runnable && !Self::odd_window(cx.now()) => Dispatch::run(c),
            _ => Dispatch::Release,
        }
    }
    fn timer(&mut self, cx: &mut Cx, _key: TimerKey) {
        let now = cx.now();
        cx.set_timer(0, now + WINDOW);
        match cx.vp_state(ParentVp(0)) {
            // An odd window starts: decline the CPU we hold.
            VpState::Held(_) => cx.reschedule(ParentVp(0)),
            // An even window starts: ask again.
            _ if self.runnable => cx.want_cpus(1),
            _ => {}
        }
    }
}

static EVEN_WINDOWS: PolicyInfo = PolicyInfo {
    name: "even-windows",
    summary: "declines grants in odd 100ms windows",
    doc: "",
    params: Vec::new,
    child_params: Vec::new,
    build: |_| Ok(Box::<EvenWindows>::default()),
    max_parents: 1,
    max_children: 1,
};

#[test]
fn a_declined_grant_goes_to_the_parent_which_decides_instead() {
    let busy = |name: &str, parent: &str| ThreadSpec {
        name: name.into(),
        parent: parent.into(),
        params: Params::new(),
        arrival: Instant::ZERO,
        program: Program::new(vec![Op::Loop {
            count: None,
            body: vec![Op::Run(Dist::Fixed(Duration::from_secs(10)))],
        }]),
        needs: None,
    };
    let link = |prio| {
        vec![ParentLink {
            parent: "root".into(),
            vps: 1,
            params: Params::new().with("prio", Value::Int(prio)),
        }]
    };
    let scn = Scenario {
        name: "delegation".into(),
        description: String::new(),
        machine: Machine {
            cpus: 1,
            context_switch: Duration::ZERO,
            tick: None,
            watchdog: None,
        },
        horizon: Duration::from_secs(1),
        seed: 1,
        schedulers: vec![
            SchedulerSpec {
                name: "root".into(),
                policy: "fp".into(),
                params: Params::new(),
                parents: vec![],
            },
            SchedulerSpec {
                name: "picky".into(),
                policy: "even-windows".into(),
                params: Params::new(),
                parents: link(10),
            },
            SchedulerSpec {
                name: "ts".into(),
                policy: "rr".into(),
                params: Params::new(),
                parents: link(0),
            },
        ],
        default_scheduler: "ts".into(),
        threads: vec![busy("favoured", "picky"), busy("batch", "ts")],
        script: vec![],
    };
    let opts = SimOptions {
        check_invariants: true,
        trace: true,
        ..Default::default()
    };
    let r = run_with_policies(&scn, &opts, &[&EVEN_WINDOWS]).unwrap();
    assert!(
        r.log.iter().all(|e| e.kind != LogKind::Eject),
        "declining is legal: {:?}",
        r.log
    );
    let cpu = |n: &str| r.threads.iter().find(|t| t.name == n).unwrap().cpu_time;
    assert_eq!(cpu("favoured"), Duration::from_millis(500), "even windows");
    assert_eq!(
        cpu("batch"),
        Duration::from_millis(500),
        "odd windows, decided by the parent"
    );
    // The timeline alternates every 100ms.
    let trace = r.trace.unwrap();
    assert_eq!(trace.segments.len(), 10, "{:?}", trace.segments);
}
