//! What the command line says, read as a user reads it: help that states
//! each command's own defaults, a mistyped address answered with the fix,
//! and a watch or a rule that says what is wrong once and plainly.

use crate::cmd::{goodput, serve, GoodputCommand};

/// `sweep --help` states a sweep's own defaults: 60 s points after a 10 s
/// warm-up (it had shown bench's -n and `--warmup [default: 0]`).
#[test]
fn sweep_help_states_the_sweep_s_own_defaults() {
    let help = |cmd: &str| {
        let o = goodput().args([cmd, "--help"]).output().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let sweep = help("sweep");
    let flag = |text: &str, name: &str| {
        let at = text.find(name).unwrap_or_else(|| panic!("{name} missing: {text}"));
        text[at..].split("\n\n").next().unwrap().to_string()
    };
    let n = flag(&sweep, "-n, --requests");
    assert!(n.contains("each point runs 60s after a 10s warm-up") && !n.contains("10 a user"), "{n}");
    let warmup = flag(&sweep, "--warmup <WARMUP>");
    assert!(warmup.contains("10s with neither -n nor --duration") && !warmup.contains("[default: 0]"), "{warmup}");
    assert!(flag(&sweep, "--duration <DURATION>").contains("60s"), "{sweep}");
    let bench = help("bench");
    assert!(flag(&bench, "-n, --requests").contains("10 a user"), "{bench}");
    assert!(bench.contains("[default: 0]"), "{bench}");
}

/// `bench URL` says to pass it as --url; `monitor --url URL` is `monitor
/// URL` (clap had told it to write `-- --url`), and both at once are refused.
#[test]
fn a_server_address_is_taken_where_each_command_takes_it() {
    for cmd in ["bench", "sweep"] {
        let err = goodput().args([cmd, "http://127.0.0.1:9"]).refusal();
        assert!(err.contains("pass the server's address as --url http://127.0.0.1:9"), "{err}");
        let err = goodput().args([cmd, "localhost:9"]).refusal();
        assert!(err.contains("as --url http://localhost:9"), "{err}");
    }
    let (url, _, _server) = serve(&["--profile", "fixed"]);
    let o = goodput().args(["monitor", "--url", &url, "--once"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && !stderr.contains("-- --url"), "{stderr}");
    let err = goodput().args(["monitor", &url, "--url", &url, "--once"]).refusal();
    assert!(err.contains("cannot be used with"), "{err}");
}

/// `--url localhost:8000` is a host and port with no scheme, as
/// `127.0.0.1:8000` is: it had been read as the scheme `localhost`.
#[test]
fn a_host_and_port_without_a_scheme_is_told_the_scheme_to_add() {
    let err = goodput().args(["bench", "-q", "-n", "1", "--url", "localhost:9"]).refusal();
    assert!(err.contains("invalid --url 'localhost:9': no scheme (expected e.g. http://localhost:9)"), "{err}");
    // A query (which may hold a key) is no part of the address suggested.
    let err = goodput().args(["bench", "-q", "-n", "1", "--url", "localhost:9?key=abc"]).refusal();
    assert!(err.contains("no scheme (expected e.g. http://localhost:9)"), "{err}");
    assert!(err.contains("'localhost:9?key=***'") && !err.contains("abc"), "the query's values are masked: {err}");
}

/// A server whose metrics hold nothing monitor shows is told so on its
/// line (it had printed only `[    2.0s] server`).
#[test]
fn monitor_says_when_the_metrics_hold_no_known_signal() {
    let (url, _, _server) = serve(&["--profile", "fixed"]);
    let o = goodput().args(["monitor", &url, "--once"]).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("no known signal in its metrics (goodput reads vLLM's vllm:*"), "{text}");
}

/// A bad --fail-if rule is named once: `error: --fail-if: --fail-if rule …`.
#[test]
fn a_bad_fail_if_rule_is_named_once() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("a.json");
    goodput().args(["estimate", "-q", "-n", "4", "-c", "1", "-o"]).arg(&run).assert().success();
    let err = goodput().arg("compare").arg(&run).arg(&run).args(["--fail-if", "ttft.p95>+10%"]).refusal();
    assert!(err.contains("--fail-if rule 'ttft.p95>+10%'"), "{err}");
    assert_eq!(err.matches("--fail-if").count(), 1, "{err}");
}
