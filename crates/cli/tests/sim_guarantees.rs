//! `hsched sim` reports, per scheduler and per thread, the CPU received
//! next to the guarantee the HLS analysis (§3.3) labelled it with: the
//! summary's `guarantee` column, the metrics' `guarantee` and
//! `guaranteed_share`, checked against what the run actually gave on the
//! paper's Fig. 3 hierarchy; and what the script adds, from when.

use serde_json::Value;

mod common;
use common::{hsched, text};

const FIG3: &str = "scenarios/papers/hls-fig3.toml";

/// 25 periods of `j`'s reservation (80ms), 60 and a bit of `video`'s (33ms).
const HORIZON: &str = "2s";
const HORIZON_NS: u64 = 2_000_000_000;
const MS: u64 = 1_000_000;

fn metrics(file: &str, horizon: &str) -> Value {
    let out = hsched(&["sim", file, "--horizon", horizon, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

fn row<'a>(v: &'a Value, list: &str, name: &str) -> &'a Value {
    v[list]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no {list} row {name}"))
}

#[test]
fn the_summary_shows_each_guarantee_next_to_the_share_received() {
    let out = hsched(&["sim", FIG3, "--horizon", HORIZON]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    let line = |name: &str| {
        s.lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row {name} in\n{s}"))
    };
    // 305ms of 2s received; 5/33 promised.
    assert!(
        line("video").contains("  15.2%  RESBH 5, 33 (15.2%)  "),
        "{s}"
    );
    assert!(line("word").contains("  PSBE 0.1, 22 (10.0%)  "), "{s}");
    assert!(line("voice").contains("  PSBE 0.4, 58 (40.0%)  "), "{s}");
    // The join receives, in effect, what it passes on.
    assert!(line("j").ends_with("  RESBS 40, 80 (50.0%)"), "{s}");
    assert!(line("fp").ends_with("  100.0%  ALL (100.0%)"), "{s}");
    let headers = s.lines().filter(|l| l.contains("  guarantee")).count();
    assert_eq!(headers, 2, "both tables have the column:\n{s}");
}

#[test]
fn the_metrics_carry_the_guarantees_and_the_run_keeps_them() {
    let v = metrics(FIG3, HORIZON);
    assert_eq!(v["global"]["horizon_ns"], HORIZON_NS);
    for list in ["threads", "schedulers"] {
        for r in v[list].as_array().unwrap() {
            assert!(r["guarantee"].is_string(), "{list}: {r}");
            assert!(r["guaranteed_share"].is_f64(), "{list}: {r}");
        }
    }

    // The video player: RESBH 5, 33, and it received at least that share.
    let video = row(&v, "threads", "video");
    assert_eq!(video["guarantee"], "RESBH 5, 33");
    let promised = video["guaranteed_share"].as_f64().unwrap();
    assert!((promised - 5.0 / 33.0).abs() < 1e-12, "{promised}");
    assert!(video["share"].as_f64().unwrap() >= promised, "{video}");
    // The same, exact: cpu_time / horizon >= 5 / 33.
    let cpu = video["cpu_time_ns"].as_u64().unwrap();
    assert!(cpu * 33 >= 5 * HORIZON_NS, "video received {cpu} ns");

    // The CPU-bound threads always want the CPU, so PSBE s, δ bounds what
    // they got over the whole run: at least s·t − δ.
    for (name, share, delta_ms) in [("word", 0.1, 22), ("voice", 0.4, 58)] {
        let t = row(&v, "threads", name);
        assert_eq!(t["guaranteed_share"], share, "{t}");
        let floor = (share * HORIZON_NS as f64) as u64 - delta_ms * MS;
        assert!(t["cpu_time_ns"].as_u64().unwrap() >= floor, "{t}");
    }
    // `j` and `ps` always want the CPU too: RESBS 40, 80 gives them 40ms in
    // each window of some 80ms grid, so at least 24 of the 25 windows' worth
    // over a run that need not start on the grid.
    for name in ["j", "ps"] {
        let s = row(&v, "schedulers", name);
        assert_eq!(s["guarantee"], "RESBS 40, 80");
        assert_eq!(s["guaranteed_share"], 0.5);
        assert!(s["received_ns"].as_u64().unwrap() >= 24 * 40 * MS, "{s}");
    }
    // `res` is given ALL but its children ask for less: a guarantee bounds
    // what a VP that always wants the CPU receives, so no check here.
    let res = row(&v, "schedulers", "res");
    assert_eq!(
        (&res["guarantee"], &res["guaranteed_share"]),
        (&"ALL".into(), &1.0.into())
    );
    assert!(res["share"].as_f64().unwrap() < 1.0, "{res}");
}

#[test]
fn what_the_script_adds_or_moves_is_labelled_from_then() {
    // 4 CPUs; at 1s the script loads `bulk` and moves crunch.2 and .3 to it.
    let v = metrics("scenarios/examples/multiprocessor.toml", "1500ms");
    let root = row(&v, "schedulers", "root");
    assert_eq!(root["guarantee"], "ALL ×4");
    assert_eq!(root["guaranteed_share"], 4.0);
    assert!(root.get("guaranteed_from_ns").is_none(), "{root}");
    let ts = row(&v, "schedulers", "ts");
    assert_eq!(ts["guarantee"], "NULL ×4");
    assert_eq!(ts["guaranteed_share"], Value::Null);
    // Below `rt` and `ts` on `fp`: nothing promised, from its load.
    let bulk = row(&v, "schedulers", "bulk");
    assert_eq!(bulk["guarantee"], "NULL ×4");
    assert_eq!(bulk["guaranteed_from_ns"], 1_000_000_000u64);
    for (name, from) in [("crunch.1", None), ("crunch.2", Some(1_000_000_000u64))] {
        let t = row(&v, "threads", name);
        assert_eq!(t["guarantee"], "NULL", "{t}");
        assert_eq!(t["guaranteed_from_ns"].as_u64(), from, "{t}");
    }
}
