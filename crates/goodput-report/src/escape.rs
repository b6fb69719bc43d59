//! Escaping for every output format. Any string read from a result document
//! (model names, URLs, error messages, config values) is untrusted: a saved
//! file can be edited, and servers choose their own error text.

use std::fmt::Write;

/// Text safe inside HTML element content and double- or single-quoted
/// attribute values. Bidirectional embeddings, overrides and isolates
/// (U+202A–U+202E, U+2066–U+2069) are shown as `\u{202e}` and the like, as
/// [`terminal`] shows them: a label or a server's model name holding one
/// could otherwise make the page read differently than the text it shows.
///
/// ```
/// use goodput_report::escape::html;
/// assert_eq!(html("<script>alert('x')</script>&"), "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;");
/// assert_eq!(html("a\u{202e}b"), "a\\u{202e}b");
/// assert_eq!(html("a\x1b]0;t\x07"), "a\\u{1b}]0;t\\u{7}");
/// ```
pub fn html(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            // Other control characters too (an ESC in a label had reached
            // the page's title raw); line feeds and tabs stay, for text
            // shown whole in a <pre>.
            c if hidden(c, &['\n', '\t']) => push_code(&mut o, c),
            c => o.push(c),
        }
    }
    o
}

/// A bidirectional embedding, override or isolate: a character that can
/// make text read differently than it is stored.
fn is_bidi_control(c: char) -> bool {
    ('\u{202a}'..='\u{202e}').contains(&c) || ('\u{2066}'..='\u{2069}').contains(&c)
}

/// Whether `c` is shown as its code rather than written: a control
/// character other than those `kept`, or a bidi control.
fn hidden(c: char, kept: &[char]) -> bool {
    is_bidi_control(c) || (c.is_control() && !kept.contains(&c))
}

/// `c` as its code, `\u{1b}`, on the end of `o`.
fn push_code(o: &mut String, c: char) {
    let _ = write!(o, "\\u{{{:x}}}", c as u32);
}

/// `s` with each character [`hidden`] but those `kept` shown as its code.
fn shown_codes(s: &str, kept: &[char]) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        if hidden(c, kept) {
            push_code(&mut o, c);
        } else {
            o.push(c);
        }
    }
    o
}

/// JSON fit for an inline `<script type="application/json">` block: no `<`,
/// `>` or `&` survives, so neither `</script>` nor `<!--` can end or bend the
/// block; `JSON.parse` reads the `\u003c` escapes back as the original text.
/// U+2028/2029 are escaped too, so the text is also a valid JS literal.
///
/// ```
/// let s = goodput_report::escape::script_json(r#"{"m":"</script><!--"}"#);
/// assert_eq!(s, r#"{"m":"\u003c/script\u003e\u003c!--"}"#);
/// ```
pub fn script_json(json: &str) -> String {
    let mut o = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => o.push_str("\\u003c"),
            '>' => o.push_str("\\u003e"),
            '&' => o.push_str("\\u0026"),
            '\u{2028}' => o.push_str("\\u2028"),
            '\u{2029}' => o.push_str("\\u2029"),
            c => o.push(c),
        }
    }
    o
}

/// Untrusted text inside Markdown (a table cell or a paragraph): HTML is
/// neutralised as entities, Markdown syntax (`|`, backticks, emphasis, links)
/// is backslash-escaped, and line breaks become spaces so a table row stays
/// one row.
///
/// ```
/// use goodput_report::escape::markdown;
/// assert_eq!(markdown("a|b `c` <b>"), r"a\|b \`c\` &lt;b&gt;");
/// ```
pub fn markdown(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            // `$` too: GitHub reads `$…$` as maths.
            '\\' | '`' | '|' | '*' | '_' | '[' | ']' | '(' | ')' | '#' | '!' | '~' | '{' | '}' | '$' => {
                o.push('\\');
                o.push(c);
            }
            '\r' | '\n' | '\t' => o.push(' '),
            c if hidden(c, &[]) => push_code(&mut o, c),
            c => o.push(c),
        }
    }
    o
}

