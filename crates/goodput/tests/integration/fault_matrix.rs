//! The fault matrix (issue 22): every hostile case the fixed profile plays
//! (`goodput serve --profile fixed --fault CASE:RATE`), run through the
//! real `goodput bench` over HTTP on 127.0.0.1. For each: the run ends, and
//! exits as a run with failures does (0); every request is recorded; the
//! failed ones are exactly those the server faulted, counted by the server
//! itself, and of the kind docs/hostile-servers.md says; every other
//! request succeeded with its whole output; no request outlived
//! `--timeout`; and the client's memory stayed bounded.

#[allow(dead_code)]
use crate::cmd;

use cmd::{bench_doc, goodput, read_json, records, serving, GoodputCommand};
use goodput_core::{FailureKind, Outcome, RequestRecord};
use goodput_sim::faults::{FaultConfig, Hostile};
use goodput_sim::fixed::{FixedProfile, FixedServer};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Requests in each run, and users sending them.
const N: u64 = 20;
const USERS: &str = "4";
/// Output tokens of each request, in chunks of two.
const OUTPUT: u64 = 8;
const CHUNKS: usize = 4;
/// The chunk the server's fault comes at: halfway, so two came before it.
const BEFORE_FAULT: usize = 2;
const TIMEOUT: Duration = Duration::from_secs(2);
const RATE: f64 = 0.3;
const SEED: u64 = 7;
/// The trickle's pace: about 1,500 bytes of a stream take 0.4 s.
const TRICKLE_GAP: Duration = Duration::from_micros(250);
/// The most the client may hold in memory (its high-water mark), with
/// `--max-buffer 4MiB`: a client that held an endless line would pass it
/// within a second.
const MAX_RSS_KIB: i64 = 256 * 1024;

/// What a case must come back as.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// Every faulted request fails as this kind, and nothing else fails.
    Fails(FailureKind),
    /// Every request succeeds, the faulted ones too.
    Succeeds,
    /// Every request succeeds; some may be sent again, each counted (the
    /// server closed the connection on them unread).
    SucceedsResent,
    /// Requests that went out on a connection the server then closed on
    /// them unread fail as `connect`, nothing else fails, and nothing is
    /// sent again (reqwest, where the server closes after every response).
    LostUnread,
    /// A faulted request on a kept-alive connection cannot be told from an
    /// idle close (the request may never have reached the server), so it is
    /// sent once more; on a fresh connection it fails as `connect`.
    FailsOrResent,
}

/// A finished run: what the client wrote and what the server counted.
struct Run {
    case: Hostile,
    /// `--transport`: goodput's own HTTP/1.1 client (`auto`) or `reqwest`.
    transport: &'static str,
    recs: Vec<RequestRecord>,
    doc: serde_json::Value,
    /// Requests that drew the case, by the server's own count.
    injected: u64,
    /// Generation requests the server received, resends included.
    arrivals: u64,
    elapsed: Duration,
    max_rss_kib: i64,
}

impl Run {
    fn failed(&self) -> Vec<&RequestRecord> {
        self.recs.iter().filter(|r| !r.outcome.is_success()).collect()
    }

    fn retried(&self) -> u64 {
        self.recs.iter().map(|r| u64::from(r.retries)).sum()
    }

    fn summary(&self, field: &str) -> u64 {
        self.doc["summary"]["requests"][field].as_u64().unwrap_or(0)
    }
}

/// Both of bench's transports: goodput's own HTTP/1.1 client (the default
/// for http://) and reqwest (https, proxies).
const TRANSPORTS: [&str; 2] = ["auto", "reqwest"];

/// Serves the fixed profile with `case` at [`RATE`] and runs `goodput bench`
/// against it on each transport, then checks what every case must hold and
/// what `expect` says.
fn run(case: Hostile, expect: Expect) -> Vec<Run> {
    TRANSPORTS.into_iter().map(|t| run_at(case, RATE, t, expect)).collect()
}

