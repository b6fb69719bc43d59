//! `--version`, `goodput completions` and `goodput man`: they run, and they
//! name every command the parser knows.

#[allow(dead_code)]
use crate::cmd;

use clap::CommandFactory;
use cmd::goodput;
use std::process::Command;

/// Every subcommand of the real parser (so a new command is checked too).
fn subcommands() -> Vec<String> {
    let names: Vec<String> = goodput::cli::Cli::command().get_subcommands().map(|c| c.get_name().to_string()).collect();
    assert!(names.len() >= 9 && names.iter().any(|n| n == "bench"), "{names:?}");
    names
}

fn stdout(args: &[&str]) -> String {
    let o = goodput().args(args).output().unwrap();
    assert!(o.status.success(), "goodput {args:?} failed: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let v = stdout(&["--version"]);
    assert_eq!(v.trim_end(), format!("goodput {}", goodput::common::version()));
    assert!(v.starts_with(concat!("goodput ", env!("CARGO_PKG_VERSION"))), "{v}");
    // Built in a git checkout (as here and in CI), the hash is HEAD's.
    let head =
        Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).current_dir(env!("CARGO_MANIFEST_DIR")).output();
    match head {
        Ok(h) if h.status.success() => {
            let head = String::from_utf8_lossy(&h.stdout).trim().to_string();
            assert!(v.contains(&format!("(commit {head}")), "--version says {v:?}, HEAD is {head}");
            assert!(goodput::common::tool().commit.is_some_and(|c| c.starts_with(&head)));
        }
        _ => eprintln!("not a git checkout here: the commit is not checked"),
    }
}

#[test]
fn completions_for_every_shell_name_every_command() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let script = stdout(&["completions", shell]);
        for name in subcommands() {
            assert!(script.contains(&name), "the {shell} completions do not name `{name}`");
        }
        // Options of a command complete too.
        assert!(script.contains("--output-tokens"), "the {shell} completions lack bench's options");
    }
    // The bash script is valid bash.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("goodput.bash");
    std::fs::write(&path, stdout(&["completions", "bash"])).unwrap();
    let check = Command::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(check.status.success(), "bash -n: {}", String::from_utf8_lossy(&check.stderr));
}

#[test]
fn an_unknown_shell_is_refused_with_the_choices() {
    let o = goodput().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("tcsh") && err.contains("bash") && err.contains("zsh"), "{err}");
}

#[test]
fn the_man_page_names_every_command_and_renders() {
    let page = stdout(&["man"]);
    assert!(page.contains(".TH goodput 1"), "not roff: {}", &page[..page.len().min(200)]);
    assert!(page.contains(&goodput::common::version().replace('-', "\\-")), "the page names no version");
    for name in subcommands() {
        assert!(page.contains(&format!("goodput\\-{name}")), "the man page does not list `{name}`");
    }
    // groff, where installed, reads it without a warning (-k: through preconv, as man does).
    match Command::new("groff")
        .args(["-k", "-man", "-Tutf8", "-ww", "-z"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    {
        Ok(mut g) => {
            use std::io::Write;
            g.stdin.take().unwrap().write_all(page.as_bytes()).unwrap();
            let o = g.wait_with_output().unwrap();
            assert!(o.status.success() && o.stderr.is_empty(), "groff: {}", String::from_utf8_lossy(&o.stderr));
        }
        Err(_) => eprintln!("groff is not installed: the page's roff is not checked"),
    }
}

#[test]
fn man_into_a_folder_writes_a_page_per_command() {
    let dir = tempfile::tempdir().unwrap();
    let o = goodput().args(["man", "--dir"]).arg(dir.path().join("man1")).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let top = std::fs::read_to_string(dir.path().join("man1/goodput.1")).unwrap();
    assert!(top.contains(".SH SUBCOMMANDS"));
    for name in subcommands() {
        let page = std::fs::read_to_string(dir.path().join(format!("man1/goodput-{name}.1")))
            .unwrap_or_else(|e| panic!("no page for `{name}`: {e}"));
        assert!(page.contains(&format!(".TH goodput-{name} 1")), "goodput-{name}.1 is not its page");
    }
    let bench = std::fs::read_to_string(dir.path().join("man1/goodput-bench.1")).unwrap();
    assert!(bench.contains("output\\-tokens"), "bench's page lacks its options");
    // The synopsis gives each option its value, a flag none.
    let synopsis = bench.lines().skip_while(|l| *l != ".SH SYNOPSIS").nth(1).unwrap();
    assert!(synopsis.starts_with("\\fBgoodput bench\\fR"), "{synopsis}");
    assert!(synopsis.contains("[\\-\\-url <URL>]") && synopsis.contains("[\\-\\-ignore\\-eos]"), "{synopsis}");
    assert!(synopsis.contains("[\\-c|\\-\\-concurrency <CONCURRENCY>]"), "{synopsis}");
    // A folder that cannot be made is a clear error.
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let o = goodput().args(["man", "--dir"]).arg(file.join("sub")).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot create"), "{}", String::from_utf8_lossy(&o.stderr));
}
