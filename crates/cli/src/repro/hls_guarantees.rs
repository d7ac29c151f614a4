//! Reproductions of the HLS paper's guarantee analysis (Regehr & Stankovic,
//! §3.3 and §5.3): the Fig. 1 hierarchy labelled edge by edge as in Fig. 3,
//! by the top-down analysis (exact), and the simulated schedule checked
//! against the labels.

use super::{scenario, simulate, Bound, Check, Entry};
use crate::repro::parse;
use hsched_analysis::compose::{analyse, Analysis};
use hsched_analysis::guarantee::{Guarantee, Kind};
use hsched_analysis::schedule_check::Schedule;
use hsched_model::{RunResult, SegmentKind};

mod rules;

/// The HLS guarantee entries.
pub fn entries() -> Vec<Entry> {
    let mut all = vec![Entry {
        name: "hls-fig3",
        source: "HLS §5.3, Fig. 3 (the Fig. 1 hierarchy with guarantees added)",
        claim: "top-down, the video player gets RESBH 5, 33; the join passes on RESBS 40, 80, which PS takes as PSBE 0.5, 40 (Th. 4); the word processor and voice recognition get PSBE 0.1, 22 and PSBE 0.4, 58; the simulated schedule meets every label",
        scenarios: &["scenarios/papers/hls-fig3.toml"],
        run: fig3,
    }];
    all.extend(rules::entries());
    all
}

const EXACT: &str = "exact: integer nanoseconds and exact fractions, nothing is measured";
const MS: f64 = 1e6;

/// Amount and period (ms) of a reservation, share and δ (ms) of a PSBE;
/// NaN (a failed check) when the guarantee is of another kind.
fn numbers(g: &Guarantee, want: Kind) -> (f64, f64) {
    if g.kind() != want {
        return (f64::NAN, f64::NAN);
    }
    match *g {
        Guarantee::Res(r) => (
            r.amount.as_nanos() as f64 / MS,
            r.period.as_nanos() as f64 / MS,
        ),
        Guarantee::Psbe { share, delta } => (share.as_f64(), delta.as_nanos() as f64 / MS),
        _ => (f64::NAN, f64::NAN),
    }
}

fn exact(quantity: String, paper: f64, measured: f64) -> Check {
    Check {
        quantity,
        paper,
        measured,
        tolerance: 0.0,
        why: EXACT,
        bound: Bound::Within,
        differs: None,
    }
}

/// The four checks of one labelled edge: its kind's two numbers.
fn label_checks(what: &str, g: Option<&Guarantee>, want: Kind, paper: (f64, f64)) -> Vec<Check> {
    let (a, b) = g.map_or((f64::NAN, f64::NAN), |g| numbers(g, want));
    let names = match want {
        Kind::Psbe => ("share", "δ (ms)"),
        _ => ("amount (ms)", "period (ms)"),
    };
    vec![
        exact(format!("{what}: {want} {}", names.0), paper.0, a),
        exact(format!("{what}: {want} {}", names.1), paper.1, b),
    ]
}

fn analysis_checks(a: &Analysis) -> Vec<Check> {
    let edge = |from: &str, to: &str| a.edge(Some(from), to).map(|e| &e.guarantee);
    let ps_taken = a
        .nodes
        .iter()
        .find(|n| n.name == "ps")
        .and_then(|n| n.taken_as.as_ref())
        .map(|d| &d.result);
    let mut checks = vec![exact(
        "the hierarchy composes (1 = yes)".into(),
        1.0,
        if a.composes() { 1.0 } else { 0.0 },
    )];
    checks.extend(label_checks(
        "res → video",
        edge("res", "video"),
        Kind::Resbh,
        (5.0, 33.0),
    ));
    checks.extend(label_checks(
        "res → j",
        edge("res", "j"),
        Kind::Resbh,
        (40.0, 80.0),
    ));
    checks.extend(label_checks(
        "j → ps",
        edge("j", "ps"),
        Kind::Resbs,
        (40.0, 80.0),
    ));
    checks.extend(label_checks(
        "ps takes it as (Th. 4)",
        ps_taken,
        Kind::Psbe,
        (0.5, 40.0),
    ));
    checks.extend(label_checks(
        "ps → word",
        edge("ps", "word"),
        Kind::Psbe,
        (0.1, 22.0),
    ));
    checks.extend(label_checks(
        "ps → voice",
        edge("ps", "voice"),
        Kind::Psbe,
        (0.4, 58.0),
    ));
    checks
}