/// One run of `case` at `rate` over `transport`.
fn run_at(case: Hostile, rate: f64, transport: &'static str, expect: Expect) -> Run {
    let faults =
        FaultConfig { hostile: vec![(case, rate)], trickle_gap: TRICKLE_GAP, seed: SEED, ..Default::default() };
    let profile = FixedProfile {
        ttft: Duration::from_millis(20),
        itl: Duration::from_millis(5),
        tokens_per_chunk: 2,
        faults,
        ..Default::default()
    };
    let server = FixedServer::new(profile);
    let (_rt, url) = serving(server.clone());
    let dir = tempfile::tempdir().unwrap();
    let (out, rec, err) = (dir.path().join("run.json"), dir.path().join("rec.jsonl"), dir.path().join("stderr"));
    let started = Instant::now();
    let (status, max_rss_kib) = bench(&url, transport, &out, &rec, &err);
    let elapsed = started.elapsed();
    let stderr = std::fs::read_to_string(&err).unwrap_or_default();
    assert_eq!(status, 0, "{case} ({transport}): bench exited {status}: {stderr}");
    let r = Run {
        case,
        transport,
        recs: records(&rec),
        doc: read_json(&out),
        injected: server.counters.hostile(case),
        arrivals: server.counters.requests.load(Ordering::Relaxed),
        elapsed,
        max_rss_kib,
    };
    // What the case produced (shown with --nocapture).
    let mut kinds = std::collections::BTreeMap::<String, u64>::new();
    for x in r.failed() {
        *kinds.entry(x.outcome.failure_kind().map_or("-".into(), |k| k.to_string())).or_default() += 1;
    }
    eprintln!(
        "{case} ({transport}): {} faulted of {} arrivals · failed {kinds:?} · retried {} · {:.1} s · peak RSS {} MiB",
        r.injected,
        r.arrivals,
        r.retried(),
        r.elapsed.as_secs_f64(),
        r.max_rss_kib / 1024
    );
    check(&r, expect);
    r
}

/// `goodput bench` against `url`, waited for with its resource use: the exit
/// status and the child's peak resident memory (KiB).
// The child is reaped by wait4, which gives its resource use; std's `wait`
// would not.
#[allow(clippy::zombie_processes)]
fn bench(
    url: &str,
    transport: &str,
    out: &std::path::Path,
    rec: &std::path::Path,
    err: &std::path::Path,
) -> (i32, i64) {
    let timeout = format!("{}s", TIMEOUT.as_secs());
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("goodput"))
        .env_remove("OPENAI_API_KEY")
        .args(["bench", "-q", "--url", url, "-n", &N.to_string(), "-c", USERS, "--timeout", &timeout])
        .args(["--output-tokens", &OUTPUT.to_string(), "--input-tokens", "16", "--max-buffer", "4MiB"])
        .args(["--no-metrics", "--seed", "1", "--transport", transport])
        .arg("-o")
        .arg(out)
        .arg("--records")
        .arg(rec)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(err).unwrap())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    // A run that hangs is killed and fails the test, rather than hanging it:
    // a bound far past anything the run should take (N × timeout).
    let deadline = Instant::now() + TIMEOUT * N as u32;
    loop {
        let mut status = 0;
        // SAFETY: rusage is plain data the kernel fills.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: the child is ours and not yet waited for (std's `Child`
        // is never waited on; it is dropped below without a wait).
        let done = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if done == pid {
            drop(child);
            let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { -1 };
            return (code, usage.ru_maxrss);
        }
        assert!(done == 0, "wait4: {}", std::io::Error::last_os_error());
        if Instant::now() > deadline {
            // SAFETY: the child is not yet reaped, so the pid is still its.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("bench ran past {:?} (N × --timeout): it hung", TIMEOUT * N as u32);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// What every case must hold, and what `expect` says of this one.
fn check(r: &Run, expect: Expect) {
    let case = format!("{} ({})", r.case, r.transport);
    // Every request is recorded, once.
    let mut ids: Vec<u64> = r.recs.iter().map(|x| x.id).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..N).collect::<Vec<_>>(), "{case}: the records are not the {N} requests");
    assert!(r.injected > 0, "{case}: the seed drew no fault: the case was not tested");
    // The summary says what the records say.
    let failed = r.failed();
    assert_eq!(r.summary("sent"), N, "{case}");
    assert_eq!(r.summary("failed"), failed.len() as u64, "{case}");
    assert_eq!(r.summary("retried"), r.retried(), "{case}: every resend is counted");
    // The server read each request once, and each resend once more (but
    // for a request it closed the connection on unread).
    let unread = match expect {
        Expect::SucceedsResent => r.retried(),
        Expect::LostUnread => failed.len() as u64,
        _ => 0,
    };
    assert_eq!(r.arrivals, N + r.retried() - unread, "{case}: requests the server read");
    // Every other request came whole.
    for x in r.recs.iter().filter(|x| x.outcome.is_success()) {
        assert_eq!((x.output_tokens, x.chunks.len()), (OUTPUT, CHUNKS), "{case}: request {} came short", x.id);
    }
    // Nothing outlived --timeout (a generous margin for a busy machine: the
    // timeout is a cut, not a measure).
    for x in &r.recs {
        let took = x.end.saturating_sub(x.sent);
        assert!(took < TIMEOUT * 3 / 2, "{case}: request {} took {took:?}, past --timeout {TIMEOUT:?}", x.id);
    }
    assert!(r.elapsed < TIMEOUT * N as u32, "{case}: the run took {:?}", r.elapsed);
    assert!(r.max_rss_kib < MAX_RSS_KIB, "{case}: the client peaked at {} MiB", r.max_rss_kib / 1024);
    let kinds: Vec<String> = failed.iter().map(|x| describe(x)).collect();
    match expect {
        Expect::Fails(kind) => {
            assert_eq!(failed.len() as u64, r.injected, "{case}: failures against faults injected: {kinds:?}");
            for x in &failed {
                assert_eq!(x.outcome.failure_kind(), Some(kind), "{case}: {}", describe(x));
            }
            assert_eq!(r.retried(), 0, "{case}: nothing is sent again");
        }
        Expect::Succeeds => {
            assert!(failed.is_empty(), "{case}: {kinds:?}");
            assert_eq!(r.retried(), 0, "{case}: nothing is sent again");
        }
        Expect::SucceedsResent => {
            assert!(failed.is_empty(), "{case}: {kinds:?}");
            assert!(r.retried() <= r.injected, "{case}: {} resent for {} closes", r.retried(), r.injected);
        }
        Expect::LostUnread => {
            for x in &failed {
                assert_eq!(x.outcome.failure_kind(), Some(FailureKind::Connect), "{case}: {}", describe(x));
            }
            assert_eq!(r.retried(), 0, "{case}: nothing is sent again");
        }
        Expect::FailsOrResent => {
            // Each faulted arrival ended its request, or had it sent again.
            assert_eq!(failed.len() as u64 + r.retried(), r.injected, "{case}: {kinds:?}");
            for x in &failed {
                assert_eq!(x.outcome.failure_kind(), Some(FailureKind::Connect), "{case}: {}", describe(x));
            }
        }
    }
}

