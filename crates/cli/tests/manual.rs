//! `hsched completions SHELL` and `hsched man`: generated from the command
//! line's own definitions, so they name every command it has.

mod common;

use common::{hsched, text, tmp};

/// The visible commands, as `hsched --help` lists them.
fn commands() -> Vec<String> {
    let help = text(&hsched(&["--help"]).stdout);
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn completions_cover_every_command_in_each_shell() {
    let commands = commands();
    assert!(commands.len() >= 12, "{commands:?}");
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = hsched(&["completions", shell]);
        assert!(out.status.success(), "{shell}: {}", text(&out.stderr));
        let script = text(&out.stdout);
        for c in &commands {
            assert!(
                script.contains(c.as_str()),
                "{shell}: no `{c}` in the script"
            );
        }
    }
    let bad = hsched(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("bash"), "{}", text(&bad.stderr));
}

#[test]
fn the_man_page_names_every_command_and_out_writes_one_page_each() {
    let page = text(&hsched(&["man"]).stdout);
    assert!(page.contains(".TH hsched 1"), "{page}");
    for c in commands() {
        assert!(
            page.contains(&format!("hsched\\-{c}")),
            "no `{c}` in the page"
        );
    }
    let dir = tmp("manual", "pages");
    let _ = std::fs::remove_dir_all(&dir);
    let out = hsched(&["man", "--out", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for c in commands() {
        let sub = std::fs::read_to_string(dir.join(format!("hsched-{c}.1")))
            .unwrap_or_else(|e| panic!("hsched-{c}.1: {e}"));
        assert!(sub.contains(&format!(".TH hsched-{c} 1")), "{sub}");
    }
}
