//! The headers a request carries: the key's, the user's, checked so that
//! none smuggles a line break or takes over the HTTP layer's own, and the
//! secrets among them that are never written.

use crate::error::HeaderError;
use crate::protocol::{Api, KeyHeader};
use goodput_core::util::redact::{is_secret_header, Secrets};

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
    // A field value is visible characters, spaces and tabs (RFC 9110 §5.5):
    // a control character is refused by the HTTP stack too, later and as a
    // failure to reach the server.
    if value.chars().any(|c| c.is_control() && c != '\t') {
        return Err(HeaderError::Control { name: name_of() });
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
    if api_key.is_some_and(|k| k.chars().any(|c| c.is_control() && c != '\t')) {
        return Err(HeaderError::Key);
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

/// What a client must never write: its key, the values of the credential
/// headers it sends (`headers`), the values of the headers its user gave
/// (`given`, `--header`: a credential's whatever it is, another's where it
/// could be a secret, see [`Secrets::add_given_header`]), and the
/// credentials of its URL.
///
/// A value that names `{session}` or `{request}` is sent filled in (see
/// `Client::headers_for`), so what a server echoes is never the template:
/// each of its fixed parts is a secret too (`Bearer sk-{session}` masks
/// `sk-` wherever it stands, leaving the number after it, which is
/// goodput's own). A fixed part shorter than 4 bytes (a `-` between two
/// fields, `{session}` alone) carries no secret worth masking every
/// occurrence of: it is left out, and so is an auth scheme's word alone
/// (`Bearer {session}`). In a header that is not a credential's (`x-route:
/// llama-{session}`) a part needs 8 bytes: a short one is a word the
/// answers and the model's name hold too (`llama-` had masked the model
/// `Llama-3.1-8B` as `***3.1-8B`).
pub fn secrets_of(
    api_key: Option<&str>,
    headers: &[(String, String)],
    given: &[(String, String)],
    url: &str,
) -> Secrets {
    let mut s = Secrets::default();
    if let Some(k) = api_key {
        s.add(k);
        fixed_parts(k, CREDENTIAL_PART).for_each(|p| s.add(p));
    }
    for (name, value) in headers {
        s.add_header(name, value);
        fixed_parts(value, CREDENTIAL_PART).for_each(|p| s.add_header(name, p));
    }
    for (name, value) in given {
        s.add_given_header(name, value);
        let least = if is_secret_header(name) { CREDENTIAL_PART } else { OTHER_PART };
        fixed_parts(value, least).for_each(|p| s.add_header_value(p));
    }
    s.add_url(url);
    s
}

/// The fields a header's value may name, filled in for each request.
pub const TEMPLATE_FIELDS: [&str; 2] = ["{session}", "{request}"];

/// The least bytes of a templated value's fixed part that is masked: in a
/// credential (the key, `Authorization`, …), and in any other header.
const CREDENTIAL_PART: usize = 4;
const OTHER_PART: usize = 8;

/// The fixed parts of a templated value (one naming a [`TEMPLATE_FIELDS`]
/// field), trimmed, of `least` bytes or more, an auth scheme's word alone
/// aside; none for a value naming no field.
fn fixed_parts(value: &str, least: usize) -> impl Iterator<Item = &str> {
    let templated = TEMPLATE_FIELDS.iter().any(|f| value.contains(f));
    let scheme = |p: &str| ["bearer", "basic", "token", "bot"].iter().any(|w| p.eq_ignore_ascii_case(w));
    value
        .split(TEMPLATE_FIELDS[0])
        .flat_map(|p| p.split(TEMPLATE_FIELDS[1]))
        .map(str::trim)
        .filter(move |p| templated && p.len() >= least && !scheme(p))
}

/// The root URL without a trailing `/` or `/v1` on its path; its query
/// (`?key=…`, which some gateways take) is kept, to go on the end of every
/// path joined to it ([`join_url`]), and so is a fragment, for
/// [`Client::new`](super::Client::new) to refuse.
///
/// ```
/// use goodput_load::client::normalize_base;
/// assert_eq!(normalize_base("http://h:8000/v1/"), "http://h:8000");
/// assert_eq!(normalize_base("http://h:8000/v1?key=s"), "http://h:8000?key=s");
/// ```
pub fn normalize_base(url: &str) -> String {
    let (root, rest) = url.split_at(url.find(['?', '#']).unwrap_or(url.len()));
    let u = root.trim_end_matches('/');
    let u = u.strip_suffix("/v1").unwrap_or(u);
    // "?" alone asks nothing.
    let rest = rest.strip_prefix('?').filter(|r| r.is_empty() || r.starts_with('#')).unwrap_or(rest);
    format!("{u}{rest}")
}

/// `path` (from `/`) under `base`, a root from [`normalize_base`]: joined as
/// URLs are, before the base's query, which stays on the end.
///
/// ```
/// use goodput_load::client::join_url;
/// assert_eq!(join_url("http://h:8000?key=s", "/v1/models"), "http://h:8000/v1/models?key=s");
/// assert_eq!(join_url("http://h:8000/api", "/metrics"), "http://h:8000/api/metrics");
/// ```
pub fn join_url(base: &str, path: &str) -> String {
    let at = base.find(['?', '#']).unwrap_or(base.len());
    let (root, rest) = base.split_at(at);
    format!("{}{path}{rest}", root.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templated_values_mask_their_fixed_parts() {
        let given = [
            ("Authorization".to_owned(), "Bearer sk-live-{session}".to_owned()),
            ("X-Other".to_owned(), "tenant-SECRET-{request}-zone-9f3".to_owned()),
            ("X-Session".to_owned(), "{session}".to_owned()),
        ];
        let s = secrets_of(None, &[], &given, "");
        assert_eq!(s.mask("echo Bearer sk-live-12 tenant-SECRET-7-zone-9f3"), "echo ***12 ***7***");
        // A value that is only the session's number masks no digit.
        assert_eq!(s.mask("session 12"), "session 12");
        // A scheme's word alone is no secret; a short part of a header that
        // is not a credential's is a word the model's name may hold.
        let given = [
            ("Authorization".to_owned(), "Bearer {session}".to_owned()),
            ("x-route".to_owned(), "llama-{session}".to_owned()),
        ];
        let s = secrets_of(None, &[], &given, "");
        assert_eq!(s.mask("model Llama-3.1-8B, Bearer auth"), "model Llama-3.1-8B, Bearer auth");
    }

    #[test]
    fn paths_join_before_the_query() {
        let base = normalize_base("http://h:1/v1?key=S");
        assert_eq!(base, "http://h:1?key=S");
        assert_eq!(join_url(&base, "/v1/chat/completions"), "http://h:1/v1/chat/completions?key=S");
        assert_eq!(join_url(&base, "/metrics"), "http://h:1/metrics?key=S");
        assert_eq!(join_url(&normalize_base("http://h:1/gw/v1/"), "/health"), "http://h:1/gw/health");
        assert_eq!(join_url(&normalize_base("http://h:1/?"), "/health"), "http://h:1/health");
        assert_eq!(normalize_base("http://h:1/v1#x"), "http://h:1#x");
    }
}
