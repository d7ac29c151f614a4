//! Reproductions of the HLS paper's guarantee conversions (Regehr &
//! Stankovic): Table 1 (what each scheduler takes and gives, §5.1), Table 2
//! and Theorems 1, 2, 3, 5 and 6 (the rewrite rules, §5.2), and §5.1's
//! uniformly slower processor example (RESU 0.5 with RESBS 10, 20 is 25%).
//!
//! The analysis entries ask the analysis crate (`hsched_analysis`) the
//! question each table row or theorem answers, on several inputs, and
//! compare with the paper's statement applied to those inputs: a number
//! with the theorem's formula, a conversion the paper forbids as a 0/1
//! check. The paper's rows are transcribed here from the paper, not read
//! from the analysis crate.

use super::super::{share, simulate, Check, Entry};
use crate::repro::parse;
use hsched_analysis::guarantee::{Guarantee, Kind, Limit, Shape};
use hsched_analysis::rewrite::{basic_supply, implies, strongest, table2, to_reservation};
use hsched_analysis::rules::notation::{matching, Row};
use hsched_analysis::rules::RuleBook;
use hsched_core::Duration;

pub fn entries() -> Vec<Entry> {
    vec![
        Entry {
            name: "hls-table1",
            source: "HLS §5.1, Table 1 (guarantees required and provided)",
            claim: "each scheduler converts the guarantees on the left of its row into those on the right (e.g. CBS: ALL -> RESBH+, RESU -> RESBH+; Linux, Win 2000: NULL -> NULL+); a guarantee not convertible into a row's input is not enough for it",
            scenarios: &[],
            run: table1,
        },
        Entry {
            name: "hls-table2",
            source: "HLS §5.2, Table 2 and Theorems 1, 2, 3, 5, 6 (guarantee rewrite rules)",
            claim: "Th. 1: RESBS/RESBH x, y -> RESCS x, 2y - x + ε; Th. 2: no basic reservation becomes RESCH unless x = y; Th. 3: RESCH/RESCS x, y -> PSBE x/y, (x/y)(y - x); Th. 5: any reservation x, y -> PS x/y; Th. 6: PSBE s, δ -> RESCS/RESBS ys - δ, y for y > δ/s; PS does not become a reservation",
            scenarios: &[],
            run: table2_theorems,
        },
        Entry {
            name: "hls-5.1-resu",
            source: "HLS §5.1 (a reservation scheduler on a uniformly slower processor)",
            claim: "a reservation scheduler that receives RESU 0.5 and provides RESBS 10, 20 gives its thread 0.5 (10/20) = 25% of the CPU",
            scenarios: &["scenarios/papers/hls-5.1-resu.toml"],
            run: resu,
        },
    ]
}

const EXACT: &str = "exact: integer nanoseconds and exact fractions, nothing is measured";
const YES_NO: &str = "1 = yes, 0 = no: a rule allows the conversion or it does not";

fn g(text: &str) -> Result<Guarantee, String> {
    text.parse::<Guarantee>()
        .map_err(|e| format!("{text}: {e}"))
}

fn ms(d: Duration) -> f64 {
    d.as_nanos() as f64 / 1e6
}

fn yes(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}

/// Amount and period (ms) of a reservation; NaN (a failed check) for any
/// other guarantee or one of another kind.
fn res_numbers(got: Option<Guarantee>, kind: Kind) -> (f64, f64) {
    match got {
        Some(Guarantee::Res(r)) if r.kind() == kind => (ms(r.amount), ms(r.period)),
        _ => (f64::NAN, f64::NAN),
    }
}

/// Share and δ (ms) of a PSBE; NaN otherwise.
fn psbe_numbers(got: Option<Guarantee>) -> (f64, f64) {
    match got {
        Some(Guarantee::Psbe { share, delta }) => (share.as_f64(), ms(delta)),
        _ => (f64::NAN, f64::NAN),
    }
}

