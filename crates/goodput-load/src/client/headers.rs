//! The headers a request carries: the key's, the user's, checked so that
//! none smuggles a line break or takes over the HTTP layer's own, and the
//! secrets among them that are never written.

use crate::error::HeaderError;
use crate::protocol::{Api, KeyHeader};
use goodput_core::redact::Secrets;

/// A header goodput may send as given: a token name (RFC 9110) and a value
/// without line breaks, which would smuggle a header or a request in.
pub fn check_header(name: &str, value: &str) -> Result<(), HeaderError> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    let name_of = || name.to_owned();
    if name.is_empty() || !name.chars().all(token) {
        return Err(HeaderError::Name { name: name_of() });
    }
    if value.chars().any(|c| c == '\r' || c == '\n' || c == '\0') {
        return Err(HeaderError::LineBreak { name: name_of() });
    }
    if OWNED_HEADERS.iter().any(|h| h.eq_ignore_ascii_case(name)) {
        return Err(HeaderError::Owned { name: name_of() });
    }
    Ok(())
}

/// Headers the HTTP layer writes for each request: one given as well would
/// be sent twice or contradict the framing.
const OWNED_HEADERS: &[&str] = &["Content-Length", "Host", "Transfer-Encoding", "Connection"];

/// The key's header that a `--header` of the same name replaces: the header
/// given wins, and is the one sent.
pub fn key_header_overridden(
    api_key: Option<&str>,
    key_header: KeyHeader,
    extra: &[(String, String)],
) -> Option<&'static str> {
    let name = key_header.name();
    (api_key.is_some() && extra.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))).then_some(name)
}

/// Every request's headers beyond the body's: the key in `key_header`,
/// those `api` requires, and `extra` as given (checked).
pub fn request_headers(
    api: Api,
    api_key: Option<&str>,
    key_header: KeyHeader,
    extra: &[(String, String)],
) -> Result<Vec<(String, String)>, HeaderError> {
    for (name, value) in extra {
        check_header(name, value)?;
    }
    // A header given by name replaces the one the key would make.
    let mut headers: Vec<(String, String)> = api
        .auth_headers(api_key, key_header)
        .into_iter()
        .filter(|(n, _)| !extra.iter().any(|(e, _)| e.eq_ignore_ascii_case(n)))
        .map(|(n, v)| (n.to_owned(), v))
        .collect();
    headers.extend(extra.iter().cloned());
    Ok(headers)
}

/// What a client must never write: its key, the values of its credential
/// headers, and the credentials of its URL.
pub fn secrets_of(api_key: Option<&str>, headers: &[(String, String)], url: &str) -> Secrets {
    let mut s = Secrets::default();
    if let Some(k) = api_key {
        s.add(k);
    }
    for (name, value) in headers {
        s.add_header(name, value);
    }
    s.add_url(url);
    s
}

/// The root URL without a trailing `/` or `/v1`.
pub fn normalize_base(url: &str) -> String {
    let u = url.trim_end_matches('/');
    u.strip_suffix("/v1").unwrap_or(u).to_owned()
}
