//! Golden error messages: the one-line form and the rendered diagnostic
//! (file, line, key, what was expected, the snippet) for a few typical
//! mistakes. Review changes with `cargo insta review`.

mod common;

use common::BASE;

fn render(text: &str) -> String {
    let e = common::parse(text).expect_err("the case must be an error");
    let mut out = format!("{e}\n\n");
    miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
        .with_width(100)
        .render_report(&mut out, &e)
        .unwrap();
    out
}

const THREADS: &str = r#"
[[thread]]
name = "b"
program = [ { run = "1ms" } ]

[[thread]]
name = "c"
program = [
  { sleep = "10ms" },
  { run = "3 jiffies" },
]
"#;

#[test]
fn bad_duration_deep_in_a_program() {
    insta::assert_snapshot!(render(&format!("{BASE}{THREADS}")));
}

#[test]
fn misspelled_policy_parameter() {
    insta::assert_snapshot!(render(
        &BASE.replace("quantum = \"2ms\"", "quantom = \"2ms\"")
    ));
}

#[test]
fn missing_attachment_parameter() {
    insta::assert_snapshot!(render(&format!(
        "{BASE}\n[[thread]]\nname = \"rt\"\nparent = \"root\"\nprogram = [ {{ run = \"1ms\" }} ]\n"
    )));
}

#[test]
fn unquoted_duration() {
    insta::assert_snapshot!(render(&BASE.replace("\"5us\"", "5us")));
}

#[test]
fn cycle_in_the_hierarchy() {
    insta::assert_snapshot!(render(
        &BASE.replace("policy = \"fp\"", "policy = \"fp\"\nparent = \"ts\"")
    ));
}

#[test]
fn script_refers_to_a_scheduler_that_is_gone() {
    insta::assert_snapshot!(render(&format!(
        "{BASE}\n[[script]]\nat = \"100ms\"\nload = {{ name = \"x\", policy = \"rr\", parent = \"root\", at = {{ prio = 4 }} }}\n\n[[script]]\nat = \"200ms\"\nunload = \"x\"\n\n[[script]]\nat = \"300ms\"\nmsg = {{ to = \"x\", name = \"boost\" }}\n"
    )));
}
