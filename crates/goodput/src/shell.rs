//! `goodput completions` and `goodput man`: the shell completion scripts and
//! the man pages, generated from the same clap definitions that parse the
//! command line, so they cannot fall behind it.

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use anyhow::{Context, Result};
use clap::CommandFactory;
use std::io::Write;
use std::process::ExitCode;

pub fn completions(a: CompletionsArgs) -> Result<ExitCode> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "goodput", &mut out);
    write_stdout(&out)
}

pub fn man(a: ManArgs) -> Result<ExitCode> {
    let cmd = with_value_synopsis(Cli::command(), "goodput");
    match a.dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
            clap_mangen::generate_to(cmd, &dir)
                .with_context(|| format!("cannot write the man pages into {}", dir.display()))?;
            goodput_core::tell!(
                "man pages written to {} (read one with `man -l {}/goodput.1`)",
                dir.display(),
                dir.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut out).context("cannot render the man page")?;
            write_stdout(&out)
        }
    }
}

/// `cmd` and its subcommands with a synopsis that gives each option its
/// value (`[--url <URL>]`): clap_mangen's own lists `[--url]`, as if it
/// took none. `bin` is the command as typed (`goodput bench`).
fn with_value_synopsis(cmd: clap::Command, bin: &str) -> clap::Command {
    let names: Vec<String> = cmd.get_subcommands().map(|s| s.get_name().to_string()).collect();
    let usage = synopsis(&cmd, bin);
    let mut cmd = cmd.override_usage(usage);
    for n in names {
        let sub_bin = format!("{bin} {n}");
        cmd = cmd.mut_subcommand(&n, |s| with_value_synopsis(s, &sub_bin));
    }
    cmd
}

/// `bin [-c|--concurrency <CONCURRENCY>] [--ignore-eos] … <RUN>`.
fn synopsis(cmd: &clap::Command, bin: &str) -> String {
    let mut parts = vec![bin.to_string()];
    for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        let value = arg
            .get_value_names()
            .and_then(|v| v.first())
            .map(|v| v.to_string())
            .unwrap_or_else(|| arg.get_id().as_str().to_uppercase());
        let takes_value = arg.get_action().takes_values();
        if arg.is_positional() {
            let many = if arg.get_num_args().is_some_and(|n| n.max_values() > 1) { "..." } else { "" };
            parts.push(if arg.is_required_set() { format!("<{value}>{many}") } else { format!("[{value}]{many}") });
            continue;
        }
        let names: Vec<String> = arg
            .get_short()
            .map(|s| format!("-{s}"))
            .into_iter()
            .chain(arg.get_long().map(|l| format!("--{l}")))
            .collect();
        let mut opt = names.join("|");
        if takes_value {
            opt.push_str(&format!(" <{value}>"));
        }
        parts.push(if arg.is_required_set() { opt } else { format!("[{opt}]") });
    }
    if cmd.has_subcommands() {
        parts.push("<COMMAND>".into());
    }
    parts.join(" ")
}

/// Writes it all to stdout; a reader that went away (`| head`) is not an error.
fn write_stdout(bytes: &[u8]) -> Result<ExitCode> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|_| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e).context("cannot write to stdout"),
        _ => Ok(ExitCode::SUCCESS),
    }
}