/// The busy intervals of the named threads together (they share one VP of
/// the hierarchy, so they never overlap on one CPU).
fn busy(r: &RunResult, names: &[&str]) -> Result<Schedule, String> {
    let trace = r.trace.as_ref().ok_or("the run kept no trace")?;
    let ids: Vec<_> = names
        .iter()
        .map(|n| {
            r.threads
                .iter()
                .find(|t| t.name == *n)
                .map(|t| t.id)
                .ok_or_else(|| format!("the scenario has no thread `{n}`"))
        })
        .collect::<Result<_, _>>()?;
    Schedule::new(trace.segments.iter().filter_map(|s| match s.what {
        SegmentKind::Run(t) if ids.contains(&t) => Some((s.start.as_nanos(), s.end.as_nanos())),
        _ => None,
    }))
}

fn simulation_checks(r: &RunResult) -> Result<Vec<Check>, String> {
    let horizon = r.horizon.as_nanos();
    let ms = |ns: u64| ns as f64 / MS;
    let mut checks = Vec::new();

    // RESBH 5, 33 on res's grid, which starts when the reservation is
    // admitted (time 0): exactly 5ms in every whole window.
    let video = busy(r, &["video"])?;
    let period = 33_000_000u64;
    let windows: Vec<u64> = (0..horizon / period)
        .map(|k| video.supply(k * period, (k + 1) * period))
        .collect();
    let (least, most) = (
        windows.iter().copied().min().unwrap_or(0),
        windows.iter().copied().max().unwrap_or(0),
    );
    let why = "no tick, no switch cost: res's budgets are exact to the nanosecond and the player's 5ms job is released at each window's start";
    checks.push(Check {
        quantity: "simulated: least video CPU in a 33ms window of res's grid (ms)".into(),
        paper: 5.0,
        measured: ms(least),
        tolerance: 0.0,
        why,
        bound: Bound::AtLeast,
        differs: None,
    });
    checks.push(Check {
        quantity: "simulated: most video CPU in a 33ms window of res's grid (ms, hard)".into(),
        paper: 5.0,
        measured: ms(most),
        tolerance: 0.0,
        why,
        bound: Bound::AtMost,
        differs: None,
    });

    // What the join passes on, RESBS 40, 80, on res's grid for `j`.
    let ps = busy(r, &["word", "voice"])?;
    let period = 80_000_000u64;
    let least = (0..horizon / period)
        .map(|k| ps.supply(k * period, (k + 1) * period))
        .min()
        .unwrap_or(0);
    checks.push(Check {
        quantity: "simulated: least CPU below j in an 80ms window of res's grid (ms)".into(),
        paper: 40.0,
        measured: ms(least),
        tolerance: 0.0,
        why: "a lower bound (soft: the join adds fp's slack), checked on every whole window of the run",
        bound: Bound::AtLeast,
        differs: None,
    });

    // The PSBE labels: the worst deficit s·t − supply over every interval.
    for (what, names, share, delta) in [
        ("ps (PSBE 0.5, 40)", &["word", "voice"][..], (1, 2), 40.0),
        ("word (PSBE 0.1, 22)", &["word"][..], (1, 10), 22.0),
        ("voice (PSBE 0.4, 58)", &["voice"][..], (2, 5), 58.0),
    ] {
        let s = busy(r, names)?;
        let share = hsched_core::Share::new(share.0, share.1).expect("non-zero");
        let (_, deficit) = s.worst_psbe_deficit(share, 0, horizon);
        let deficit_ns = deficit as f64 / share.den() as f64;
        checks.push(Check {
            quantity: format!("simulated: worst deficit of {what} over any interval (ms)"),
            paper: delta,
            measured: deficit_ns / MS,
            tolerance: 0.0,
            why: "an upper bound, checked exactly over every interval of the run (CPU-bound threads, so always wanting the CPU)",
            bound: Bound::AtMost,
            differs: None,
        });
    }
    Ok(checks)
}

fn fig3() -> Result<Vec<Check>, String> {
    let (path, text) = scenario!("hls-fig3.toml");
    let scn = parse((path, text))?;
    let a = analyse(&scn, &hsched_pipeline::rule_book());
    let mut checks = analysis_checks(&a);
    let r = simulate((path, text))?;
    checks.extend(simulation_checks(&r)?);
    Ok(checks)
}