// ----- Table 1 --------------------------------------------------------------

/// Table 1 as printed (the OCR's arrows and daggers read as `->` and `+`):
/// the policy names hsched uses, and the row.
const TABLE1: &[(&str, &[&str], &str)] = &[
    ("fixed priority", &["fp"], "any -> (any, NULL+)"),
    ("limit", &["limit"], "RESBS -> RESBH"),
    (
        "proportional share",
        &["sfq"],
        "PS -> PS+, PSBE -> PSBE+, RESU -> PSBE+",
    ),
    ("CPU reservation", &["res"], "ALL -> RESBH+, RESU -> RESBH+"),
    ("time sharing", &["ts"], "NULL -> NULL+"),
    (
        "BSS-I, PShED",
        &["bss-i", "pshed"],
        "ALL -> RESU+, RESU -> RESU+",
    ),
    ("CBS", &["cbs"], "ALL -> RESBH+, RESU -> RESBH+"),
    ("EEVDF", &["eevdf"], "ALL -> PSBE+, RESU -> PSBE+"),
    ("Linux, Win 2000", &["linux", "win-2000"], "NULL -> NULL+"),
    (
        "Lottery, Stride",
        &["lottery", "stride"],
        "PS -> PS+, RESU -> PS+",
    ),
    (
        "Resource Kernel",
        &["resource-kernel"],
        "ALL -> (RESBS+, RESBH+), RESU -> (RESBS+, RESBH+)",
    ),
    (
        "Rialto, Rialto/NT",
        &["rialto", "rialto-nt"],
        "ALL -> RESCS+, RESU -> RESCS+",
    ),
    ("SFQ", &["sfq"], "PS -> PS+, PSBE -> PSBE+, RESU -> PSBE+"),
    ("SFS", &["sfs"], "PS+ -> PS+, RESU+ -> PS+"),
    ("Spring", &["spring"], "ALL -> RESBH+, RESU -> RESBH+"),
    ("TBS", &["tbs"], "ALL -> RESBS+, RESU -> RESBS+"),
];

/// Why hsched's SFQ and Rialto rows lack the paper's `RESU ->` part.
const RESU_UNPROVEN: &str = "measured: the rule book's row has no RESU input (a RESU 0.5 finds no conversion). The paper itself says PS schedulers use RESU only as a belief, \"we believe (but have not proved)\", and that Rialto and Rialto/NT \"could be adapted\" to one; hsched's `sfq` and `rialto` announce no deadlines, so they cannot use a RESU, and their rows say so";

/// The kind a row gives for `input` (its first conversion that accepts
/// it); `None` when none does.
fn gives(row: &Row, input: &Guarantee) -> Option<Option<Kind>> {
    matching(row, input).map(|(c, _)| c.outputs[0].kind)
}

