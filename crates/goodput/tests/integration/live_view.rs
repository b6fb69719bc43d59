//! The full-screen live view in a real terminal (tmux): it draws, Ctrl-C
//! stops the run and still writes the result, and the terminal comes back
//! in its normal mode on every exit path.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// One tmux server per test, on a socket in the test's own folder (no
/// shared /tmp/tmux-UID), one test at a time.
struct Tmux {
    socket: std::path::PathBuf,
    _dir: tempfile::TempDir,
    _one_at_a_time: std::sync::MutexGuard<'static, ()>,
}

static TERMINALS: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl Tmux {
    fn start(cmd: &str) -> Tmux {
        assert!(
            Command::new("tmux").arg("-V").output().is_ok(),
            "tmux is needed to drive the live view in a real terminal: run scripts/install-test-deps.sh (apt-get install tmux)"
        );
        let guard = TERMINALS.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let t = Tmux { socket: dir.path().join("tmux.sock"), _dir: dir, _one_at_a_time: guard };
        let mut last = String::new();
        for _ in 0..3 {
            let out = t.cmd(&["new-session", "-d", "-s", "t", "-x", "120", "-y", "32", cmd]).output().unwrap();
            if out.status.success() {
                return t;
            }
            last = String::from_utf8_lossy(&out.stderr).into_owned();
            std::thread::sleep(Duration::from_millis(500));
        }
        panic!("tmux could not start a session: {last}");
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-S").arg(&self.socket).args(args).env_remove("TMUX");
        c
    }

    fn tmux(&self, args: &[&str]) -> bool {
        self.cmd(args).status().is_ok_and(|s| s.success())
    }

    fn screen(&self) -> String {
        let out = self.cmd(&["capture-pane", "-t", "t", "-p"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The screen and the lines scrolled off it.
    fn history(&self) -> String {
        let out = self.cmd(&["capture-pane", "-t", "t", "-p", "-S", "-"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn wait_for(&self, what: impl Fn(&str) -> bool, limit: Duration) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if what(&s) || start.elapsed() > limit {
                return s;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}

fn wait_file(p: &Path, limit: Duration) -> String {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Ok(s) = std::fs::read_to_string(p) {
            if !s.is_empty() {
                return s;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{} never appeared", p.display());
}

fn normal_mode(stty: &str) -> bool {
    stty.split_whitespace().any(|w| w == "icanon") && stty.split_whitespace().any(|w| w == "echo")
}

#[test]
fn ctrl_c_in_the_live_view_stops_writes_and_restores_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let (out, stty) = (dir.path().join("run.json"), dir.path().join("stty.txt"));
    let bin = assert_cmd::cargo::cargo_bin("goodput");
    let cmd = format!(
        "{} bench -n 100000 -c 4 --sim-profile fixed --sim-ttft 20ms --sim-itl 10ms --output-tokens 20 --progress tui -o {}; stty -a > {}; sleep 60",
        bin.display(),
        out.display(),
        stty.display()
    );
    let t = Tmux::start(&cmd);
    let screen = t.wait_for(|s| s.contains("TTFT ms") && s.contains(" done"), Duration::from_secs(60));
    assert!(screen.contains("live (last 2,000 requests)"), "the full-screen view is drawn:\n{screen}");
    // The progress says how long is left, and the rate chart its scale.
    let screen = t.wait_for(|s| s.contains("ETA") && s.contains("top of the chart"), Duration::from_secs(30));
    assert!(screen.contains("last second"), "{screen}");
    std::thread::sleep(Duration::from_millis(800));
    t.tmux(&["send-keys", "-t", "t", "C-c"]);
    let stty_text = wait_file(&stty, Duration::from_secs(60));
    assert!(normal_mode(&stty_text), "terminal restored to canonical mode with echo:\n{stty_text}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["interrupted"], true);
    assert!(v["summary"]["requests"]["completed"].as_u64().unwrap() > 0);
    // The summary can be longer than the 32-line pane: its head may have scrolled.
    let screen = t.history();
    assert!(screen.contains("INTERRUPTED"), "the summary is printed on the normal screen:\n{screen}");
}

#[test]
fn a_run_that_ends_by_itself_or_fails_restores_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("goodput");
    // One that completes, one whose every request fails (nothing listens).
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    for (i, args) in [
        "bench -n 20 -c 4 --sim-profile fixed --sim-ttft 10ms --sim-itl 2ms --output-tokens 5 --progress tui"
            .to_string(),
        format!("bench -n 4 -c 2 --model m --url http://{dead} --progress tui"),
    ]
    .iter()
    .enumerate()
    {
        let stty = dir.path().join(format!("stty{i}.txt"));
        let cmd = format!("{} {args}; stty -a > {}; sleep 60", bin.display(), stty.display());
        let _t = Tmux::start(&cmd);
        let s = wait_file(&stty, Duration::from_secs(60));
        assert!(normal_mode(&s), "{args}: terminal restored:\n{s}");
    }
}

#[test]
fn serve_shows_its_engine_live_and_q_stops_it_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let stty = dir.path().join("stty.txt");
    let bin = assert_cmd::cargo::cargo_bin("goodput");
    let cmd = format!("{} serve --port 0 --progress tui; stty -a > {}; sleep 60", bin.display(), stty.display());
    let t = Tmux::start(&cmd);
    let screen = t.wait_for(|s| s.contains("KV cache") && s.contains("running 0"), Duration::from_secs(60));
    assert!(screen.contains("goodput serve · http://127.0.0.1:"), "the view is drawn:\n{screen}");
    t.tmux(&["send-keys", "-t", "t", "q"]);
    let s = wait_file(&stty, Duration::from_secs(60));
    assert!(normal_mode(&s), "terminal restored:\n{s}");
}
