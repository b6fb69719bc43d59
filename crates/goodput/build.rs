//! Names the commit a binary was built from, for `--version` and the result's
//! `tool.commit`: `GOODPUT_COMMIT` is the short hash, with `-modified` when
//! tracked files differ from it, or empty when the build is not in a git
//! checkout (a crates.io source, a tarball) or git is not installed.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_default();
    if !commit.is_empty() {
        // Run again when HEAD moves (a commit, a checkout), the index changes
        // (a `git add`) or any source of the workspace does (an edit, so that
        // `-modified` is never stale).
        for dir in ["../../crates", "../../Cargo.toml", "../../Cargo.lock"] {
            println!("cargo:rerun-if-changed={dir}");
        }
        for name in ["HEAD", "index", "logs/HEAD"] {
            if let Some(p) = git(&["rev-parse", "--git-path", name]) {
                let p = PathBuf::from(p);
                let p = if p.is_relative() { std::env::current_dir().unwrap_or_default().join(p) } else { p };
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
    }
    let modified =
        !commit.is_empty() && git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    let value = if modified { format!("{commit}-modified") } else { commit };
    println!("cargo:rustc-env=GOODPUT_COMMIT={value}");
    println!("cargo:rerun-if-changed=build.rs");
}
