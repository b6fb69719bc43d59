//! Keeping secrets out of what goodput writes: the credentials of a URL
//! (`http://user:pass@host`) and the values of its query (`?key=…`), and
//! every secret value goodput was given (an API key, an auth header's
//! value), wherever a server's text echoes them ("Incorrect API key
//! provided: sk-…") into a record, a report or stderr: as given, in any
//! case, percent-encoded, and JSON-escaped.

use base64::prelude::{Engine as _, BASE64_STANDARD};
use std::borrow::Cow;

/// What a secret is written as.
pub const MASK: &str = "***";

/// `url` with its userinfo (`user:pass@`), each value of its query and
/// its fragment replaced by [`MASK`]; any other text unchanged. Every URL in a longer
/// text is done with [`Secrets::redact`].
///
/// ```
/// use goodput_core::util::redact::redact_url;
/// assert_eq!(redact_url("http://user:pass@host:8000/v1"), "http://***@host:8000/v1");
/// assert_eq!(redact_url("http://host:8000/v1?key=sk-1&v=2"), "http://host:8000/v1?key=***&v=***");
/// assert_eq!(redact_url("http://host:8000"), "http://host:8000");
/// assert_eq!(redact_url("cannot reach http://h:1?key=sk-1: refused"), "cannot reach http://h:1?key=***: refused");
/// ```
pub fn redact_url(url: &str) -> String {
    redact_urls(url).into_owned()
}

/// `url` without its userinfo (`http://user:pass@host` → `http://host`).
pub fn strip_userinfo(url: &str) -> String {
    match userinfo(url) {
        Some((start, end)) => format!("{}{}", &url[..start], &url[end + 1..]),
        None => url.to_owned(),
    }
}

/// The value of an `Authorization: Basic` header for the credentials in
/// `url`'s userinfo (decoded from `%XX`), as browsers and curl send them.
///
/// ```
/// assert_eq!(goodput_core::util::redact::basic_auth("http://aladdin:open%20sesame@h"), Some("Basic YWxhZGRpbjpvcGVuIHNlc2FtZQ==".into()));
/// assert_eq!(goodput_core::util::redact::basic_auth("http://h:80"), None);
/// ```
pub fn basic_auth(url: &str) -> Option<String> {
    let (start, end) = userinfo(url)?;
    let info = &url[start..end];
    let (user, pass) = info.split_once(':').unwrap_or((info, ""));
    let plain = format!("{}:{}", percent_decode(user), percent_decode(pass));
    Some(format!("Basic {}", BASE64_STANDARD.encode(plain)))
}

/// The byte range of `url`'s userinfo, without its `@`.
fn userinfo(url: &str) -> Option<(usize, usize)> {
    let start = url.find("://")? + 3;
    let tail = &url[start..];
    let authority = &tail[..tail.find(['/', '?', '#']).unwrap_or(tail.len())];
    authority.rfind('@').map(|at| (start, start + at))
}

/// Every URL (`scheme://…`) in `text` with its userinfo, the values of its
/// query and its fragment masked: a query is where some servers take their key
/// (`?key=…`), and signed URLs their signature.
fn redact_urls(text: &str) -> Cow<'_, str> {
    if !text.contains("://") || !text.contains(['@', '?', '#']) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        // The URL ends at a space, a quote or a bracket; its authority at
        // the path or the query too.
        let mut url_end = tail.find(|c: char| "\"'<> \t\r\n)]".contains(c)).unwrap_or(tail.len());
        // Nor is the punctuation a sentence puts after it ("cannot reach
        // http://h?key=…: error"): the ':' had been masked with the key.
        while url_end > 0 && tail[..url_end].ends_with([':', ',', '.', ';']) {
            url_end -= 1;
        }
        let end = tail[..url_end].find(['/', '?', '#']).unwrap_or(url_end);
        match tail[..end].rfind('@') {
            Some(at) => {
                out.push_str(MASK);
                out.push_str(&tail[at..end]);
            }
            None => out.push_str(&tail[..end]),
        }
        // The path, then the query and the fragment, masked.
        let rest_of_url = &tail[end..url_end];
        let (path, rest_of_url) = rest_of_url.split_at(rest_of_url.find(['?', '#']).unwrap_or(rest_of_url.len()));
        out.push_str(path);
        let (query, fragment) = rest_of_url.split_at(rest_of_url.find('#').unwrap_or(rest_of_url.len()));
        if let Some(query) = query.strip_prefix('?') {
            out.push('?');
            mask_query(query, &mut out);
        }
        if fragment.len() > 1 {
            out.push('#');
            out.push_str(MASK);
        } else {
            out.push_str(fragment);
        }
        rest = &tail[url_end..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// A query (`a=1&b`) with each value masked, its names kept: `a=***&***`.
fn mask_query(query: &str, out: &mut String) {
    for (i, pair) in query.split('&').enumerate() {
        if i > 0 {
            out.push('&');
        }
        match pair.split_once('=') {
            Some((name, "")) => {
                out.push_str(name);
                out.push('=');
            }
            Some((name, _)) => {
                out.push_str(name);
                out.push('=');
                out.push_str(MASK);
            }
            None if pair.is_empty() => {}
            None => out.push_str(MASK),
        }
    }
}

/// The process's secrets, set once by the command that was given them.
static GLOBAL: std::sync::OnceLock<Secrets> = std::sync::OnceLock::new();

/// Makes `s` the secrets [`scrub`] masks (the first call wins).
pub fn set_global(s: Secrets) {
    let _ = GLOBAL.set(s);
}

/// `text` with the process's secrets ([`set_global`]) and every URL's
/// userinfo masked: for whatever goes to stderr or a file and may hold a
/// server's words.
pub fn scrub(text: &str) -> Cow<'_, str> {
    match GLOBAL.get() {
        Some(s) => s.redact(text),
        None => redact_urls(text),
    }
}

