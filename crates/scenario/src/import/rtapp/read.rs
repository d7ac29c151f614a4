//! Reading the rt-app document into the [`File`] model: `global`, each
//! task's keys, scheduling class, CPU affinity and phases. What hsched
//! cannot express is a warning; what rt-app itself would refuse is a
//! [`Fail`].

use super::event::{event_kind, read_event};
use super::json_like::{Kind, Member, Pos, Value};
use super::members::{get, int, object, string, value, warn_duplicates, Cx, Fail};
use super::model::{Class, File, Phase, Policy, Task, MAX_DURATION_US, POLICIES};

/// CFS's weight of each nice level, -20..=19 (the kernel's
/// `sched_prio_to_weight`): the `sfq` weight of a SCHED_OTHER thread.
const NICE_WEIGHTS: [u32; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];
/// CFS's weight of a SCHED_IDLE thread.
const IDLE_WEIGHT: u32 = 3;

pub(super) fn read_file(root: &Value, cx: &mut Cx) -> Result<File, Fail> {
    let top = object(root, "", "the rt-app document")?;
    let mut duration_s = None;
    let mut default_policy = Policy::Other;
    warn_duplicates(top, "", &["tasks", "global"], cx);
    if let Some(g) = get(top, "global") {
        let members = object(value(g, "global", "an object")?, "global", "`global`")?;
        warn_duplicates(
            members,
            "global",
            &["duration", "default_policy", "pi_enabled"],
            cx,
        );
        for m in members {
            let path = format!("global.{}", m.key);
            match m.key.as_str() {
                "duration" => duration_s = Some(int(m, &path, "an integer (seconds)")?),
                "default_policy" => {
                    let (s, pos) = string(m, &path, "a policy name")?;
                    default_policy = Policy::parse(&s).ok_or_else(|| {
                        Fail::at(
                            pos,
                            &path,
                            format!("unknown policy `{s}`: expected {POLICIES}"),
                        )
                    })?;
                }
                "pi_enabled" => {
                    if m.value.as_ref().map(|v| &v.kind) == Some(&Kind::Bool(true)) {
                        cx.warn(m.key_pos, &path, "the imported mutexes are declared without priority inheritance: add [[mutex]] tables with protocol = \"inherit\" (fp and rm honour it)");
                    }
                }
                // How rt-app turns `run` durations into loops of work:
                // hsched runs them as that much CPU time. The others are
                // logging, tracing and host settings: nothing to simulate.
                "calibration" | "lock_pages" | "logdir" | "log_basename" | "log_size"
                | "ftrace" | "gnuplot" | "io_device" | "mem_buffer_size" | "cumulative_slack"
                | "frag" | "spacing" => {}
                other => cx.warn(
                    m.key_pos,
                    &path,
                    format!("unknown key `{other}` of `global`: ignored"),
                ),
            }
        }
    }
    let tasks_member = get(top, "tasks").ok_or_else(|| {
        Fail::at(
            root.pos,
            "tasks",
            "expected a `tasks` object (rt-app needs one), found none",
        )
    })?;
    for m in top {
        match m.key.as_str() {
            "tasks" | "global" => {}
            // Kept by rt-app for old files; resources are created as used.
            "resources" => {}
            other => cx.warn(
                m.key_pos,
                other,
                "unknown top-level key (expected `tasks`, `global` or `resources`): ignored",
            ),
        }
    }
    let tasks_obj = object(
        value(tasks_member, "tasks", "an object")?,
        "tasks",
        "`tasks`",
    )?;
    let mut tasks: Vec<Task> = Vec::new();
    for m in tasks_obj {
        let path = format!("tasks.{}", m.key);
        if let Some(prev) = tasks.iter().find(|t| t.name == m.key) {
            return Err(Fail::at(
                m.key_pos,
                &path,
                format!(
                    "task `{}` is defined twice (first at {}): task names must be unique",
                    m.key, prev.pos
                ),
            ));
        }
        let v = value(m, &path, "a task object")?;
        let task = read_task(&m.key, v, &path, default_policy, cx)?;
        tasks.push(task);
    }
    if tasks.is_empty() {
        return Err(Fail::at(
            tasks_member.key_pos,
            "tasks",
            "expected at least one task in `tasks`",
        ));
    }
    Ok(File { duration_s, tasks })
}

/// Keys of a task or phase that are not events.
pub(super) const SCHED_KEYS: [&str; 8] = [
    "policy",
    "priority",
    "dl-runtime",
    "dl-period",
    "dl-deadline",
    "cpus",
    "util_min",
    "util_max",
];

