//! Credentials never reach what goodput writes (issue 22, defect 4): the
//! userinfo of `--url` (sent as `Authorization: Basic`, never recorded), and
//! a key or auth header that a server's error message echoes back, in the
//! result, the records, Markdown, CSV, HTML, stdout and stderr.

#[allow(dead_code)]
use crate::cmd;

use cmd::goodput;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;

/// A server that answers every request 401 with the OpenAI error naming the
/// credentials it was sent, as OpenAI's "Incorrect API key provided: sk-…"
/// does, and reports each request's Authorization header.
fn echoing_server() -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(mut sock) = sock else { return };
            let mut reader = BufReader::new(sock.try_clone().unwrap());
            let (mut auth, mut custom, mut len) = (String::new(), String::new(), 0usize);
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                let (name, value) = line.split_once(':').unwrap_or((line, ""));
                match name.to_ascii_lowercase().as_str() {
                    // Every Authorization line, so that one sent twice shows.
                    "authorization" if auth.is_empty() => auth = value.trim().to_owned(),
                    "authorization" => auth = format!("{auth} | {}", value.trim()),
                    "content-length" => len = value.trim().parse().unwrap_or(0),
                    "x-custom" => custom = value.trim().to_owned(),
                    _ => {}
                }
            }
            let mut body = vec![0; len];
            let _ = reader.read_exact(&mut body);
            let _ = tx.send(auth.clone());
            let msg = serde_json::json!({"error": {"message": format!("Incorrect API key provided: {auth} (custom: {custom})"),
                "type": "invalid_request_error"}})
            .to_string();
            let _ = write!(
                sock,
                "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n{msg}",
                msg.len()
            );
        }
    });
    (url, rx)
}

/// The Authorization the server got with the next request.
fn sent(auths: &mpsc::Receiver<String>) -> String {
    auths.recv_timeout(std::time::Duration::from_secs(10)).expect("the server got no request")
}

/// Every file and stream a run writes, as one text.
fn everything_written(args: &[&str]) -> String {
    everything_written_asking(args, &["--model", "m"])
}

/// [`everything_written`], with `model` for the `--model` flags (none: the
/// server's model list names it).
fn everything_written_asking(args: &[&str], model: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
    let out = goodput()
        .arg("bench")
        .args(args)
        .args(model)
        .args(["-n", "3", "-c", "1", "--no-metrics", "--api", "chat"])
        .args(["-o", &p("run.json"), "--records", &p("rec.jsonl"), "--markdown", &p("run.md")])
        .args(["--csv", &p("csv"), "--html", &p("run.html")])
        .output()
        .unwrap();
    let mut all = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    for entry in walk(dir.path()) {
        all += &std::fs::read_to_string(entry).unwrap_or_default();
    }
    all
}

