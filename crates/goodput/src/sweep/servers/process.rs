//! A server goodput starts and stops: its own process group, its output in
//! a log file, a parent-death signal so that it never outlives goodput, and
//! a stop that leaves its port free.
//!
//! Linux's parent-death signal (`PR_SET_PDEATHSIG`) fires when the *thread*
//! that forked the child ends, not the process. Servers are therefore
//! forked from one thread kept for the purpose ([`spawn`]), which lives as
//! long as goodput. The signal reaches the process goodput started: a
//! server started through a shell should `exec` it (`sh -c '… exec vllm
//! serve …'`), and a server's own workers are its to end, as vLLM's and
//! SGLang's are when their parent goes. On an orderly end (the last
//! configuration, Ctrl-C, SIGTERM, an error) goodput signals the whole
//! process group itself.

use anyhow::{anyhow, Context, Result};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// A port on 127.0.0.1 that nothing listens on now: bound and let go. The
/// server is asked to bind it a moment later; another process could take
/// it between, and the server then fails to start, which is reported.
pub fn free_port() -> Result<u16> {
    let l = TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0))
        .context("cannot find a free port on 127.0.0.1 for the server")?;
    Ok(l.local_addr()?.port())
}

/// Whether nothing listens on `port` any more: a listener can be bound
/// there. (std binds with SO_REUSEADDR, so connections of the stopped
/// server's still in TIME_WAIT do not count.)
pub fn port_is_free(port: u16) -> bool {
    TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port)).is_ok()
}

type Job = (Command, mpsc::Sender<std::io::Result<Child>>);

/// The thread servers are forked from (see the module's note): started on
/// first use, and never ended, as its sender is never dropped.
fn spawner() -> &'static Mutex<mpsc::Sender<Job>> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("goodput-server-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("cannot start a thread");
        Mutex::new(tx)
    })
}

/// Forks `cmd` on the spawner thread.
fn spawn(cmd: Command) -> std::io::Result<Child> {
    let (tx, rx) = mpsc::channel();
    spawner()
        .lock()
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?
        .send((cmd, tx))
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?;
    rx.recv().map_err(|_| std::io::Error::other("the spawner thread is gone"))?
}

/// A server running under goodput. Dropped while it runs (an error, a
/// panic), its process group is killed.
pub struct Server {
    child: Child,
    /// Its process group's id: its own pid.
    pgid: libc::pid_t,
    pub port: u16,
    /// Reaped: its exit status.
    status: Option<ExitStatus>,
}