fn describe(x: &RequestRecord) -> String {
    match &x.outcome {
        Outcome::Failed { kind, message } => format!("#{} {kind}: {message}", x.id),
        o => format!("#{} {o:?}", x.id),
    }
}

fn message(x: &RequestRecord) -> &str {
    match &x.outcome {
        Outcome::Failed { message, .. } => message,
        _ => "",
    }
}

#[test]
fn malformed_json_in_a_data_line() {
    for r in run(Hostile::MalformedJson, Expect::Fails(FailureKind::InvalidResponse)) {
        // The chunks before the bad line are kept.
        assert!(r.failed().iter().all(|x| x.chunks.len() == BEFORE_FAULT), "{}", r.transport);
    }
}

#[test]
fn non_utf8_bytes_in_a_token() {
    // Read with U+FFFD in place of the bytes: the tokens and their times stand.
    run(Hostile::NonUtf8, Expect::Succeeds);
}

#[test]
fn an_endless_line() {
    for r in run(Hostile::EndlessLine, Expect::Fails(FailureKind::InvalidResponse)) {
        for x in r.failed() {
            assert!(message(x).contains("--max-buffer"), "{}: {}", r.transport, describe(x));
        }
    }
}

#[test]
fn an_oversized_header_block() {
    let runs = run(Hostile::OversizedHeader, Expect::Fails(FailureKind::InvalidResponse));
    // goodput's client names its own limit (hyper says it in its words).
    for x in runs[0].failed() {
        assert!(message(x).contains("64 KiB"), "{}", describe(x));
    }
}

#[test]
fn a_reset_before_the_response() {
    let runs = run(Hostile::ResetBefore, Expect::FailsOrResent);
    // reqwest sends nothing again: every reset is a failure.
    assert_eq!(runs[1].retried(), 0);
}