fn table1() -> Result<Vec<Check>, String> {
    let book = RuleBook::standard();
    let mut checks = Vec::new();
    for (paper, policies, row) in TABLE1 {
        let want = Row::parse(row)?;
        for p in *policies {
            let have = book
                .get(p)
                .map(|r| r.row().clone())
                .ok_or_else(|| format!("the rule book has no `{p}`"))?;
            let mut c = Check::new(
                format!("{paper} (`{p}`): the row is {row} (1 = as printed)"),
                1.0,
                yes(have == want),
                0.0,
                YES_NO,
            );
            if have != want && ["sfq", "rialto"].contains(p) {
                // Measured: the RESU input is what is missing.
                let resu = g("RESU 0.5")?;
                if gives(&have, &resu).is_none() && gives(&want, &resu).is_some() {
                    c = c.differs(RESU_UNPROVEN);
                }
            }
            checks.push(c);
        }
    }
    // The rows applied: what a scheduler gives for an input, and inputs
    // too weak for it (a guarantee that cannot be rewritten into the row's
    // left side). Expected: read off the printed row.
    let all = g("ALL")?;
    let cases: &[(&str, &str, Option<Kind>)] = &[
        ("cbs", "ALL", Some(Kind::Resbh)),
        ("cbs", "RESU 0.5", Some(Kind::Resbh)),
        ("cbs", "NULL", None),
        ("cbs", "RESBS 5, 10", None),
        ("tbs", "ALL", Some(Kind::Resbs)),
        ("eevdf", "RESU 0.25", Some(Kind::Psbe)),
        ("eevdf", "PS 0.5", None),
        ("lottery", "RESBH 1, 10", Some(Kind::Ps)),
        ("lottery", "NULL", None),
        ("bss-i", "ALL", Some(Kind::Resu)),
        ("rialto-nt", "RESU 0.5", Some(Kind::Rescs)),
        ("linux", "NULL", Some(Kind::Null)),
        ("linux", "RESBH 1, 10", Some(Kind::Null)),
        ("limit", "RESBS 5, 10", Some(Kind::Resbh)),
        ("limit", "PS 0.5", None),
        ("res", "PSBE 0.5, 10", None),
    ];
    for (policy, input, want) in cases {
        let row = book
            .get(policy)
            .ok_or_else(|| format!("the rule book has no `{policy}`"))?
            .row();
        let got = gives(row, &g(input)?);
        let quantity = match want {
            Some(k) => format!("`{policy}` given {input} provides {k} (1 = yes)"),
            None => format!("`{policy}` refuses {input} (1 = refused)"),
        };
        let ok = match want {
            Some(k) => got == Some(Some(*k)),
            None => got.is_none(),
        };
        checks.push(Check::new(quantity, 1.0, yes(ok), 0.0, YES_NO));
    }
    // The fixed-priority row passes on what it is given.
    let fp = book.get("fp").ok_or("the rule book has no `fp`")?.row();
    let passes = matching(fp, &all).is_some_and(|(c, _)| c.outputs[0].kind.is_none());
    checks.push(Check::new(
        "`fp` passes its own guarantee (any) to its top child (1 = yes)",
        1.0,
        yes(passes),
        0.0,
        YES_NO,
    ));
    Ok(checks)
}

// ----- Table 2 and the theorems --------------------------------------------