/// `text` with the process's secret values ([`set_global`]) masked, and
/// nothing else: for text kept as the run's data (`--keep-text`), where a
/// URL's query in a prompt is the prompt's own, but a key the server echoed
/// in its answer is still the key (it had been written verbatim).
pub fn scrub_secrets(text: &str) -> Cow<'_, str> {
    match GLOBAL.get() {
        Some(s) => s.mask_values(Cow::Borrowed(text)),
        None => Cow::Borrowed(text),
    }
}

/// The secret values of a run, to be masked wherever they show up.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    /// Each value, and whether it is masked only as a whole token (where no
    /// letter or digit touches it), not inside a longer word.
    values: Vec<(String, bool)>,
}

/// Shorter values are masked only as whole words (not inside a longer
/// one): `xyz` in "key provided: xyz", not in "xyzzy".
const SHORTEST: usize = 4;

impl Secrets {
    /// Adds a secret value, and each of its words (an `Authorization:
    /// Bearer sk-…` value also masks `sk-…` alone). One of under
    /// [`SHORTEST`] bytes is masked where it stands as a word of its own.
    pub fn add(&mut self, value: &str) {
        let value = value.trim();
        let words =
            value.split_whitespace().filter(|w| !w.eq_ignore_ascii_case("bearer") && !w.eq_ignore_ascii_case("basic"));
        for v in std::iter::once(value).chain(words) {
            self.insert(v, false);
        }
    }

    /// Adds `v`, masked only as a whole token with `whole`; a value added
    /// both ways is masked wherever it stands.
    fn insert(&mut self, v: &str, whole: bool) {
        if v.is_empty() {
            return;
        }
        match self.values.iter_mut().find(|(s, _)| s == v) {
            Some((_, w)) => *w &= whole,
            None => self.values.push((v.to_owned(), whole)),
        }
        // Longest first, so a value that holds another is masked whole.
        self.values.sort_by_key(|(v, _)| std::cmp::Reverse(v.len()));
    }