pub(super) fn read_task(
    name: &str,
    v: &Value,
    path: &str,
    default_policy: Policy,
    cx: &mut Cx,
) -> Result<Task, Fail> {
    let members = object(v, path, "a task")?;
    warn_duplicates(
        members,
        path,
        &[
            "instance",
            "delay",
            "loop",
            "phases",
            "policy",
            "priority",
            "dl-runtime",
            "dl-period",
            "dl-deadline",
            "cpus",
        ],
        cx,
    );
    let nonneg = |key: &str, default: u64, cx: &mut Cx| -> Result<u64, Fail> {
        match get(members, key) {
            None => Ok(default),
            Some(m) => {
                let p = format!("{path}.{key}");
                let (i, pos) = int(m, &p, "an integer")?;
                if i < 0 {
                    cx.warn(pos, &p, format!("{i} is negative: taken as 0"));
                }
                Ok(i.max(0) as u64)
            }
        }
    };
    let instances = nonneg("instance", 1, cx)?;
    let delay_us = nonneg("delay", 0, cx)?;
    let class = read_class(members, path, default_policy, cx)?;
    let cpus = read_cpus(members, path)?;
    let max_cpu = cpus.as_ref().and_then(|(c, _, _)| c.iter().max().copied());
    let phases_member = get(members, "phases");
    let (phases, loops, has_phases) = match phases_member {
        Some(pm) => {
            let ppath = format!("{path}.phases");
            let pobj = object(value(pm, &ppath, "an object")?, &ppath, "`phases`")?;
            let mut phases = Vec::new();
            let mut current = class.policy();
            for p in pobj {
                let phpath = format!("{ppath}.{}", p.key);
                let pv = value(p, &phpath, "a phase object")?;
                let pmembers = object(pv, &phpath, "a phase")?;
                let phase = read_phase(pmembers, &phpath, pv.pos, current, cx)?;
                if let Some((c, _)) = &phase.class {
                    current = c.policy();
                }
                phases.push(phase);
            }
            if phases.is_empty() {
                return Err(Fail::at(
                    pm.key_pos,
                    &ppath,
                    "expected at least one phase in `phases`",
                ));
            }
            for m in members {
                let key = m.key.as_str();
                if event_kind(key).is_some() {
                    cx.warn(
                        m.key_pos,
                        &format!("{path}.{key}"),
                        "an event beside `phases`: rt-app ignores it, and so does hsched",
                    );
                }
            }
            let loops = match get(members, "loop") {
                None => None,
                Some(m) => loop_count(m, &format!("{path}.loop"), cx)?,
            };
            (phases, loops, true)
        }
        None => {
            // The task is its own single phase: its `loop` is the phase's,
            // and the task then runs once; without `loop`, for ever.
            let phase = read_phase(members, path, v.pos, class.policy(), cx)?;
            let loops = if get(members, "loop").is_some() {
                Some(1)
            } else {
                None
            };
            (vec![phase], loops, false)
        }
    };
    for m in members {
        let key = m.key.as_str();
        let kpath = format!("{path}.{key}");
        match key {
            "instance" | "delay" | "loop" | "phases" => {}
            k if SCHED_KEYS.contains(&k) || event_kind(k).is_some() => {}
            // The legacy spellings of the deadline parameters.
            "period" | "deadline" => {}
            _ => {
                if !has_phases {
                    continue; // read_phase warned already
                }
                warn_other_key(m, &kpath, cx);
            }
        }
    }
    Ok(Task {
        name: name.to_string(),
        path: path.to_string(),
        pos: v.pos,
        instances,
        delay_us,
        loops,
        class,
        max_cpu,
        cpus,
        phases,
    })
}

pub(super) fn warn_other_key(m: &Member, path: &str, cx: &mut Cx) {
    let msg = match m.key.as_str() {
        "taskgroup" => "cgroup task groups are not modelled: ignored (the thread is scheduled as if in the root group)".to_string(),
        "nodes_membind" | "membind_nodes" => "NUMA memory binding is not modelled: ignored".to_string(),
        "util_min" | "util_max" => "utilization clamping is not modelled: ignored".to_string(),
        "dl-reclaim" => "SCHED_DEADLINE bandwidth reclaiming is not modelled: `res` reservations are hard (a thread gets its dl-runtime per dl-period, never more)".to_string(),
        k => format!("unknown key `{k}`: ignored (it is not an rt-app event or property)"),
    };
    cx.warn(m.key_pos, path, msg);
}