/// Untrusted text for a terminal: control characters (ANSI escape sequences,
/// carriage returns that overwrite a line, bells) are shown as `\u{1b}` and
/// the like instead of acting on the terminal.
///
/// ```
/// assert_eq!(goodput_report::escape::terminal("ok\x1b[31m\r"), "ok\\u{1b}[31m\\u{d}");
/// ```
pub fn terminal(s: &str) -> String {
    shown_codes(s, &[])
}

/// [`terminal`] for text of several lines: line feeds stay (a message that
/// lists its causes one a line reads as it was written), and every other
/// control character is shown, so none moves the cursor back over a line.
///
/// ```
/// assert_eq!(goodput_report::escape::terminal_lines("a:\n  b\r\x1b"), "a:\n  b\\u{d}\\u{1b}");
/// ```
pub fn terminal_lines(s: &str) -> String {
    s.split('\n').map(terminal).collect::<Vec<_>>().join("\n")
}

/// One CSV field holding untrusted text (RFC 4180): quoted when it holds a
/// comma, quote or line break, quotes doubled; and a leading apostrophe when
/// it starts with a character a spreadsheet would read as a formula
/// (`=`, `+`, `-`, `@`, tab, CR), so `=cmd|…` stays text.
///
/// ```
/// use goodput_report::escape::csv_text;
/// assert_eq!(csv_text("plain"), "plain");
/// assert_eq!(csv_text("a,\"b\""), "\"a,\"\"b\"\"\"");
/// assert_eq!(csv_text("=1+1"), "'=1+1");
/// assert_eq!(csv_text("a\x1b[2Jb"), "a\\u{1b}[2Jb");
/// ```
pub fn csv_text(s: &str) -> String {
    // Control characters but a quoted field's line breaks and tabs, and
    // bidi controls, shown as `\u{1b}` (a label's ESC]0;… had retitled the
    // terminal that `cat` the file).
    const KEPT: [char; 3] = ['\n', '\r', '\t'];
    let shown;
    let s = if s.chars().any(|c| hidden(c, &KEPT)) {
        shown = shown_codes(s, &KEPT);
        shown.as_str()
    } else {
        s
    };
    let guarded;
    let s = if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        guarded = format!("'{s}");
        guarded.as_str()
    } else {
        s
    };
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A number as a CSV field: the shortest text that reads back to the same
/// `f64`; empty for a missing or non-finite value.
pub fn csv_num(v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x}"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_guards_every_formula_prefix_and_quotes_what_needs_it() {
        let cases = [
            ("=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"),
            ("+1", "'+1"),
            ("-1", "'-1"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\tx", "'\tx"),
            ("\r=x", "\"'\r=x\""),
            ("a\nb", "\"a\nb\""),
            ("say \"hi\"", "\"say \"\"hi\"\"\""),
            ("", ""),
            ("1.5", "1.5"),
        ];
        for (input, want) in cases {
            assert_eq!(csv_text(input), want, "{input:?}");
        }
        assert_eq!(csv_num(Some(-2.5)), "-2.5");
        assert_eq!(csv_num(Some(f64::INFINITY)), "");
        assert_eq!(csv_num(None), "");
    }

    #[test]
    fn markdown_and_terminal_neutralise_controls() {
        assert_eq!(markdown("a\nb\x07"), "a b\\u{7}");
        assert_eq!(terminal("a\u{202e}b"), "a\\u{202e}b");
        assert_eq!(terminal("naïve ✓"), "naïve ✓");
    }

    #[test]
    fn html_shows_every_bidi_control_instead_of_obeying_it() {
        for c in ('\u{202a}'..='\u{202e}').chain('\u{2066}'..='\u{2069}') {
            let text = html(&format!("a{c}b"));
            assert_eq!(text, format!("a\\u{{{:x}}}b", c as u32));
            assert!(!text.contains(c), "{c:?}");
        }
        // Neighbours that only mark a direction, and other scripts, pass.
        assert_eq!(html("\u{200f}שלום ✓"), "\u{200f}שלום ✓");
    }

    #[test]
    fn script_json_reads_back_identically() {
        let v = serde_json::json!({"m": "</script><!-- & \u{2028}"});
        let text = script_json(&serde_json::to_string(&v).unwrap());
        assert!(!text.contains('<') && !text.contains('>') && !text.contains('&'));
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, v);
    }
}