    /// `text` with these values masked, and nothing else.
    pub fn mask<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.mask_values(Cow::Borrowed(text))
    }

    /// The secrets of a header: its value when its name says it carries
    /// credentials (authorization, a key, a token, a cookie, a secret, a
    /// password).
    pub fn add_header(&mut self, name: &str, value: &str) {
        if is_secret_header(name) {
            self.add_header_value(value);
        }
    }

    /// The value of a header given by the user (`--header`): a credential's
    /// (by its name, see [`is_secret_header`]) as [`Secrets::add_header_value`]
    /// masks it, wherever it stands; any other's where it could be a
    /// secret (see [`Secrets::add_plain_header_value`]). A server may echo
    /// either in an error (`X-Custom: …` in a 401's body).
    pub fn add_given_header(&mut self, name: &str, value: &str) {
        if is_secret_header(name) {
            self.add_header_value(value);
        } else {
            self.add_plain_header_value(value);
        }
    }

    /// The value of a header whose name says nothing of a credential
    /// (`X-Mode: connection`), and each of its words: masked only where it
    /// could be a secret (not a plain word, see [`plain_word`]), and only
    /// as a whole token, never inside a longer word. Masking every value
    /// had masked ordinary words of every message: `X-Mode: connection`
    /// turned "the connection broke … Connection reset by peer" into "the
    /// *** broke … *** *** by peer".
    pub fn add_plain_header_value(&mut self, value: &str) {
        let value = value.trim();
        for v in std::iter::once(value).chain(value.split_whitespace()) {
            if !plain_word(v) {
                self.insert(v, true);
            }
        }
    }

    /// The value of a credential's header (`Authorization`, a key, a
    /// token…), masked wherever it stands, and each of its words.
    pub fn add_header_value(&mut self, value: &str) {
        self.add(value);
        // Basic credentials: what they encode is as secret as the encoding.
        let basic = value.trim().strip_prefix("Basic ").or_else(|| value.trim().strip_prefix("basic "));
        if let Some(plain) = basic.and_then(|b| BASE64_STANDARD.decode(b.trim()).ok()) {
            let plain = String::from_utf8_lossy(&plain);
            let (user, pass) = plain.split_once(':').unwrap_or((&plain, ""));
            for v in [&*plain, user, pass] {
                self.add(v);
            }
        }
    }

    /// The credentials in a URL's userinfo, and the values of its query.
    pub fn add_url(&mut self, url: &str) {
        if let Some((start, end)) = userinfo(url) {
            let info = &url[start..end];
            let (user, pass) = info.split_once(':').unwrap_or((info, ""));
            for v in [info, user, pass] {
                self.add(v);
                self.add(&percent_decode(v));
            }
        }
        // In a URL every query value is masked; alone, in a server's text,
        // those that may be a secret: a credential's name, or a value as
        // long as a key (not `json` or `true`, which would mask ordinary
        // words).
        let before_fragment = &url[..url.find('#').unwrap_or(url.len())];
        if let Some((_, query)) = before_fragment.split_once('?') {
            for pair in query.split('&') {
                let (name, value) = pair.split_once('=').unwrap_or(("", pair));
                if is_secret_header(name) || name.to_ascii_lowercase().contains("sig") || value.len() >= 12 {
                    self.add(value);
                    self.add(&percent_decode(value));
                }
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `text` with every secret value, and every URL's userinfo and query
    /// values, masked. A secret is found in any case (a server that echoes
    /// `bearer SK-…` folded) and with any of its bytes percent-encoded (one
    /// that echoes `sk%2D…`, as a URL or a form carries it) or escaped as a
    /// JSON string escapes it (`sk\/…`, `\u0026`, `\"`), in a body goodput
    /// shows without decoding.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.mask_values(redact_urls(text))
    }

    /// `text` with every secret value masked (as [`Secrets::redact`] finds
    /// them), and nothing else.
    fn mask_values<'a>(&self, mut out: Cow<'a, str>) -> Cow<'a, str> {
        for (v, whole) in &self.values {
            if let Some(masked) = mask_loose(&out, v, *whole || v.len() < SHORTEST) {
                out = Cow::Owned(masked);
            }
        }
        out
    }
}

/// `text` with every occurrence of `secret` masked, where each of its bytes
/// may stand in any ASCII case, as `%XX`, or as a JSON string's escape
/// (`\/`, `\"`, `\\`, `\uXXXX` for any character): a server that echoes
/// the key inside a JSON body goodput does not decode (PHP writes `/` as
/// `\/`) had shown it. `None` when there is none. With `whole_word`, only
/// where no letter or digit touches it.
fn mask_loose(text: &str, secret: &str, whole_word: bool) -> Option<String> {
    let (t, s) = (text.as_bytes(), secret.as_bytes());
    let first = *s.first()?;
    let mut out: Option<String> = None;
    let (mut copied, mut i) = (0, 0);
    while i < t.len() {
        // A cheap test first: most positions start neither the secret nor an escape.
        let starts = t[i].eq_ignore_ascii_case(&first) || t[i] == b'%' || t[i] == b'\\';
        let apart = |end: usize| {
            !whole_word
                || (i.checked_sub(1).is_none_or(|b| !t[b].is_ascii_alphanumeric())
                    && t.get(end).is_none_or(|c| !c.is_ascii_alphanumeric()))
        };
        match starts.then(|| loose_match(t, i, s)).flatten() {
            Some(end) if text.is_char_boundary(i) && text.is_char_boundary(end) && apart(end) => {
                let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
                o.push_str(&text[copied..i]);
                o.push_str(MASK);
                copied = end;
                i = end;
            }
            _ => i += 1,
        }
    }
    let mut o = out?;
    o.push_str(&text[copied..]);
    Some(o)
}