impl Server {
    /// Starts `argv` in a process group of its own, with stdin closed and
    /// stdout and stderr appended to `log`, and the parent-death signal set.
    pub fn start(argv: &[String], port: u16, log: &Path) -> Result<Server> {
        let (program, args) = argv.split_first().ok_or_else(|| anyhow!("the server command is empty"))?;
        let out = File::create(log).with_context(|| format!("cannot create the server log {}", log.display()))?;
        let err = out.try_clone()?;
        let mut cmd = Command::new(program);
        cmd.args(args).stdin(Stdio::null()).stdout(out).stderr(err).process_group(0);
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: between fork and exec only async-signal-safe calls:
        // prctl, getppid and raise.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // goodput died between the fork and the prctl: the signal
                // will never come.
                if libc::getppid() != parent {
                    libc::raise(libc::SIGKILL);
                }
                Ok(())
            });
        }
        let child = spawn(cmd).map_err(|e| anyhow!("cannot start {program:?}: {e}"))?;
        let pgid = child.id() as libc::pid_t;
        Ok(Server { child, pgid, port, status: None })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it has exited, without reaping it (its group id stays
    /// reserved until it is reaped, so the group can still be signalled
    /// safely).
    pub fn exited(&self) -> bool {
        self.status.is_some() || exited(self.child.id())
    }

    fn signal_group(&self, sig: libc::c_int) {
        if self.status.is_none() {
            // SAFETY: the group's leader is our child and not yet reaped,
            // so the id names no other group.
            unsafe {
                libc::killpg(self.pgid, sig);
            }
        }
    }

    /// Stops it: SIGTERM to its group, SIGKILL to the group after `grace`
    /// (and to whatever of it is left once the leader has gone), reaps it,
    /// and waits up to `port_wait` for its port to be free. Gives its exit
    /// status.
    /// Cut short once `aborted` says so (the command was stopped twice):
    /// SIGKILL at once, and no wait for the port, which no later server will
    /// take. A server that outlasts a second of its grace is said to be
    /// waited for, and how to end the wait (the wait had been silent, and
    /// deaf to further Ctrl-Cs).
    pub async fn stop_unless(
        &mut self,
        grace: Duration,
        port_wait: Duration,
        aborted: &dyn Fn() -> bool,
    ) -> Result<ExitStatus> {
        if let Some(s) = self.status {
            return Ok(s);
        }
        self.signal_group(libc::SIGTERM);
        let start = Instant::now();
        let deadline = start + grace;
        let mut told = false;
        while !self.exited() && Instant::now() < deadline && !aborted() {
            if !told && start.elapsed() >= Duration::from_secs(1) {
                told = true;
                goodput_core::tell!(
                    "waiting for the server (pid {}) to stop: SIGKILL in {} (Ctrl-C or SIGTERM again to kill it now)",
                    self.pgid,
                    humantime::format_duration(grace.saturating_sub(Duration::from_secs(1)))
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Whatever of the group is left, the leader gone or not.
        self.signal_group(libc::SIGKILL);
        let status = self.reap().await?;
        if aborted() {
            return Ok(status);
        }
        let deadline = Instant::now() + port_wait;
        while !port_is_free(self.port) {
            if Instant::now() >= deadline {
                anyhow::bail!(
                    "port {} was still taken {} after the server (pid {}) ended: did it leave a process outside its \
                     process group?",
                    self.port,
                    humantime::format_duration(port_wait),
                    self.pgid
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(status)
    }

    /// Its exit status once it has exited (after [`Server::exited`]):
    /// kills what is left of its group, and reaps it.
    pub async fn reap(&mut self) -> Result<ExitStatus> {
        if let Some(s) = self.status {
            return Ok(s);
        }
        self.signal_group(libc::SIGKILL);
        loop {
            if let Some(s) = self.child.try_wait().context("cannot wait for the server")? {
                self.status = Some(s);
                return Ok(s);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.status.is_none() {
            self.signal_group(libc::SIGKILL);
            let _ = self.child.wait();
        }
    }
}

/// Whether goodput's child `pid` has exited, without reaping it. A pid that
/// is no child of ours (reaped already) counts as exited.
pub fn exited(pid: u32) -> bool {
    // SAFETY: a zeroed siginfo_t is a valid out-parameter for waitid.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let r = unsafe {
        libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT)
    };
    // With WNOHANG, a child that has not exited leaves si_pid 0.
    r != 0 || unsafe { info.si_pid() } != 0
}

/// An exit status as the document keeps it: the code, or 128 + the signal
/// that ended it (as a shell gives it).
pub fn status_code(s: ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    s.code().or_else(|| s.signal().map(|sig| 128 + sig))
}

/// An exit status in words: `exit status 3`, `killed by signal 9 (SIGKILL)`.
pub fn status_text(s: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("killed by signal {sig}{}", signal_name(sig)),
        _ => "ended".into(),
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGKILL => " (SIGKILL)",
        libc::SIGTERM => " (SIGTERM)",
        libc::SIGINT => " (SIGINT)",
        libc::SIGSEGV => " (SIGSEGV)",
        libc::SIGABRT => " (SIGABRT)",
        libc::SIGBUS => " (SIGBUS)",
        _ => "",
    }
}

/// The last `lines` lines of a log, read from at most its last 64 KiB, as
/// text (invalid UTF-8 replaced).
pub fn log_tail(path: &Path, lines: usize) -> String {
    const MOST: u64 = 64 << 10;
    let Ok(mut f) = File::open(path) else { return String::new() };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let from = len.saturating_sub(MOST);
    if f.seek(SeekFrom::Start(from)).is_err() {
        return String::new();
    }
    let mut bytes = Vec::new();
    let _ = f.take(MOST).read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().collect();
    // A cut first line is left out.
    let skip = usize::from(from > 0 && all.len() > 1);
    let kept = &all[skip..];
    kept[kept.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_s_tail_is_its_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        std::fs::write(&p, "one\ntwo\nthree\n").unwrap();
        assert_eq!(log_tail(&p, 2), "two\nthree");
        assert_eq!(log_tail(&p, 10), "one\ntwo\nthree");
        assert_eq!(log_tail(&dir.path().join("none"), 3), "");
        let long: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&p, long).unwrap();
        assert_eq!(log_tail(&p, 2), "line 19998\nline 19999");
    }

    /// A second Ctrl-C kills a server that ignores SIGTERM at once, rather
    /// than after its grace (the wait had been deaf to it).
    #[tokio::test]
    async fn an_abort_ends_the_wait_for_a_server_that_will_not_stop() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let (mut s, _dir) = started("trap '' TERM; echo started; sleep 60").await;
        let aborted = std::sync::Arc::new(AtomicBool::new(false));
        let set = aborted.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            set.store(true, Ordering::Relaxed);
        });
        let grace = Duration::from_secs(60);
        let t = Instant::now();
        let status = s.stop_unless(grace, grace, &|| aborted.load(Ordering::Relaxed)).await.unwrap();
        assert_eq!(status_code(status), Some(128 + libc::SIGKILL));
        assert!(t.elapsed() < grace / 4, "ended by the abort, not the grace: {:?}", t.elapsed());
    }

    /// A server of `sh -c script`, once its log says "started" (the script
    /// echoes it), with the folder its log is in.
    async fn started(script: &str) -> (Server, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let argv: Vec<String> = ["sh", "-c", script].iter().map(|s| s.to_string()).collect();
        let s = Server::start(&argv, free_port().unwrap(), &log).unwrap();
        let t = Instant::now();
        while !std::fs::read_to_string(&log).unwrap().contains("started") {
            assert!(t.elapsed() < Duration::from_secs(10));
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        (s, dir)
    }

    #[tokio::test]
    async fn a_server_is_stopped_with_its_group_and_its_status_kept() {
        // A shell that ignores SIGTERM, with a child of its own: both go.
        let (mut s, _dir) = started("trap '' TERM; sleep 30 & echo started; wait").await;
        assert!(!s.exited());
        let status = s.stop_unless(Duration::from_millis(200), Duration::from_secs(5), &|| false).await.unwrap();
        assert_eq!(status_code(status), Some(128 + libc::SIGKILL));
        assert!(status_text(status).contains("SIGKILL"));
        // Not one of the group is left running (its killed members may
        // linger as zombies until init reaps them).
        let t = Instant::now();
        while let Some(pid) = live_member(s.pgid) {
            assert!(t.elapsed() < Duration::from_secs(5), "{pid} of the group still runs");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// A process of group `pgid` that has not ended, from /proc.
    fn live_member(pgid: libc::pid_t) -> Option<String> {
        std::fs::read_dir("/proc").ok()?.filter_map(|e| e.ok()).find_map(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // After the command's closing parenthesis: state, ppid, pgrp.
            let f: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
            (f.get(2)?.parse::<libc::pid_t>().ok()? == pgid && !matches!(f[0], "Z" | "X"))
                .then(|| e.file_name().to_string_lossy().into_owned())
        })
    }

    #[tokio::test]
    async fn a_server_that_exits_is_seen_to_without_being_reaped() {
        let dir = tempfile::tempdir().unwrap();
        let argv: Vec<String> = ["sh", "-c", "echo bye; exit 3"].iter().map(|s| s.to_string()).collect();
        let log = dir.path().join("log");
        let mut s = Server::start(&argv, free_port().unwrap(), &log).unwrap();
        let t = Instant::now();
        while !s.exited() {
            assert!(t.elapsed() < Duration::from_secs(10));
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(status_code(s.reap().await.unwrap()), Some(3));
        assert_eq!(log_tail(&log, 5), "bye");
        let err = Server::start(&["/nonexistent/server".into()], 1, &dir.path().join("log2")).err().unwrap();
        assert!(err.to_string().contains("cannot start \"/nonexistent/server\""), "{err}");
    }
}