#[test]
fn a_reset_during_the_response() {
    for r in run(Hostile::ResetDuring, Expect::Fails(FailureKind::TruncatedStream)) {
        assert!(r.failed().iter().all(|x| x.chunks.len() <= BEFORE_FAULT), "{}", r.transport);
    }
}

#[test]
fn accepted_and_never_answered() {
    for r in run(Hostile::NeverAnswer, Expect::Fails(FailureKind::Timeout)) {
        // Cut at the timeout, never before it.
        for x in r.failed() {
            assert!(x.end.saturating_sub(x.sent) >= TIMEOUT, "{}: {}", r.transport, describe(x));
        }
    }
}

#[test]
fn a_one_byte_at_a_time_trickle() {
    for r in run(Hostile::Trickle, Expect::Succeeds) {
        // Causal: a trickled response cannot come faster than its bytes
        // were written (well over 1,000 of them, TRICKLE_GAP apart), and at
        // least the faulted requests took that long.
        let floor = TRICKLE_GAP * 1000;
        let slow = r.recs.iter().filter(|x| x.end.saturating_sub(x.sent) >= floor).count() as u64;
        assert!(slow >= r.injected, "{}: {slow} took {floor:?} or more, {} trickled", r.transport, r.injected);
    }
}

#[test]
fn broken_chunked_encoding() {
    for r in run(Hostile::BrokenChunked, Expect::Fails(FailureKind::TruncatedStream)) {
        assert!(r.failed().iter().all(|x| x.chunks.len() == BEFORE_FAULT), "{}", r.transport);
    }
}

#[test]
fn data_after_done() {
    // Not read: the answer ends at [DONE] (the check counts each chunk).
    run(Hostile::DataAfterDone, Expect::Succeeds);
}

#[test]
fn a_usage_only_stream() {
    for r in run(Hostile::UsageOnly, Expect::Fails(FailureKind::EmptyOutput)) {
        assert!(r.failed().iter().all(|x| x.chunks.is_empty()), "{}", r.transport);
    }
}

#[test]
fn an_error_event_mid_stream() {
    for r in run(Hostile::EventError, Expect::Fails(FailureKind::MidStreamError)) {
        for x in r.failed() {
            assert_eq!(x.chunks.len(), BEFORE_FAULT, "{}", r.transport);
            assert!(message(x).contains("the engine failed mid-stream"), "{}: {}", r.transport, describe(x));
        }
    }
}

#[test]
fn status_429_with_retry_after() {
    for r in run(Hostile::TooManyRequests, Expect::Fails(FailureKind::RateLimited)) {
        for x in r.failed() {
            let got = (x.http_status, x.retry_after.as_deref());
            assert_eq!(got, (Some(429), Some("1")), "{}: {}", r.transport, describe(x));
        }
        assert_eq!(r.doc["summary"]["requests"]["errors_by_kind"]["rate_limited"], r.injected);
    }
}

#[test]
fn status_503_with_retry_after() {
    for r in run(Hostile::Unavailable, Expect::Fails(FailureKind::HttpStatus)) {
        for x in r.failed() {
            let got = (x.http_status, x.retry_after.as_deref());
            assert_eq!(got, (Some(503), Some("1")), "{}: {}", r.transport, describe(x));
        }
    }
}

#[test]
fn an_html_page_with_status_200() {
    for r in run(Hostile::Html200, Expect::Fails(FailureKind::InvalidResponse)) {
        for x in r.failed() {
            assert!(message(x).contains("text/html"), "{}: {}", r.transport, describe(x));
        }
    }
}

#[test]
fn keep_alive_advertised_and_closed_after_every_response() {
    // Every response, as llama-server does; the server closes once the
    // next request has come, so the race is met every time.
    let r = run_at(Hostile::CloseAfterResponse, 1.0, "auto", Expect::SucceedsResent);
    assert!(r.retried() > 0, "the race was never met: the resend went untested");
    // reqwest (hyper) sends again only a request it had not yet written:
    // the same race fails there, as what it is (docs/hostile-servers.md).
    run_at(Hostile::CloseAfterResponse, 1.0, "reqwest", Expect::LostUnread);
}