/// Where `secret` ends in `t` when it starts at `at` (see [`mask_loose`]).
/// A backslash is read as a JSON escape first, and as itself where the
/// escape does not give the secret's next bytes.
fn loose_match(t: &[u8], at: usize, secret: &[u8]) -> Option<usize> {
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let (mut i, mut j) = (at, 0);
    while j < secret.len() {
        let (got, want) = (*t.get(i)?, secret[j]);
        if got == b'\\' {
            if let Some((buf, n, len)) = json_escape(&t[i..]) {
                let wanted = secret.get(j..j + n);
                if wanted.is_some_and(|w| w.eq_ignore_ascii_case(&buf[..n])) {
                    (i, j) = (i + len, j + n);
                    continue;
                }
            }
        }
        if got.eq_ignore_ascii_case(&want) {
            (i, j) = (i + 1, j + 1);
            continue;
        }
        let escaped = match (got, t.get(i + 1).copied().and_then(hex), t.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => h * 16 + l,
            _ => return None,
        };
        if !escaped.eq_ignore_ascii_case(&want) {
            return None;
        }
        (i, j) = (i + 3, j + 1);
    }
    Some(i)
}

/// The JSON string escape `t` starts with (`\/`, `\"`, `\\`, `\n`, …,
/// `\uXXXX`, a surrogate pair as two): the UTF-8 bytes it stands for (the
/// first `n` of the array), `n`, and how many bytes of `t` it takes. `None`
/// for a backslash that starts none.
fn json_escape(t: &[u8]) -> Option<([u8; 4], usize, usize)> {
    let one = |b: u8| Some(([b, 0, 0, 0], 1, 2));
    match *t.get(1)? {
        c @ (b'/' | b'"' | b'\\') => one(c),
        b'b' => one(0x08),
        b'f' => one(0x0c),
        b'n' => one(b'\n'),
        b'r' => one(b'\r'),
        b't' => one(b'\t'),
        b'u' => {
            let unit = |at: usize| -> Option<u32> {
                let digits = std::str::from_utf8(t.get(at..at + 4)?).ok()?;
                u32::from_str_radix(digits, 16).ok().filter(|_| digits.bytes().all(|d| d.is_ascii_hexdigit()))
            };
            let high = unit(2)?;
            let (code, len) = match high {
                0xD800..=0xDBFF => {
                    let low = (t.get(6..8)? == b"\\u").then(|| unit(8)).flatten()?;
                    if !(0xDC00..=0xDFFF).contains(&low) {
                        return None;
                    }
                    (0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00), 12)
                }
                _ => (high, 6),
            };
            let mut buf = [0; 4];
            let n = char::from_u32(code)?.encode_utf8(&mut buf).len();
            Some((buf, n, len))
        }
        _ => None,
    }
}

/// Longer runs of letters may be a key (`XkQpLmZrTbWaHsNdFgJc`), an
/// app password (`abcd-efgh-ijkl-mnop`) or a passphrase
/// (`correct-horse-battery`).
const LONGEST_WORD: usize = 16;

/// Whether `v` is a plain word, or words, a message may hold, and no
/// secret: letters alone (lower case, upper case, or capitalized) in parts
/// joined by `-`, `_`, `.` or spaces (`connection`, `keep-alive`,
/// `us-east`), and shorter than [`LONGEST_WORD`]. A digit, another symbol,
/// or a part's case mixed (`tOkEn`) could be a key's.
fn plain_word(v: &str) -> bool {
    let part = |p: &str| {
        let mut chars = p.chars();
        let Some(first) = chars.next() else { return true };
        let rest = chars.as_str();
        first.is_ascii_alphabetic()
            && (rest.chars().all(|c| c.is_ascii_lowercase()) || rest.chars().all(|c| c.is_ascii_uppercase()))
    };
    v.len() < LONGEST_WORD && v.chars().any(|c| c.is_ascii_alphabetic()) && v.split(['-', '_', '.', ' ']).all(part)
}

/// Whether a header's name says its value is a credential.
pub fn is_secret_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    // `pass` covers passwd and passphrase; `sig` a signature, as a URL's
    // query names it; `otp` and `pin` one-time and fixed codes.
    ["auth", "key", "token", "secret", "cookie", "pass", "pwd", "credential", "sig", "hmac", "otp", "pin"]
        .iter()
        .any(|w| n.contains(w))
}