fn walk(p: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(p).unwrap().flatten() {
        if e.path().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out
}

#[test]
fn url_credentials_are_sent_as_basic_auth_and_written_nowhere() {
    let (url, auths) = echoing_server();
    let with_creds = url.replace("http://", "http://alice:s3cret%21pw@");
    let all = everything_written(&["--url", &with_creds]);
    // The server got them, as curl would send them.
    let sent = sent(&auths);
    assert_eq!(sent, "Basic YWxpY2U6czNjcmV0IXB3", "alice:s3cret!pw");
    assert!(all.contains("Incorrect API key provided: ***"), "the server's message is kept, masked:\n{all}");
    assert!(all.contains(&url), "the URL is written without its userinfo");
    for secret in ["s3cret", "alice", "YWxpY2U6czNjcmV0IXB3"] {
        assert!(!all.contains(secret), "{secret} was written:\n{all}");
    }
}

#[test]
fn keys_and_auth_headers_echoed_by_a_server_are_masked() {
    let (url, auths) = echoing_server();
    let all = everything_written(&[
        "--url",
        &url,
        "--api-key",
        "sk-live-0123456789",
        "--header",
        "X-Gateway-Token: gw-secret-456",
    ]);
    assert_eq!(sent(&auths), "Bearer sk-live-0123456789");
    assert!(all.contains("Incorrect API key provided: ***"), "{all}");
    for secret in ["sk-live-0123456789", "gw-secret-456"] {
        assert!(!all.contains(secret), "{secret} was written:\n{all}");
    }
}

/// A `--header` value is never written, whatever the header's name (one
/// that names no credential had been echoed into every output).
#[test]
fn any_header_value_echoed_by_a_server_is_masked() {
    let (url, _auths) = echoing_server();
    let all = everything_written(&["--url", &url, "--header", "X-Custom: custom-value-789"]);
    assert!(all.contains("(custom: ***)"), "the server's message is kept, masked:\n{all}");
    assert!(!all.contains("custom-value-789"), "the value was written:\n{all}");
}

#[test]
fn an_explicit_authorization_wins_over_url_credentials_and_says_so() {
    let (url, auths) = echoing_server();
    let with_creds = url.replace("http://", "http://alice:s3cret@");
    let all = everything_written(&["--url", &with_creds, "--api-key", "sk-live-0123456789"]);
    assert_eq!(sent(&auths), "Bearer sk-live-0123456789");
    assert!(all.contains("the URL's credentials are not"), "{all}");
    assert!(!all.contains("s3cret") && !all.contains("alice"), "{all}");
}

#[test]
fn an_authorization_header_replaces_the_keys_and_says_so() {
    let (url, auths) = echoing_server();
    let all = everything_written(&[
        "--url",
        &url,
        "--api-key",
        "sk-live-0123456789",
        "--header",
        "Authorization: Bearer gw-token-abcdef",
    ]);
    // One header, the one given by name.
    assert_eq!(sent(&auths), "Bearer gw-token-abcdef");
    assert!(all.contains("the --header is sent, the key is not"), "{all}");
    assert!(!all.contains("gw-token-abcdef") && !all.contains("sk-live-0123456789"), "{all}");
}

/// A server that answers every request 401 with the message `say` makes of
/// its request line and its Authorization header, and reports both.
fn server_saying(say: fn(&str, &str) -> String) -> (String, mpsc::Receiver<(String, String)>) {
    server_answering(move |line, auth| {
        let msg = serde_json::json!({"error": {"message": say(line, auth)}}).to_string();
        ("401 Unauthorized", msg)
    })
}

/// A server that answers every request with the status and JSON body
/// `answer` makes of its request line and its Authorization header, and
/// reports both.
fn server_answering(
    answer: impl Fn(&str, &str) -> (&'static str, String) + Send + 'static,
) -> (String, mpsc::Receiver<(String, String)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(mut sock) = sock else { return };
            let mut reader = BufReader::new(sock.try_clone().unwrap());
            let (mut request_line, mut auth, mut len) = (String::new(), String::new(), 0usize);
            if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
                continue;
            }
            let request_line = request_line.trim_end().to_owned();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                let (name, value) = line.split_once(':').unwrap_or((line, ""));
                match name.to_ascii_lowercase().as_str() {
                    "authorization" => auth = value.trim().to_owned(),
                    "content-length" => len = value.trim().parse().unwrap_or(0),
                    _ => {}
                }
            }
            let mut body = vec![0; len];
            let _ = reader.read_exact(&mut body);
            let (status, msg) = answer(&request_line, &auth);
            let _ = tx.send((request_line, auth));
            let _ = write!(
                sock,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n{msg}",
                msg.len()
            );
        }
    });
    (url, rx)
}

/// A key in the query of `--url` (issue 29, defect 4): sent where the
/// gateway wants it, at the end of the API's path, and written nowhere, not
/// in the URL the result keeps nor where the server echoes it.
#[test]
fn a_key_in_the_url_query_is_sent_after_the_path_and_written_nowhere() {
    let (url, got) = server_saying(|line, _| format!("no such key in {line}"));
    let all = everything_written(&["--url", &format!("{url}/v1?key=qs-secret-77")]);
    let (line, _) = got.recv_timeout(std::time::Duration::from_secs(10)).expect("the server got no request");
    assert_eq!(line, "POST /v1/chat/completions?key=qs-secret-77 HTTP/1.1");
    assert!(all.contains("no such key in POST /v1/chat/completions?key=***"), "{all}");
    assert!(all.contains(&format!("{url}?key=***")), "the URL is written with its query masked:\n{all}");
    assert!(!all.contains("qs-secret-77"), "the key was written:\n{all}");
}

/// A server that echoes the key percent-encoded, or case-folded (issue 29,
/// defect 15): masked all the same.
#[test]
fn a_key_echoed_percent_encoded_or_case_folded_is_masked() {
    let (url, got) = server_saying(|_, auth| {
        format!("bad key {} ({})", auth.replace('-', "%2D"), auth.to_ascii_lowercase().replace("sk-", "SK-"))
    });
    let all = everything_written(&["--url", &url, "--api-key", "sk-live-0123456789"]);
    let (_, auth) = got.recv_timeout(std::time::Duration::from_secs(10)).expect("the server got no request");
    assert_eq!(auth, "Bearer sk-live-0123456789");
    assert!(all.contains("bad key *** (***)"), "{all}");
    assert!(!all.to_ascii_lowercase().contains("0123456789"), "the key was written:\n{all}");
}