fn table2_theorems() -> Result<Vec<Check>, String> {
    use Kind::*;
    let mut checks = Vec::new();
    // The cells the theorems and §5.2's text decide: feasible or not.
    let cells: &[(Kind, Kind, bool, &str)] = &[
        (Resbs, Rescs, true, "Th. 1"),
        (Resbh, Rescs, true, "Th. 1"),
        (Resbs, Resch, false, "Th. 2"),
        (Resbh, Resch, false, "Th. 2"),
        (Resch, Psbe, true, "Th. 3"),
        (Rescs, Psbe, true, "Th. 3"),
        (Resbh, Psbe, true, "Th. 4"),
        (Resbs, Ps, true, "Th. 5"),
        (Resch, Ps, true, "Th. 5"),
        (Psbe, Rescs, true, "Th. 6"),
        (Psbe, Resbs, true, "Th. 6"),
        (
            Ps,
            Resbs,
            false,
            "§5.2: a share over an unspecified interval is no reservation",
        ),
        (
            Ps,
            Rescs,
            false,
            "§5.2: a share over an unspecified interval is no reservation",
        ),
    ];
    for (from, to, feasible, by) in cells {
        checks.push(Check::new(
            format!("Table 2: {from} -> {to} feasible ({by}; 1 = t, 0 = f)"),
            yes(*feasible),
            yes(table2(*from, *to).is_ok()),
            0.0,
            YES_NO,
        ));
    }
    // Th. 1, on several reservations: amount x, period 2y - x + ε.
    for (x, y) in [(40u64, 80u64), (5, 33), (1, 10), (9, 10)] {
        for kind in ["RESBS", "RESBH"] {
            let have = g(&format!("{kind} {x}, {y}"))?;
            let d = strongest(&have, Rescs).map(|d| d.result);
            let (a, p) = res_numbers(d, Rescs);
            let (x, y) = (x as f64, y as f64);
            checks.push(Check::new(
                format!("Th. 1: {kind} {x}, {y} -> RESCS amount (ms)"),
                x,
                a,
                0.0,
                EXACT,
            ));
            checks.push(Check::new(
                format!("Th. 1: {kind} {x}, {y} -> RESCS period 2y - x + ε (ms)"),
                2.0 * y - x,
                p,
                2e-6,
                "ε: the theorem asks for any ε > 0; the analysis takes 1ns (1e-6 ms), the smallest time there is; 2e-6 leaves room for the float sum",
            ));
        }
    }
    // ... and no shorter window holds x (the bound is tight at 2y - x).
    for (x, y) in [(40u64, 80u64), (5, 33)] {
        let dm = Duration::from_millis;
        let short = dm(2 * y - x) - Duration::from_nanos(1);
        checks.push(Check::new(
            format!("Th. 1: RESBS {x}, {y} holds x in every window shorter than 2y - x (1 = yes)"),
            0.0,
            yes(basic_supply(dm(x), dm(y), short) >= dm(x)),
            0.0,
            "0 = no: a window 1ns short of 2y - x can hold less than x (the theorem's window is tight)",
        ));
    }
    // Th. 2: RESB* -> RESCH refused, unless x = y.
    for (x, y) in [(40u64, 80u64), (5, 33), (99, 100), (10, 10)] {
        for kind in ["RESBS", "RESBH"] {
            let have = g(&format!("{kind} {x}, {y}"))?;
            let want = g(&format!("RESCH {x}, {y}"))?;
            let ok = implies(&have, &want).is_ok();
            checks.push(Check::new(
                format!("Th. 2: {kind} {x}, {y} -> RESCH {x}, {y} (1 = allowed)"),
                yes(x == y),
                yes(ok),
                0.0,
                "1 only for x = y (the trivial reservation, ALL); otherwise forbidden",
            ));
        }
    }
    // Th. 3: RESC* x, y -> PSBE x/y, (x/y)(y - x).
    for (x, y) in [(3u64, 8u64), (5, 33), (1, 10)] {
        for kind in ["RESCH", "RESCS"] {
            let have = g(&format!("{kind} {x}, {y}"))?;
            let (s, d) = psbe_numbers(strongest(&have, Psbe).map(|d| d.result));
            let (xf, yf) = (x as f64, y as f64);
            checks.push(Check::new(
                format!("Th. 3: {kind} {x}, {y} -> PSBE share x/y"),
                xf / yf,
                s,
                1e-12,
                EXACT,
            ));
            checks.push(Check::new(
                format!("Th. 3: {kind} {x}, {y} -> PSBE δ = (x/y)(y - x) (ms)"),
                xf / yf * (yf - xf),
                d,
                1e-6,
                "δ rounds up to whole nanoseconds (a derived guarantee never promises more)",
            ));
        }
    }
    // Th. 5: any reservation x, y -> PS x/y.
    for (kind, x, y) in [
        ("RESBH", 1u64, 10u64),
        ("RESBS", 5, 33),
        ("RESCH", 3, 8),
        ("RESCS", 7, 20),
    ] {
        let have = g(&format!("{kind} {x}, {y}"))?;
        let got = strongest(&have, Ps).map(|d| d.result);
        let s = match got {
            Some(Guarantee::Ps(s)) => s.as_f64(),
            _ => f64::NAN,
        };
        checks.push(Check::new(
            format!("Th. 5: {kind} {x}, {y} -> PS x/y"),
            x as f64 / y as f64,
            s,
            1e-12,
            EXACT,
        ));
    }
    // Th. 6: PSBE s, δ -> RESCS/RESBS ys - δ, y for y > δ/s; none otherwise.
    for (s, delta, y) in [
        ("0.5", 40u64, 100u64),
        ("0.5", 40, 81),
        ("0.1", 22, 300),
        ("0.4", 58, 200),
        ("0.5", 40, 80),
        ("0.5", 40, 60),
        ("0.1", 22, 220),
    ] {
        let have = g(&format!("PSBE {s}, {delta}"))?;
        let share: f64 = s.parse().map_err(|_| format!("share {s}"))?;
        let (df, yf) = (delta as f64, y as f64);
        let allowed = yf > df / share;
        for (shape, kind) in [(Shape::Continuous, Rescs), (Shape::Basic, Resbs)] {
            let d = to_reservation(&have, shape, Limit::Soft, Duration::from_millis(y));
            if allowed {
                let (a, p) = res_numbers(d.map(|d| d.result), kind);
                checks.push(Check::new(
                    format!("Th. 6: PSBE {s}, {delta} -> {kind} amount ys - δ at y = {y} (ms)"),
                    yf * share - df,
                    a,
                    1e-6,
                    "the amount rounds down to whole nanoseconds",
                ));
                checks.push(Check::new(
                    format!("Th. 6: PSBE {s}, {delta} -> {kind} period y = {y} (ms)"),
                    yf,
                    p,
                    0.0,
                    EXACT,
                ));
            } else {
                checks.push(Check::new(
                    format!("Th. 6: PSBE {s}, {delta} -> {kind} at y = {y} <= δ/s (1 = a result)"),
                    0.0,
                    yes(d.is_some()),
                    0.0,
                    "0: the theorem needs y > δ/s; below it the amount ys - δ is not positive",
                ));
            }
        }
    }
    Ok(checks)
}