/// `%XX` escapes decoded, as a URL's userinfo is sent.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (b[i], b.get(i + 1).copied().and_then(hex), b.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_userinfo_wherever_they_are() {
        assert_eq!(redact_url("https://tok@api.example/v1/chat"), "https://***@api.example/v1/chat");
        assert_eq!(redact_url("http://u:p%40ss@h:1/metrics?x=a@b"), "http://***@h:1/metrics?x=***");
        let s = Secrets::default();
        assert_eq!(
            s.redact("error sending request for url (http://alice:hunter22@10.0.0.1:8000/v1/completions)"),
            "error sending request for url (http://***@10.0.0.1:8000/v1/completions)"
        );
        assert_eq!(s.redact("mail me at a@b.c, no url"), "mail me at a@b.c, no url");
        assert!(matches!(s.redact("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn given_secrets_are_masked_in_server_text() {
        let mut s = Secrets::default();
        s.add("sk-live-0123456789");
        s.add_header("Authorization", "Bearer tok-abcdef");
        s.add_header("X-Team", "infra");
        s.add_url("http://alice:p%40ss@host:8000");
        let server = "Incorrect API key provided: sk-live-0123456789. Token tok-abcdef; user alice, p@ss; team infra";
        assert_eq!(s.redact(server), "Incorrect API key provided: ***. Token ***; user ***, ***; team infra");
        // A client given only the Basic header (the URL's credentials moved
        // there) masks what it encodes too.
        let mut basic = Secrets::default();
        basic.add_header("Authorization", &basic_auth("http://bobby:hunter22@h").unwrap());
        assert_eq!(basic.redact("no user bobby with password hunter22"), "no user *** with password ***");
        // A key too short to mask inside words (it would mask ordinary
        // text) is masked where it stands alone, as a server echoes it.
        let mut short = Secrets::default();
        short.add("Bearer ab");
        assert_eq!(short.redact("ab cd; Bearer ab; tab abc"), "*** cd; ***; tab abc");
        let mut key = Secrets::default();
        key.add("xyz");
        assert_eq!(key.redact("Incorrect API key provided: xyz. (xyzzy)"), "Incorrect API key provided: ***. (xyzzy)");
    }

    #[test]
    fn secrets_are_masked_percent_encoded_and_in_any_case() {
        let mut s = Secrets::default();
        s.add_header("Authorization", "Bearer sk-live-0123456789");
        let echoed =
            "key sk%2Dlive%2d0123456789 rejected; header bearer SK-LIVE-0123456789; url ?k=sk-live%2D0123456789";
        let masked = s.redact(echoed);
        assert!(!masked.to_ascii_lowercase().contains("0123456789"), "{masked}");
        assert_eq!(masked, "key *** rejected; header ***; url ?k=***");
        // Text around a multi-byte character is kept whole.
        assert_eq!(s.redact("é sk-live-0123456789 ü"), "é *** ü");
        assert!(matches!(s.redact("nothing here %2"), Cow::Borrowed(_)));
    }

    #[test]
    fn query_values_are_masked_in_urls_and_as_secrets() {
        let mut s = Secrets::default();
        s.add_url("http://h:1/v1?key=qs-secret-77&v=2#frag");
        assert_eq!(
            s.redact("POST http://h:1/v1/chat/completions?key=qs-secret-77 failed: bad key qs-secret-77"),
            "POST http://h:1/v1/chat/completions?key=*** failed: bad key ***"
        );
        // Alone, short values that name nothing secret are ordinary words.
        s.add_url("http://h:1/v1?format=json&api_key=k9x2");
        assert_eq!(s.redact("not JSON: key k9x2"), "not JSON: key ***");
        assert_eq!(redact_url("https://h/p?a=1&b&c=#x"), "https://h/p?a=***&***&c=#***");
        assert_eq!(redact_url("https://h/p#k=s"), "https://h/p#***");
        assert_eq!(redact_url("see (http://h/p?sig=abc) now"), "see (http://h/p?sig=***) now");
    }

    #[test]
    fn secrets_are_masked_json_escaped() {
        let mut s = Secrets::default();
        s.add("tok-SECRET/abc+def==");
        // PHP's json_encode writes '/' as '\/'.
        assert_eq!(
            s.redact(r#"{"detail":"Invalid token tok-SECRET\/abc+def=="}"#),
            r#"{"detail":"Invalid token ***"}"#
        );
        // Any character as \uXXXX, in either case of hex digit.
        assert_eq!(s.redact(r"bad tok\u002DSECRET\u002fabc\u002Bdef\u003d="), "bad ***");
        // A key holding a quote and a backslash, each escaped.
        let mut q = Secrets::default();
        q.add(r#"k"ey\0123456"#);
        assert_eq!(q.redact(r#"{"msg":"bad k\"ey\\0123456"}"#), r#"{"msg":"bad ***"}"#);
        // The same key echoed raw (not escaped) is still found.
        assert_eq!(q.redact(r#"bad k"ey\0123456 here"#), "bad *** here");
        // Go's encoding/json escapes '&', '<' and '>'.
        let mut g = Secrets::default();
        g.add("sk-a&b<c>d-0123");
        assert_eq!(g.redact(r"bad token sk-a\u0026b\u003cc\u003ed-0123"), "bad token ***");
        // A character outside the BMP, as a surrogate pair, and one inside it.
        let mut u = Secrets::default();
        u.add("key-é😀-0123");
        assert_eq!(u.redact(r"bad key-\u00e9\ud83d\ude00-0123!"), "bad ***!");
        // Escapes that give other bytes, or none, leave the text alone.
        assert!(matches!(s.redact(r"tok-SECRET\u0030abc+def== \x \ud83d"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_plain_header_s_words_stay_and_its_secret_looking_values_go() {
        let mut s = Secrets::default();
        s.add_given_header("X-Scen", "reset");
        s.add_given_header("X-Mode", "connection");
        s.add_given_header("X-Region", "us-east");
        let message = "the connection broke while reading (os error: Connection reset by peer) in us-east";
        assert_eq!(s.redact(message), message);
        // A value that could be a secret is masked where it stands alone,
        // in any case, and never inside a longer word.
        s.add_given_header("X-Tenant", "team-7f3k");
        s.add_given_header("X-Route", "canary blue-Zq8");
        s.add_given_header("X-Trace", "aBcDeFgH");
        assert_eq!(
            s.redact("tenant team-7f3k (TEAM-7F3K) denied; not team-7f3kx; route canary blue-Zq8 ; aBcDeFgH"),
            "tenant *** (***) denied; not team-7f3kx; route *** ; ***"
        );
        assert_eq!(s.redact("blue-Zq8 alone, xblue-Zq8"), "*** alone, xblue-Zq8");
        // A long run of letters may be a key.
        s.add_given_header("X-Long", "abcdefghijklmnopqrstuvwxyz");
        assert_eq!(s.redact("key abcdefghijklmnopqrstuvwxyz"), "key ***");
        // So may an app password or a passphrase of letters alone.
        s.add_given_header("X-App", "abcd-efgh-ijkl-mnop");
        s.add_given_header("X-Phrase", "correct-horse-battery");
        assert_eq!(s.redact("bad abcd-efgh-ijkl-mnop or correct-horse-battery"), "bad *** or ***");
        // A header whose name says it holds a pass, a signature or a code
        // is a credential's: its value is masked, a plain word too.
        for name in ["X-Passphrase", "X-Passwd", "X-Pwd", "X-Signature", "X-Otp", "X-Pin", "X-Hmac"] {
            let mut s = Secrets::default();
            s.add_given_header(name, "tulip");
            assert_eq!(s.redact("invalid tulip"), "invalid ***", "{name}");
        }
    }

    #[test]
    fn a_credential_header_s_value_is_masked_whatever_it_looks_like() {
        // A credential's value is masked as before: a plain word, and
        // inside longer words.
        let mut s = Secrets::default();
        s.add_given_header("X-Api-Key", "connection");
        s.add_given_header("Cookie", "session=reset");
        s.add_given_header("X-Gateway-Token", "abcd");
        assert_eq!(
            s.redact("the connection broke; Connection reset; disconnection; session=reset; abcd"),
            "the *** broke; *** reset; dis***; ***; ***"
        );
        // A value given both ways is masked as the credential it is.
        let mut both = Secrets::default();
        both.add_given_header("X-Other", "word-9x");
        both.add_given_header("Authorization", "word-9x");
        assert_eq!(both.redact("aword-9x"), "a***");
        assert!(plain_word("Connection") && plain_word("keep-alive") && plain_word("USA"));
        assert!(!plain_word("tOkEn") && !plain_word("v2") && !plain_word("a/b") && !plain_word("42"));
    }
}
