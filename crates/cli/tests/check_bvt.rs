//! `hsched check` on `bvt` nodes: the BVT paper's §6 configuration read
//! back under each node (shares from advances, V and W, warps, problems).

use std::path::PathBuf;
use std::process::Command;

/// Writes `text` to a scenario file of its own and runs `hsched check` on it.
fn check(name: &str, text: &str) -> (bool, String, String) {
    let dir = std::env::temp_dir().join(format!("hsched-check-bvt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path: PathBuf = dir.join(name);
    std::fs::write(&path, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hsched"))
        .arg("check")
        .arg(&path)
        .output()
        .expect("hsched runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const HEADER: &str = "horizon = \"1s\"\nseed = 1\n\n[machine]\ncpus = 1\n\n";

fn thread(name: &str, parent: &str, at: &str) -> String {
    format!(
        "[[thread]]\nname = \"{name}\"\nparent = \"{parent}\"\nat = {{ {at} }}\nprogram = [ {{ run = \"100ms\" }} ]\n\n"
    )
}

#[test]
fn check_prints_the_paper_6_1_1_windows_under_a_bvt_node() {
    // §6.1.1: shares 10/30/60 % are advances 6, 2, 1; with C = 2 mcu,
    // V = 12 and W = 20 mcu (200ms at a 10ms mcu).
    let text = format!(
        "{HEADER}[[scheduler]]\nname = \"re\"\npolicy = \"bvt\"\nmcu = \"10ms\"\nallowance = \"20ms\"\n\n{}{}{}",
        thread("a", "re", "advance = 6"),
        thread("b", "re", "advance = 2"),
        thread("c", "re", "advance = 1"),
    );
    let (ok, out, err) = check("six-one-one.toml", &text);
    assert!(ok, "{err}");
    let expected = "\
    bvt: mcu = 10ms, C = 20ms (2 mcu); V = 12 virtual units; W = 20 mcu = 200ms
      child  advance  share  runs/W  warp  lead  limit L  unwarp U
      a            6    10%    20ms     0     -        -         -
      b            2    30%    60ms     0     -        -         -
      c            1    60%   120ms     0     -        -         -
      admission: ok
    thread a @";
    assert!(out.contains(expected), "{out}");
}

#[test]
fn check_reports_bvt_admission_problems_without_failing() {
    // Advances 18, 9, 2 with C = 1 mcu: V = lcm = 18, W = 1 + 2 + 9 = 12
    // mcu. `dev` has 1/12 of the 120ms window (10ms) but L = 20ms, U = 10ms
    // let it run warped 4 × 20ms of it; `hi`'s warp sits 5 units above
    // `dev`'s while its L = 10ms costs 1 mcu × 9 = 9 units (§6.1.3).
    let text = format!(
        "{HEADER}[[scheduler]]\nname = \"n\"\npolicy = \"bvt\"\nmcu = \"10ms\"\nallowance = \"10ms\"\n\n{}{}{}",
        thread(
            "dev",
            "n",
            "advance = 18, warp = 90, warp_limit = \"20ms\", unwarp = \"10ms\""
        ),
        thread(
            "hi",
            "n",
            "advance = 9, warp = 95, warp_limit = \"10ms\", unwarp = \"1s\""
        ),
        thread("bulk", "n", "advance = 2"),
    );
    let (ok, out, err) = check("problems.toml", &text);
    assert!(ok, "problems are reported, not fatal: {err}");
    assert!(
        out.contains("bvt: mcu = 10ms, C = 10ms (1 mcu); V = 18 virtual units; W = 12 mcu = 120ms"),
        "{out}"
    );
    assert!(
        out.contains("problem: §6.1.1: `dev`'s warp limits let it run warped 80ms in the 120ms window, more than its share of it (10ms): over by 70ms"),
        "{out}"
    );
    assert!(
        out.contains("problem: §6.1.3: `hi`'s warp 95 is only 5 above the next lower level (90)"),
        "{out}"
    );
}

#[test]
fn check_explains_a_bvt_node_it_cannot_analyse() {
    // The policy accepts any C, but §6.1.1's V needs C/mcu whole.
    let text = format!(
        "{HEADER}[[scheduler]]\nname = \"n\"\npolicy = \"bvt\"\nmcu = \"10ms\"\nallowance = \"15ms\"\n\n{}",
        thread("t", "n", "advance = 1"),
    );
    let (ok, out, err) = check("cannot.toml", &text);
    assert!(ok, "{err}");
    assert!(
        out.contains("bvt: cannot analyse this node: the context switch allowance C = 15ms is not a positive whole number of mcu (10ms)"),
        "{out}"
    );
}