// ----- §5.1: a reservation on a uniformly slower processor -----------------

fn resu() -> Result<Vec<Check>, String> {
    // `scenario!` resolves its path from `repro/`; this file is a level
    // deeper.
    let (path, text) = (
        "scenarios/papers/hls-5.1-resu.toml",
        include_str!("../../../../../scenarios/papers/hls-5.1-resu.toml"),
    );
    let scn = parse((path, text))?;
    // The paper's rule on the scenario's inputs: u × x / y.
    let usp = scn.schedulers.iter().find(|s| s.name == "usp");
    let usp = usp.ok_or("the scenario has no `usp`")?;
    let link = usp.parents.first().ok_or("`usp` has no parent")?;
    let rate_text = link.params.str("rate");
    let u = hsched_core::Share::parse(rate_text, hsched_core::ShareRange::Rate)?.as_f64();
    let app = scn.threads.iter().find(|t| t.name == "app");
    let app = app.ok_or("the scenario has no thread `app`")?;
    let (x, y) = match (
        app.params.opt_duration("amount"),
        app.params.opt_duration("period"),
    ) {
        (Some(x), Some(y)) => (ms(x), ms(y)),
        _ => return Err("`app` needs `amount` and `period`".into()),
    };
    let expected = u * x / y;
    // The analysis label of `app`'s edge, in absolute time.
    let a = hsched_analysis::compose::analyse(&scn, &hsched_pipeline::rule_book());
    let label = a.edge(Some("usp"), "app").map(|e| e.guarantee);
    let label_share = label
        .and_then(|g| g.share())
        .map_or(f64::NAN, |s| s.as_f64());
    let r = simulate((path, text))?;
    Ok(vec![
        Check::new(
            "analysis: the share of app's label (RESBH x·u, y)",
            expected,
            label_share,
            1e-9,
            "exact: the label is the reservation in absolute time, amounts scaled by the rate",
        ),
        Check::new(
            "simulated: app's share of the CPU (u × x / y)",
            expected,
            share(&r, "app"),
            0.0005,
            "no tick: budgets are exact to the nanosecond; the horizon may cut the last window (one 20ms window is 0.002 of 10s, of which app holds a quarter)",
        ),
    ])
}