/// The flags themselves, through `goodput serve`: a case plays on the
/// binary's server and its /metrics counts it, and a bad --fault is refused
/// with the reason before anything is served.
#[test]
fn goodput_serve_plays_a_fault_flag_and_refuses_bad_ones() {
    use crate::cmd::Kill;
    use std::io::{BufRead, Read, Write};
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("goodput"))
        .args(["serve", "--port", "0", "--profile", "fixed", "--ttft", "5ms", "--itl", "1ms", "-q"])
        .args(["--fault", "429:1", "--fault-seed", "3"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let _guard = Kill(child);
    let mut lines = std::io::BufReader::new(stderr).lines().map_while(Result::ok);
    let mut said = String::new();
    let url = lines
        .find_map(|l| {
            said.push_str(&l);
            l.strip_prefix("listening on ").and_then(|r| r.split_whitespace().next()).map(str::to_owned)
        })
        .expect("serve prints where it listens");
    assert!(said.contains("--fault 429:1"), "serve names the faults it plays: {said}");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    // Every request refused: the run's exit says no request succeeded.
    let o = goodput()
        .args(["bench", "-q", "--url", &url, "-n", "4", "-c", "2", "--no-metrics"])
        .arg("-o")
        .arg(&out)
        .output();
    assert_eq!(o.unwrap().status.code(), Some(1));
    assert_eq!(read_json(&out)["summary"]["requests"]["errors_by_kind"]["rate_limited"], 4);
    let mut sock = std::net::TcpStream::connect(url.trim_start_matches("http://")).unwrap();
    sock.write_all(b"GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").unwrap();
    let mut metrics = String::new();
    sock.read_to_string(&mut metrics).unwrap();
    assert!(metrics.contains("goodput_sim_faults_injected_total{kind=\"429\"} 4\n"), "{metrics}");

    let refused = |args: &[&str]| goodput().args(["serve", "--port", "0", "-q"]).args(args).refusal();
    let err = refused(&["--profile", "fixed", "--fault", "slow-loris:0.1"]);
    assert!(err.contains("unknown fault case 'slow-loris'") && err.contains("close-after-response"), "{err}");
    let err = refused(&["--profile", "fixed", "--fault", "trickle:1.5"]);
    assert!(err.contains("between 0 and 1"), "{err}");
    let err = refused(&["--profile", "fixed", "--fault", "trickle:0.6", "--fault-error-rate", "0.5"]);
    assert!(err.contains("add up to 1.1"), "{err}");
    let err = refused(&["--fault", "trickle:0.1"]);
    assert!(err.contains("--profile fixed"), "the engine profile plays none: {err}");
    // The other profile's flags are refused, not dropped in silence.
    let err = refused(&["--profile", "engine", "--ttft", "10ms"]);
    assert!(err.contains("--ttft sets the fixed profile's timing") && err.contains("add --profile fixed"), "{err}");
    let err = refused(&["--profile", "fixed", "--gpu", "h200"]);
    assert!(err.contains("--gpu describes the engine profile") && err.contains("--profile engine"), "{err}");
    // Typed with the default's value, a flag is given all the same.
    let err = refused(&["--profile", "fixed", "--model", "llama-3.1-8b", "--tp", "1"]);
    assert!(err.contains("--model describes the engine profile"), "{err}");
    let err = refused(&["--profile", "engine", "--itl", "20ms"]);
    assert!(err.contains("--itl sets the fixed profile's timing"), "{err}");
}

/// Embeddings and rerank requests play the faults a whole JSON answer can
/// (429 here) and are left alone by a stream's (malformed JSON), which is
/// then not counted as injected (it had been counted while every request
/// was served as usual).
#[test]
fn pooled_requests_play_the_faults_they_can_and_count_only_those() {
    for (case, failed, injected) in [(Hostile::TooManyRequests, 3, 3), (Hostile::MalformedJson, 0, 0)] {
        let faults = FaultConfig { hostile: vec![(case, 1.0)], seed: SEED, ..Default::default() };
        let profile = FixedProfile { ttft: Duration::from_millis(2), faults, ..Default::default() };
        let server = FixedServer::new(profile);
        let (_rt, url) = serving(server.clone());
        let v = bench_doc(&url, &["--model", "m", "--api", "embeddings", "-n", "3", "-c", "1", "--input-tokens", "8"]);
        assert_eq!(v["summary"]["requests"]["failed"].as_u64(), Some(failed), "{case}: {}", v["summary"]["requests"]);
        assert_eq!(server.counters.hostile(case), injected, "{case}");
    }
}
