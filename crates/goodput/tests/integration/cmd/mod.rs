//! Running the goodput binary from tests: a command with no API key from the
//! environment, the JSON documents it writes, and a fixed-timing server for
//! it to load.

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

/// Fast embedded-server timings so a run takes well under a second (not
/// every test file that shares this module runs one).
#[allow(dead_code)]
pub const FAST: &[&str] = &[
    "--sim-profile",
    "fixed",
    "--sim-ttft",
    "20ms",
    "--sim-itl",
    "2ms",
    "--output-tokens",
    "8",
    "--input-tokens",
    "16",
];

/// [`FAST`] without its `--input-tokens`, for runs whose prompts come from
/// a `--dataset` (which refuses it).
#[allow(dead_code)]
pub const FAST_DATASET: &[&str] =
    &["--sim-profile", "fixed", "--sim-ttft", "20ms", "--sim-itl", "2ms", "--output-tokens", "8"];

pub fn goodput() -> Command {
    let mut c = Command::cargo_bin("goodput").unwrap();
    c.env_remove("OPENAI_API_KEY");
    c
}

/// The goodput binary as a child process of the test's own (one the test
/// signals, stops or reads as it runs): no API key from the environment,
/// standard output dropped, standard error piped.
#[allow(dead_code)]
pub fn goodput_child() -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("goodput"));
    c.env_remove("OPENAI_API_KEY").stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped());
    c
}

/// A child process killed and reaped when the guard goes.
pub struct Kill(pub std::process::Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `goodput serve` with `args` on a loopback port: its URL, what it said
/// up to the line that gives it (the banner), and the guard that stops it.
#[allow(dead_code)]
pub fn serve<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> (String, String, Kill) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("goodput"))
        .args(["serve", "--port", "0", "-q"])
        .args(args)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let guard = Kill(child);
    let mut said = String::new();
    let url = std::io::BufReader::new(stderr)
        .lines()
        .map_while(Result::ok)
        .find_map(|l| {
            said.push_str(&l);
            said.push('\n');
            l.strip_prefix("listening on ").and_then(|r| r.split_whitespace().next()).map(str::to_owned)
        })
        .unwrap_or_else(|| panic!("goodput serve did not start: {said}"));
    (url, said, guard)
}

/// What tests ask of a goodput command beyond assert_cmd's own.
pub trait GoodputCommand {
    /// Writes the result document to `out` and the records to `rec`.
    fn writing(&mut self, out: &Path, rec: &Path) -> &mut Self;
    /// Runs a command that must fail, and gives what it said on stderr.
    fn refusal(&mut self) -> String;
}

impl GoodputCommand for Command {
    fn writing(&mut self, out: &Path, rec: &Path) -> &mut Self {
        self.arg("-o").arg(out).arg("--records").arg(rec)
    }

    fn refusal(&mut self) -> String {
        let o = self.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(!o.status.success(), "the command should have failed; it said: {err}");
        err
    }
}

pub fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// The result document of `bench -q --url URL --no-metrics ARGS`, whether
/// the run passed or failed (a run whose requests fail still writes one).
#[allow(dead_code)]
pub fn bench_doc(url: &str, args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    let o = goodput()
        .args(["bench", "-q", "--url", url, "--no-metrics"])
        .args(args)
        .arg("-o")
        .arg(&out)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    assert!(out.exists(), "no result written: {}", String::from_utf8_lossy(&o.stderr));
    read_json(&out)
}

/// `goodput estimate -q ARGS -o DIR/NAME`, which must succeed, and the
/// document it wrote.
pub fn estimate_doc(dir: &Path, name: &str, args: &[&str]) -> Value {
    let out = dir.join(name);
    goodput().args(["estimate", "-q"]).args(args).arg("-o").arg(&out).assert().success();
    read_json(&out)
}

/// The per-request records a run wrote with `--records`.
/// The records of a records file, JSON Lines or Parquet.
pub fn records(p: &Path) -> Vec<goodput_core::RequestRecord> {
    goodput_report::read::records::read_records(p).unwrap()
}

/// A fixed-timing server with `profile` on 127.0.0.1:0, served by the runtime
/// returned with its URL (the server lives as long as the runtime).
#[allow(dead_code)]
pub fn fixed_server(profile: goodput_sim::fixed::FixedProfile) -> (tokio::runtime::Runtime, String) {
    serving(goodput_sim::fixed::FixedServer::new(profile))
}

/// [`fixed_server`] for a server already made (one that logs its writes, say).
#[allow(dead_code)]
pub fn serving(server: std::sync::Arc<goodput_sim::fixed::FixedServer>) -> (tokio::runtime::Runtime, String) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let url = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(goodput_sim::fixed::serve(listener, server, std::future::pending()));
        url
    });
    (rt, url)
}

/// Reads one HTTP request off `r` (its head, and a body of the length its
/// head gives): its request line.
pub fn read_request(r: &mut impl std::io::BufRead) -> String {
    let mut request = String::new();
    let _ = r.read_line(&mut request);
    let mut length = 0;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let _ = r.read_exact(&mut vec![0; length]);
    request
}
