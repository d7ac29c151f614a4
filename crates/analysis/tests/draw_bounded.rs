//! The hierarchy drawing stays small whatever the hierarchy: a crowded
//! scheduler's threads past the limit become one summary leaf (threads
//! whose edges have errors stay drawn), and a drawing too large for the
//! layout crate is laid out as a layered tree, without overlaps.

mod build_scenario;

use build_scenario::*;
use hsched_analysis::compose::bench_hierarchy;
use hsched_analysis::draw::{self, LAYOUT_CRATE_MAX_NODES, THREADS_PER_SCHEDULER};
use hsched_analysis::rules::RuleBook;

/// `n` equally weighted threads `t0`, `t1`, ... under one `sfq`, the last
/// needing a hard reservation that `sfq` cannot give (an error on its edge).
fn crowded(n: usize) -> Build {
    let mut b = scenario(1).sched("ps", "sfq", &[], &[]);
    for i in 0..n - 1 {
        b = b.thread(&format!("t{i}"), "ps", &[("weight", int(1))]);
    }
    b.thread_with(
        "needy",
        "ps",
        &[("weight", int(1))],
        Some("RESBH 5, 33"),
        vec![],
    )
}

fn texts(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).expect("the SVG is well-formed XML");
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| {
            n.descendants()
                .filter(|d| d.is_text())
                .filter_map(|d| d.text())
                .collect::<String>()
        })
        .map(|s| s.trim().to_string())
        .collect()
}

#[test]
fn a_crowded_scheduler_draws_its_first_threads_and_a_summary() {
    let b = crowded(40);
    let a = b.analyse();
    let svg = draw::svg(&b.scn, &a);
    let texts = texts(&svg);
    let shown = THREADS_PER_SCHEDULER - 1;
    // The thread with the error first, then the first ones in order.
    assert!(texts.iter().any(|t| t == "needy"), "{texts:?}");
    for i in 0..shown - 1 {
        assert!(texts.contains(&format!("t{i}")), "t{i}: {texts:?}");
    }
    assert!(!texts.contains(&format!("t{}", shown - 1)), "{texts:?}");
    let more = 40 - shown;
    assert!(
        texts.contains(&format!("and {more} more threads")),
        "{texts:?}"
    );
    // Each thread gets 1/40 of the CPU.
    let total = format!("total {:.2}%", more as f64 * 100.0 / 40.0);
    assert!(texts.contains(&total), "{total}: {texts:?}");
}

#[test]
fn a_scheduler_at_the_limit_is_drawn_in_full() {
    let b = crowded(THREADS_PER_SCHEDULER);
    let svg = draw::svg(&b.scn, &b.analyse());
    let texts = texts(&svg);
    assert!(
        !texts.iter().any(|t| t.contains("more threads")),
        "{texts:?}"
    );
    for i in 0..THREADS_PER_SCHEDULER - 1 {
        assert!(texts.contains(&format!("t{i}")), "t{i}: {texts:?}");
    }
}

#[test]
fn a_large_hierarchy_is_a_layered_tree_without_overlaps() {
    let scn = bench_hierarchy(3_000);
    let a = hsched_analysis::compose::analyse(&scn, &RuleBook::standard());
    let svg = draw::svg(&scn, &a);
    assert_eq!(svg, draw::svg(&scn, &a), "deterministic");
    let doc = roxmltree::Document::parse(&svg).expect("well-formed");
    let num = |n: roxmltree::Node, k: &str| -> f64 { n.attribute(k).unwrap().parse().unwrap() };
    // Every scheduler and thread is a box or an ellipse: (row, left, right).
    let mut boxes: Vec<(i64, f64, f64)> = Vec::new();
    for n in doc.descendants() {
        if n.has_tag_name("rect") {
            let (x, w) = (num(n, "x"), num(n, "width"));
            boxes.push(((num(n, "y") + 18.0) as i64, x, x + w));
        } else if n.has_tag_name("ellipse") {
            let (cx, rx) = (num(n, "cx"), num(n, "rx"));
            boxes.push((num(n, "cy") as i64, cx - rx, cx + rx));
        }
    }
    assert!(boxes.len() > LAYOUT_CRATE_MAX_NODES);
    assert_eq!(boxes.len(), scn.schedulers.len() + scn.threads.len());
    boxes.sort_by(|p, q| (p.0, p.1).partial_cmp(&(q.0, q.1)).unwrap());
    for pair in boxes.windows(2) {
        if pair[0].0 == pair[1].0 {
            assert!(pair[0].2 <= pair[1].1, "overlap: {pair:?}");
        }
    }
    // One line per edge of the analysis, each ending inside the drawing.
    let width = num(doc.root_element(), "width");
    let lines: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("line"))
        .collect();
    assert_eq!(lines.len(), a.edges.len());
    for l in lines {
        for k in ["x1", "x2"] {
            assert!((0.0..=width).contains(&num(l, k)));
        }
    }
}