/// A refused `--header` or key is named without its value (clap had
/// repeated the whole header, twice), and a key or value holding a control
/// character is refused as such, not as a server that cannot be reached.
#[test]
fn a_refused_header_or_key_is_not_repeated() {
    use cmd::GoodputCommand;
    for header in ["Authorization Bearer sk-SECRETVALUE123", "Bad Name: sk-SECRETVALUE123"] {
        let err = goodput().args(["bench", "-n", "1", "--header", header]).refusal();
        assert!(err.contains("invalid --header") && !err.contains("SECRETVALUE"), "{err}");
    }
    let err = goodput().args(["bench", "-n", "1", "--header", "X-A: sk-SECRETVALUE123\u{1}"]).refusal();
    assert!(err.contains("holds a control character") && !err.contains("SECRETVALUE"), "{err}");
    let err = goodput().args(["bench", "-n", "1", "--api-key", "sk-SECRETVALUE123\n"]).refusal();
    assert!(err.contains("the API key") && !err.contains("cannot reach") && !err.contains("SECRETVALUE"), "{err}");
}

/// A server that answers every chat request 200, whole (not streamed), with
/// an answer that repeats the Authorization header it was sent.
fn answering_with_the_key() -> String {
    let (url, _got) = server_answering(|_, auth| {
        let msg = serde_json::json!({
            "id": "x", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": format!("your key is {auth}")}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}
        });
        ("200 OK", msg.to_string())
    });
    url
}

/// A key the server repeats in its answer is masked in the text kept by
/// `--keep-text` (records, result, HTML), as everywhere else: it had been
/// written verbatim.
#[test]
fn a_key_echoed_in_an_answer_kept_by_keep_text_is_masked() {
    let url = answering_with_the_key();
    let all = everything_written(&["--url", &url, "--api-key", "sk-live-0123456789", "--no-stream", "--keep-text"]);
    assert!(all.contains("your key is ***"), "the answer is kept, the key masked:\n{all}");
    assert!(!all.contains("sk-live-0123456789"), "the key was written:\n{all}");
}

/// A `--header` value that names `{session}` or `{request}` is sent filled
/// in, and a server that echoes it had shown it whole (the template, not
/// the value sent, was the secret): the fixed parts are masked, the
/// request's number goodput filled in may stay.
#[test]
fn a_templated_header_echoed_by_a_server_is_masked() {
    let (url, auths) = echoing_server();
    let all = everything_written(&[
        "--url",
        &url,
        "--header",
        "Authorization: Bearer sk-live-SECRET-{session}",
        "--header",
        "X-Custom: tenant-SECRET-{request}",
    ]);
    assert_eq!(sent(&auths), "Bearer sk-live-SECRET-0");
    assert!(all.contains("Incorrect API key provided: ***0 (custom: ***0)"), "{all}");
    assert!(!all.contains("SECRET"), "a filled-in value was written:\n{all}");
}

/// A key the server echoes into what goodput keeps of its answers beside
/// an error's message (the model its list names, a `finish_reason`) is
/// masked there too: both had been written verbatim.
#[test]
fn a_key_echoed_into_the_model_name_or_the_finish_reason_is_masked() {
    let (url, _got) = server_answering(|line, auth| {
        let key = auth.split_whitespace().last().unwrap_or("").to_owned();
        if line.starts_with("GET") {
            return ("200 OK", serde_json::json!({"data": [{"id": format!("model-{key}")}]}).to_string());
        }
        let msg = serde_json::json!({
            "id": "x", "object": "chat.completion", "model": "m", "system_fingerprint": key,
            "choices": [{"index": 0, "finish_reason": key, "message": {"role": "assistant", "content": "hi"}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
        });
        ("200 OK", msg.to_string())
    });
    let all = everything_written_asking(&["--url", &url, "--api-key", "sk-MYSECRETKEY", "--no-stream"], &[]);
    assert!(all.contains("model-***"), "the model is named, the key masked:\n{all}");
    assert!(!all.contains("MYSECRETKEY"), "the key was written:\n{all}");
}

/// A model list redirected elsewhere (307) names the root it points at as
/// the `--url` to give: goodput follows no redirect (the key would go
/// along), and `--model NAME`, once suggested, had every request
/// redirected in turn.
#[test]
fn a_redirected_model_list_suggests_the_url_it_points_at() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(mut sock) = sock else { return };
            let mut reader = BufReader::new(sock.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 0 && !line.ends_with("\r\n\r\n") {}
            let _ = write!(
                sock,
                "HTTP/1.1 307 Temporary Redirect\r\nlocation: http://10.9.8.7:8000/v1/models\r\n\
                 content-length: 0\r\nconnection: close\r\n\r\n"
            );
        }
    });
    let out = goodput().args(["bench", "-n", "1", "--no-metrics", "--url", &url]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("pass --url http://10.9.8.7:8000 "), "{err}");
    assert!(!err.contains("pass --model"), "{err}");
}
