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
    let cmd = Cli::command();
    match a.dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
            clap_mangen::generate_to(cmd, &dir)
                .with_context(|| format!("cannot write the man pages into {}", dir.display()))?;
            eprintln!("man pages written to {} (read one with `man -l {}/goodput.1`)", dir.display(), dir.display());
            Ok(ExitCode::SUCCESS)
        }
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut out).context("cannot render the man page")?;
            write_stdout(&out)
        }
    }
}

/// Writes it all to stdout; a reader that went away (`| head`) is not an error.
fn write_stdout(bytes: &[u8]) -> Result<ExitCode> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|_| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e).context("cannot write to stdout"),
        _ => Ok(ExitCode::SUCCESS),
    }
}
