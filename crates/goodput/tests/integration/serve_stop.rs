//! `goodput serve` stopped with a stream in flight: the first Ctrl-C says
//! how many responses it finishes and for how long, the second stops the
//! server at once (it had been ignored, and the server silent for its
//! 10 s grace).
//!
//! And a server stopped by `goodput sweep --serve-cmd`: every process it
//! started goes with it, those that left its process group too.

use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// `goodput serve ARGS` on a free loopback port: the child (killed when
/// the guard goes), its address, and its stderr's lines as they come.
fn serve(args: &[&str]) -> (crate::cmd::Kill, String, mpsc::Receiver<String>) {
    serve_from(crate::cmd::goodput_child(), args)
}

/// [`serve`] started from `cmd` (the goodput binary, set up as a test needs).
fn serve_from(mut cmd: std::process::Command, args: &[&str]) -> (crate::cmd::Kill, String, mpsc::Receiver<String>) {
    let mut child = cmd.args(["serve", "--port", "0", "--progress", "none"]).args(args).spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let guard = crate::cmd::Kill(child);
    let addr = line_with(&rx, "listening on ")
        .split_whitespace()
        .nth(2)
        .and_then(|u| u.strip_prefix("http://"))
        .unwrap()
        .to_owned();
    (guard, addr, rx)
}

/// The next line of `rx` that holds `needle`, waiting up to 20 s.
fn line_with(rx: &mpsc::Receiver<String>, needle: &str) -> String {
    let t0 = Instant::now();
    loop {
        let left = Duration::from_secs(20).saturating_sub(t0.elapsed());
        match rx.recv_timeout(left) {
            Ok(l) if l.contains(needle) => return l,
            Ok(_) => {}
            Err(e) => panic!("no line with {needle:?}: {e}"),
        }
    }
}

/// Opens a long stream on `addr` and reads until its first token chunk.
fn open_stream(addr: &str) -> TcpStream {
    let mut sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let body = r#"{"prompt":"a b c","max_tokens":100000,"stream":true}"#;
    write!(
        sock,
        "POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut seen = Vec::new();
    let mut b = [0u8; 4096];
    while String::from_utf8_lossy(&seen).matches("data: ").nth(1).is_none() {
        let n = sock.read(&mut b).unwrap();
        assert!(n > 0, "the stream closed: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&b[..n]);
    }
    sock
}

fn signal(child: &std::process::Child, sig: i32) {
    // SAFETY: signals our own child.
    unsafe { libc::kill(child.id() as i32, sig) };
}

#[test]
fn a_second_ctrl_c_stops_serve_at_once_and_the_first_says_what_it_finishes() {
    for args in [&["--profile", "engine", "--speed", "0.2"][..], &["--profile", "fixed", "--itl", "50ms"]] {
        let (mut guard, addr, lines) = serve(args);
        let _stream = open_stream(&addr);
        signal(&guard.0, libc::SIGINT);
        let said = line_with(&lines, "stopping");
        assert!(
            said.contains("stopping (Ctrl-C): finishing 1 live response for up to 10 s (Ctrl-C or SIGTERM again"),
            "{args:?}: {said}"
        );
        std::thread::sleep(Duration::from_millis(200));
        assert!(guard.0.try_wait().unwrap().is_none(), "{args:?}: the first Ctrl-C lets the stream finish");
        let t0 = Instant::now();
        signal(&guard.0, libc::SIGTERM);
        let status = loop {
            if let Some(s) = guard.0.try_wait().unwrap() {
                break s;
            }
            assert!(t0.elapsed() < Duration::from_secs(5), "{args:?}: still serving 5 s after the second signal");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(130), "{args:?}");
        let said = line_with(&lines, "stopping now");
        assert!(said.contains("stopping now (SIGTERM): 1 live response cut short"), "{args:?}: {said}");
    }
}

/// SIGHUP (the terminal closed) stops serve as SIGTERM does: it is said,
/// and serve exits rather than dying of the signal.
#[test]
fn sighup_stops_serve_as_sigterm_does() {
    let (mut guard, _addr, lines) = serve(&[]);
    signal(&guard.0, libc::SIGHUP);
    assert!(line_with(&lines, "stopping").contains("stopping (SIGHUP)"));
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = guard.0.try_wait().unwrap() {
            break s;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "still serving 20 s after SIGHUP");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.code().is_some(), "serve exits on its own, not killed by SIGHUP: {status:?}");
}

/// A SIGHUP ignored when serve starts (`nohup goodput serve &`) stays
/// ignored, as does a SIGINT (a script's `goodput serve &`): serve keeps
/// serving through them, and SIGTERM still stops it (each had been taken
/// over regardless, so a logout, or the terminal's Ctrl-C meant for the
/// script, stopped it).
#[test]
fn an_ignored_sighup_or_sigint_stays_ignored() {
    use std::os::unix::process::CommandExt;
    let mut cmd = crate::cmd::goodput_child();
    // SAFETY: between fork and exec only signal(), which is
    // async-signal-safe; an ignored disposition is kept across exec, as
    // nohup relies on.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            // As a script's `goodput … &` starts without job control.
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            Ok(())
        });
    }
    let (mut guard, addr, lines) = serve_from(cmd, &[]);
    signal(&guard.0, libc::SIGHUP);
    signal(&guard.0, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(500));
    assert!(guard.0.try_wait().unwrap().is_none(), "serve ended on an ignored SIGHUP or SIGINT");
    // Still answering.
    let mut sock = TcpStream::connect(&addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(sock, "GET /v1/models HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    sock.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let said: Vec<String> = lines.try_iter().collect();
    assert!(!said.iter().any(|l| l.contains("stopping")), "{said:?}");
    signal(&guard.0, libc::SIGTERM);
    assert!(line_with(&lines, "stopping").contains("stopping (SIGTERM)"));
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = guard.0.try_wait().unwrap() {
            break s;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "still serving 20 s after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.code().is_some(), "{status:?}");
}

/// An address that is not this machine's is refused with a hint about the
/// address, not about the port.
#[test]
fn a_bind_error_says_what_to_change() {
    let o = crate::cmd::goodput()
        .args(["serve", "--host", "192.0.2.1", "--port", "0", "--progress", "none"])
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("cannot bind 192.0.2.1:0 (192.0.2.1 is not an address of this machine: use --host 127.0.0.1"),
        "{err}"
    );
    assert!(!err.contains("port is in use"), "{err}");
    // A port in use says so.
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port().to_string();
    let o = crate::cmd::goodput()
        .args(["serve", "--host", "127.0.0.1", "--port", &port, "--progress", "none"])
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("cannot bind 127.0.0.1:{port} (the port is in use: pick another")), "{err}");
}

