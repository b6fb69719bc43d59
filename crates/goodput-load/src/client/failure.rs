//! What a failed exchange was, in the record's terms: a status, a foreign
//! body, a connection the client could not make, or one it ran out of
//! resources for.

use crate::protocol::error_message;
use goodput_core::{FailureKind, Outcome};

/// How much of an error response's body is read for its message.
pub(super) const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// The failure of a non-2xx response, with the server's message, or for a
/// redirect the `Location` it pointed to (never followed: see `Client::new`).
pub(super) fn status_failure(status: u16, text: &str, location: Option<&str>) -> Outcome {
    // "503 Service Unavailable" where the code has a name.
    let named = reqwest::StatusCode::from_u16(status).map_or_else(|_| status.to_string(), |s| s.to_string());
    if (300..400).contains(&status) {
        let to = match location {
            Some(l) => format!("to {}", l.chars().take(500).collect::<String>()),
            None => "without a Location".to_owned(),
        };
        // 301, 302 and 303 are followed as GETs (what clients do); 307 and
        // 308 keep the POST and its body.
        let method = match status {
            301..=303 => ", and turn the POST into a GET",
            _ => "",
        };
        return Outcome::Failed {
            kind: FailureKind::HttpStatus,
            message: format!(
                "HTTP {named}: a redirect {to}, not followed (following it would send the key and the headers to \
                 wherever it points{method}): give --url the address that answers"
            ),
        };
    }
    let detail = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .map(|v| error_message(v.get("error").unwrap_or(&v)))
        .unwrap_or_else(|| text.to_owned());
    let detail: String = detail.chars().take(500).collect();
    // A rate limit is the gateway's or the server's policy, not its failure.
    let kind = if status == 429 { FailureKind::RateLimited } else { FailureKind::HttpStatus };
    Outcome::Failed { kind, message: format!("HTTP {named}: {detail}") }
}

/// A 2xx response whose content type is neither an event stream, NDJSON
/// nor JSON (a proxy's HTML page, say) is not the API's answer.
pub(super) fn foreign_content(content_type: Option<&str>) -> Option<Outcome> {
    let ct = content_type?.to_ascii_lowercase();
    let ours = ["text/event-stream", "application/json", "application/x-ndjson", "application/jsonl"];
    if ours.iter().any(|t| ct.starts_with(t)) || ct.starts_with("text/plain") {
        return None;
    }
    Some(Outcome::Failed {
        kind: FailureKind::InvalidResponse,
        message: format!("the response is {ct}, not an event stream or JSON: is --url the API, not a page or a proxy?"),
    })
}

/// A 2xx that says it has no body (204 No Content, 205 Reset Content)
/// where the API's answer was due.
pub(super) fn empty_status(status: u16) -> Option<Outcome> {
    let named = match status {
        204 => "204 No Content",
        205 => "205 Reset Content",
        _ => return None,
    };
    Some(Outcome::Failed {
        kind: FailureKind::InvalidResponse,
        message: format!("HTTP {named}: an empty answer, where the API's answer was due"),
    })
}

/// A body the server compressed (`Content-Encoding: gzip`, `br`, …):
/// goodput asks for none (it sends no `Accept-Encoding`), and does not
/// decode one, as reading it as text would make it a cut stream.
pub(super) fn compressed(encoding: Option<&str>) -> Option<Outcome> {
    let enc = encoding.map(str::trim).filter(|e| !e.is_empty() && !e.eq_ignore_ascii_case("identity"))?;
    let enc: String = enc.chars().take(100).collect();
    Some(Outcome::Failed {
        kind: FailureKind::InvalidResponse,
        message: format!(
            "the server compressed its answer (Content-Encoding: {enc}), which goodput does not ask for (it sends \
             no Accept-Encoding) and does not decode: turn compression off on the server or the proxy before it"
        ),
    })
}

/// A connect error that is the client's own shortage (open files, memory,
/// local ports), named as such.
pub(super) fn connect_or_resource(message: String) -> Outcome {
    let message = match tls_hint(&message) {
        Some(hint) => format!("{message}: {hint}"),
        None => message,
    };
    let m = message.to_ascii_lowercase();
    let ours = [
        "too many open files",
        "os error 24",
        "os error 23",
        "cannot allocate memory",
        "os error 12",
        // EADDRNOTAVAIL: the client's local ports ran out.
        "cannot assign requested address",
        "address not available",
        "os error 99",
        "no buffer space",
        "os error 105",
    ];
    let kind = if ours.iter().any(|o| m.contains(o)) { FailureKind::ClientResource } else { FailureKind::Connect };
    Outcome::Failed { kind, message }
}

/// hyper could not parse the response head (too large, malformed).
pub(super) fn is_parse_error(e: &reqwest::Error) -> bool {
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = src {
        if let Some(h) = err.downcast_ref::<hyper::Error>() {
            return h.is_parse();
        }
        src = err.source();
    }
    false
}

/// What a TLS handshake's failure means when the other side spoke plain
/// HTTP: rustls reads "HTTP/1.1 400" as a record of a content type it does
/// not know.
///
/// ```
/// use goodput_load::client::tls_hint;
/// let m = "error sending request: received corrupt message of type InvalidContentType";
/// assert!(tls_hint(m).unwrap().contains("use http://"));
/// assert_eq!(tls_hint("connection refused"), None);
/// ```
pub fn tls_hint(message: &str) -> Option<&'static str> {
    (message.contains("InvalidContentType") || message.contains("corrupt message"))
        .then_some("the server answered in plain HTTP, not TLS: use http://, not https://, in --url")
}

/// An error with its causes, `a: b: c`, as people need to see it.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        src = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clients_own_shortages_are_not_the_servers() {
        let kind = |m: &str| connect_or_resource(m.into()).failure_kind();
        assert_eq!(kind("error connecting: Too many open files (os error 24)"), Some(FailureKind::ClientResource));
        assert_eq!(kind("Cannot assign requested address (os error 99)"), Some(FailureKind::ClientResource));
        assert_eq!(kind("Connection refused (os error 111)"), Some(FailureKind::Connect));
    }

    #[test]
    fn a_redirect_names_what_following_it_would_do_by_its_status() {
        let said = |status| match status_failure(status, "", Some("http://elsewhere/v1")) {
            Outcome::Failed { message, .. } => message,
            o => format!("{o:?}"),
        };
        for status in [301, 302, 303] {
            let m = said(status);
            assert!(m.contains("to http://elsewhere/v1, not followed") && m.contains("POST into a GET"), "{m}");
        }
        for status in [307, 308] {
            let m = said(status);
            assert!(m.contains("not followed (following it would send the key") && !m.contains("GET"), "{m}");
        }
    }
}