/// A `loop` value: `None` for ever (rt-app loops for ever on -1, and on 0
/// or below, whose count it never reaches).
pub(super) fn loop_count(m: &Member, path: &str, cx: &mut Cx) -> Result<Option<u64>, Fail> {
    let (i, pos) = int(m, path, "an integer (a count, or -1 for ever)")?;
    if i == -1 {
        Ok(None)
    } else if i <= 0 {
        cx.warn(
            pos,
            path,
            format!("loop {i}: rt-app never reaches this count and loops for ever; so does hsched"),
        );
        Ok(None)
    } else {
        Ok(Some(i as u64))
    }
}

pub(super) fn read_cpus(
    members: &[Member],
    path: &str,
) -> Result<Option<(Vec<u32>, Pos, String)>, Fail> {
    let Some(m) = get(members, "cpus") else {
        return Ok(None);
    };
    let p = format!("{path}.cpus");
    let v = value(m, &p, "an array of CPU numbers")?;
    let Kind::Array(items) = &v.kind else {
        return Err(Fail::at(
            v.pos,
            &p,
            format!(
                "expected an array of CPU numbers, found {}",
                v.kind.describe()
            ),
        ));
    };
    let mut cpus = Vec::new();
    for it in items {
        match it.kind {
            Kind::Int(i) if (0..4096).contains(&i) => cpus.push(i as u32),
            ref k => {
                return Err(Fail::at(
                    it.pos,
                    &p,
                    format!("expected a CPU number in 0..4096, found {}", k.describe()),
                ))
            }
        }
    }
    Ok(Some((cpus, m.key_pos, p)))
}

/// The scheduling class of a task from its keys (task level: the default
/// policy applies; rt-app's defaults for the priority).
pub(super) fn read_class(
    members: &[Member],
    path: &str,
    default_policy: Policy,
    cx: &mut Cx,
) -> Result<Class, Fail> {
    let policy = match get(members, "policy") {
        None => default_policy,
        Some(m) => {
            let p = format!("{path}.policy");
            let (s, pos) = string(m, &p, "a policy name")?;
            Policy::parse(&s).ok_or_else(|| {
                Fail::at(
                    pos,
                    &p,
                    format!("unknown policy `{s}`: expected {POLICIES}"),
                )
            })?
        }
    };
    let int_key = |key: &str| -> Result<Option<(i64, Pos)>, Fail> {
        get(members, key)
            .map(|m| int(m, &format!("{path}.{key}"), "an integer"))
            .transpose()
    };
    let priority = int_key("priority")?;
    let prio_path = format!("{path}.priority");
    let us = |key: &str, cx: &mut Cx| -> Result<Option<u64>, Fail> {
        Ok(match int_key(key)? {
            None => None,
            Some((i, pos)) => {
                if i < 0 {
                    cx.warn(
                        pos,
                        &format!("{path}.{key}"),
                        format!("{i} is negative: taken as 0"),
                    );
                }
                if i > 0 && i as u64 > MAX_DURATION_US {
                    return Err(Fail::at(
                        pos,
                        &format!("{path}.{key}"),
                        format!("{i}us is out of range: at most {MAX_DURATION_US}us (MAX_DURATION_US, 64-bit nanoseconds)"),
                    ));
                }
                Some(i.max(0) as u64)
            }
        })
    };
    Ok(match policy {
        Policy::Other | Policy::Batch => {
            let nice = priority.map(|(p, _)| p).unwrap_or(0);
            if let Some((p, pos)) = priority {
                if !(-20..=19).contains(&p) {
                    cx.warn(
                        pos,
                        &prio_path,
                        format!("nice {p} is outside -20..19: clamped"),
                    );
                }
            }
            if policy == Policy::Batch {
                cx.warn(
                    get(members, "policy").map(|m| m.key_pos).unwrap_or(Pos { line: 0, column: 0 }),
                    &format!("{path}.policy"),
                    "SCHED_BATCH is mapped as SCHED_OTHER (hsched's fair share has no separate no-wakeup-preemption class)",
                );
            }
            if let Some(m) = get(members, "dl-runtime") {
                cx.warn(
                    m.key_pos,
                    &format!("{path}.dl-runtime"),
                    "a custom time slice for a fair-class thread is not modelled: every fair thread gets the `other` scheduler's quantum",
                );
            }
            Class::Fair(NICE_WEIGHTS[(nice.clamp(-20, 19) + 20) as usize])
        }
        Policy::Idle => Class::Fair(IDLE_WEIGHT),
        Policy::Fifo | Policy::Rr => {
            let prio = priority.map(|(p, _)| p).unwrap_or(10);
            if let Some((p, pos)) = priority {
                if !(1..=99).contains(&p) {
                    cx.warn(
                        pos,
                        &prio_path,
                        format!("real-time priority {p} is outside 1..99: clamped"),
                    );
                }
            }
            let prio = prio.clamp(1, 99);
            if policy == Policy::Fifo {
                Class::Fifo(prio)
            } else {
                Class::Rr(prio)
            }
        }
        Policy::Deadline => {
            let runtime = us("dl-runtime", cx)?
                .filter(|r| *r > 0)
                .or(us("runtime", cx)?.filter(|_| get(members, "phases").is_some()))
                .unwrap_or(0);
            let period = us("dl-period", cx)?
                .or(us("period", cx)?)
                .filter(|p| *p > 0)
                .unwrap_or(runtime);
            let deadline = us("dl-deadline", cx)?
                .or(us("deadline", cx)?)
                .filter(|d| *d > 0)
                .unwrap_or(period);
            let ppath = format!("{path}.policy");
            let ppos = get(members, "policy")
                .map(|m| m.key_pos)
                .unwrap_or(Pos { line: 0, column: 0 });
            if runtime == 0 {
                cx.warn(
                    ppos,
                    &ppath,
                    "SCHED_DEADLINE without `dl-runtime`: Linux refuses it; mapped as SCHED_OTHER",
                );
                Class::Fair(NICE_WEIGHTS[20])
            } else if period < runtime {
                cx.warn(ppos, &ppath, format!("dl-period {period}us is shorter than dl-runtime {runtime}us: Linux refuses it; mapped as a reservation of the whole CPU every {runtime}us"));
                Class::Deadline(runtime, runtime)
            } else {
                if deadline != period {
                    let dpos = get(members, "dl-deadline")
                        .map(|m| m.key_pos)
                        .unwrap_or(ppos);
                    cx.warn(dpos, &format!("{path}.dl-deadline"), format!("a deadline ({deadline}us) other than the period ({period}us): hsched's `res` reserves dl-runtime every dl-period with the period as deadline"));
                }
                Class::Deadline(runtime, period)
            }
        }
    })
}