/// The live processes whose command line is `sleep SECONDS` (a marker no
/// other process holds), from /proc.
fn sleepers(seconds: &str) -> Vec<i32> {
    let want = format!("sleep\0{seconds}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want.as_bytes()))
        .filter(|pid| {
            // A zombie, ended and not yet reaped, is not live: the state
            // follows the command's closing parenthesis.
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.rsplit_once(')').is_some_and(|(_, r)| !r.trim_start().starts_with(['Z', 'X'])))
        })
        .collect()
}

/// Kills the `sleep SECONDS` processes a test started when it ends, passed
/// or failed.
struct KillSleepers(String);

impl Drop for KillSleepers {
    fn drop(&mut self) {
        for pid in sleepers(&self.0) {
            // SAFETY: signals a process this test started (its marker).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// `goodput sweep --serve-cmd 'sh -c SCRIPT'`, `SCRIPT` starting a process
/// outside the server's process group, logging `sleeper PID`, before it
/// becomes `goodput serve`: the sleeper, `sleep SECONDS`, does not outlive
/// the sweep. Gives what the sweep said.
fn sweep_leaves_no_sleeper(script: &str, seconds: &str) -> String {
    let _cleanup = KillSleepers(seconds.to_owned());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.json");
    let bin = shlex::try_quote(env!("CARGO_BIN_EXE_goodput")).unwrap().into_owned();
    let script = format!("{script}; exec {bin} serve --port \"$0\" -q --progress none --speed 20");
    let template = format!("sh -c {} {{port}}", shlex::try_quote(&script).unwrap());
    let o = crate::cmd::goodput()
        .args(["sweep", "--serve-cmd", &template, "--concurrency", "1", "-n", "2", "--output-tokens", "4"])
        .args(["--serve-stop-grace", "5s", "--progress", "none", "-o"])
        .arg(&out)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    let log = std::fs::read_to_string(dir.path().join("f.logs").join("01-default.log")).unwrap();
    let pid: i32 = log
        .lines()
        .find_map(|l| l.strip_prefix("sleeper ")?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no sleeper was started: {log}"));
    let left = sleepers(seconds);
    assert!(left.is_empty(), "sleep {seconds} (pid {pid}) outlived the sweep: {left:?}\n{err}");
    err
}

/// A process the server's shell moved to a session of its own (`setsid`),
/// out of the process group goodput signals, is ended with the server (it
/// had run on, holding what it held, after goodput had exited).
#[test]
fn a_server_s_process_outside_its_group_is_ended_with_it() {
    let seconds = format!("300.123{}", std::process::id());
    sweep_leaves_no_sleeper(&format!("setsid sleep {seconds} & echo sleeper $!"), &seconds);
}

/// A daemonised grandchild, its parent gone before the server is stopped
/// (a subshell that backgrounds it and exits at once), is ended with the
/// server too: goodput, its subreaper, finds it among its own children.
#[test]
fn a_server_s_daemonised_grandchild_is_ended_with_it() {
    let seconds = format!("300.456{}", std::process::id());
    sweep_leaves_no_sleeper(&format!("(setsid sleep {seconds} & echo sleeper $!)"), &seconds);
}