pub(super) fn read_phase(
    members: &[Member],
    path: &str,
    pos: Pos,
    current: Policy,
    cx: &mut Cx,
) -> Result<Phase, Fail> {
    let is_task = !path.contains(".phases.");
    // A phase's scheduling keys change the thread's policy at its start
    // (a priority alone keeps the policy in effect).
    let sched_key = members.iter().find(|m| {
        [
            "policy",
            "priority",
            "dl-runtime",
            "dl-period",
            "dl-deadline",
        ]
        .contains(&m.key.as_str())
    });
    let class = match sched_key {
        Some(m) if !is_task => Some((read_class(members, path, current, cx)?, m.key_pos)),
        _ => None,
    };
    let loops = match get(members, "loop") {
        None => Some(1),
        Some(m) => loop_count(m, &format!("{path}.loop"), cx)?,
    };
    let mut events = Vec::new();
    for m in members {
        let kpath = format!("{path}.{}", m.key);
        if event_kind(&m.key).is_some() {
            events.push(read_event(m, &kpath)?);
            continue;
        }
        if is_task {
            // Task-level keys are read by read_task; warn here only about
            // what neither reads.
            match m.key.as_str() {
                "instance" | "delay" | "loop" | "phases" | "period" | "deadline" => {}
                k if SCHED_KEYS.contains(&k) => {}
                _ => warn_other_key(m, &kpath, cx),
            }
            continue;
        }
        match m.key.as_str() {
            "loop" => {}
            "policy" | "priority" | "dl-runtime" | "dl-period" | "dl-deadline" => {}
            "cpus" => cx.warn(
                m.key_pos,
                &kpath,
                "a per-phase CPU affinity is not modelled: the thread may run on any CPU",
            ),
            _ => warn_other_key(m, &kpath, cx),
        }
    }
    if events.is_empty() {
        return Err(Fail::at(
            pos,
            path,
            "no events: rt-app refuses a phase without events (run, runtime, sleep, timer, lock, unlock, wait, signal, broad, sync, barrier, suspend, resume, yield, fork, mem, iorun, memrun, sem_post, sem_wait)",
        ));
    }
    Ok(Phase {
        path: path.to_string(),
        class,
        loops,
        events,
    })
}
