//! The server configurations to sweep: the grid of `--serve-grid` (a
//! product of lists given inline, or a TOML or JSON file holding a list of
//! parameter sets or a product of lists), and the command template each one
//! fills.

use anyhow::{anyhow, bail, Context, Result};
use goodput_core::doc::frontier::ParamMap;
use std::path::Path;

/// One configuration: its parameters in the grid's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params(pub Vec<(String, String)>);

impl Params {
    /// `max_num_seqs=64 tp=2`: the configuration's id in the document, the
    /// label its chart and tables show. A parameter named `id` gives it
    /// instead; a value longer than 24 characters is cut to 20 and `…`;
    /// empty parameters give `default`.
    pub fn id(&self) -> String {
        if let Some(id) = self.get("id") {
            return id.to_string();
        }
        if self.0.is_empty() {
            return "default".into();
        }
        let short = |v: &str| {
            if v.chars().count() > 24 {
                format!("{}…", v.chars().take(20).collect::<String>())
            } else {
                v.to_string()
            }
        };
        self.0.iter().map(|(k, v)| format!("{k}={}", short(v))).collect::<Vec<_>>().join(" ")
    }

    /// The parameters as the document keeps them, in the grid's order.
    pub fn map(&self) -> ParamMap {
        self.0.iter().cloned().collect()
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The id as a part of a file name: letters, digits, `-`, `_`, `.` and
    /// `=` kept, the rest `_`, and at most 60 of them (the configuration's
    /// number before it keeps names apart).
    pub fn slug(&self) -> String {
        let id = self.id();
        id.chars()
            .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '=') { c } else { '_' })
            .take(60)
            .collect()
    }
}

/// Reads `--serve-grid`: a file (`.toml` or `.json`) when one is there by
/// that name, else the inline form `a=1,2;b=x,y` (the product of the lists).
pub fn parse_grid(spec: &str) -> Result<Vec<Params>> {
    let p = Path::new(spec);
    let ext = p.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    if matches!(ext.as_deref(), Some("toml" | "json")) {
        let text = goodput_core::util::input::read_text(p, "--serve-grid", 1 << 20)
            .with_context(|| format!("cannot read the grid file {spec}"))?;
        let grid = if ext.as_deref() == Some("json") {
            // Read in the file's order (serde_json's Value sorts an
            // object's names); a name given twice is refused, as TOML's
            // reader refuses it (Value had kept the last, silently).
            let v: Json = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(e) if e.is_data() => bail!("--serve-grid {spec}: {e}"),
                Err(e) => return Err(e).with_context(|| format!("{spec} is not valid JSON")),
            };
            from_json(&v)
        } else {
            let v: toml::Table = toml::from_str(&text).with_context(|| format!("{spec} is not valid TOML"))?;
            from_toml(&v)
        }
        .with_context(|| format!("in the grid file {spec}"))?;
        return check(grid);
    }
    check(inline(spec)?)
}

/// `a=1,2;b=x,y`.
fn inline(spec: &str) -> Result<Vec<Params>> {
    let mut lists = Vec::new();
    for part in spec.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, values) = part.split_once('=').ok_or_else(|| {
            anyhow!(
                "--serve-grid: '{part}' is not NAME=V1,V2 (e.g. 'max_num_seqs=64,128;tp=1,2', or a .toml or .json \
                 file)"
            )
        })?;
        let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
        if values.iter().any(String::is_empty) {
            bail!("--serve-grid: '{part}' has an empty value");
        }
        let name = name.trim().to_string();
        // The server would run with one value and the document record another.
        if lists.iter().any(|(n, _)| *n == name) {
            bail!("--serve-grid names {name} twice: give its values once, as one list ({name}=V1,V2)");
        }
        lists.push((name, values));
    }
    if lists.is_empty() {
        bail!("--serve-grid is empty: give NAME=V1,V2;… (e.g. 'max_num_seqs=64,128')");
    }
    Ok(product(&lists))
}

/// Every combination of the lists, the first list's value changing slowest.
fn product(lists: &[(String, Vec<String>)]) -> Vec<Params> {
    let mut out = vec![Params(Vec::new())];
    for (name, values) in lists {
        out = out
            .into_iter()
            .flat_map(|p| {
                values.iter().map(move |v| {
                    let mut q = p.clone();
                    q.0.push((name.clone(), v.clone()));
                    q
                })
            })
            .collect();
    }
    out
}

/// A JSON value with its objects' names in the file's order (an object
/// that names one twice is refused).
enum Json {
    Str(String),
    Num(String),
    Bool(bool),
    Null,
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl<'de> serde::Deserialize<'de> for Json {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Json;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E>(self, b: bool) -> std::result::Result<Json, E> {
                Ok(Json::Bool(b))
            }
            fn visit_i64<E>(self, n: i64) -> std::result::Result<Json, E> {
                Ok(Json::Num(n.to_string()))
            }
            fn visit_u64<E>(self, n: u64) -> std::result::Result<Json, E> {
                Ok(Json::Num(n.to_string()))
            }
            fn visit_f64<E>(self, n: f64) -> std::result::Result<Json, E> {
                // As serde_json writes it (1.0, not 1).
                Ok(Json::Num(serde_json::Number::from_f64(n).map_or_else(|| n.to_string(), |n| n.to_string())))
            }
            fn visit_str<E>(self, s: &str) -> std::result::Result<Json, E> {
                Ok(Json::Str(s.to_string()))
            }
            fn visit_string<E>(self, s: String) -> std::result::Result<Json, E> {
                Ok(Json::Str(s))
            }
            fn visit_unit<E>(self) -> std::result::Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> std::result::Result<Json, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = a.next_element::<Json>()? {
                    v.push(x);
                }
                Ok(Json::Arr(v))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> std::result::Result<Json, A::Error> {
                let mut v: Vec<(String, Json)> = Vec::new();
                while let Some(k) = a.next_key::<String>()? {
                    if v.iter().any(|(n, _)| *n == k) {
                        return Err(serde::de::Error::custom(format!(
                            "the name {k} is given twice in one object: give it once"
                        )));
                    }
                    let x = a.next_value::<Json>()?;
                    v.push((k, x));
                }
                Ok(Json::Obj(v))
            }
        }
        d.deserialize_any(V)
    }
}

fn json_scalar(v: &Json, name: &str) -> Result<String> {
    match v {
        Json::Str(s) | Json::Num(s) => Ok(s.clone()),
        Json::Bool(b) => Ok(b.to_string()),
        _ => bail!("the value of '{name}' must be a string, a number or a boolean"),
    }
}

/// An array of objects (a list of parameter sets), or an object of arrays
/// (a product of lists; a lone value is a list of one).
fn from_json(v: &Json) -> Result<Vec<Params>> {
    match v {
        Json::Arr(sets) => sets
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let Json::Obj(obj) = s else { bail!("entry {i} of the list is not an object") };
                obj.iter().map(|(k, v)| Ok((k.clone(), json_scalar(v, k)?))).collect::<Result<_>>().map(Params)
            })
            .collect(),
        Json::Obj(lists) => {
            let lists = lists
                .iter()
                .map(|(k, v)| {
                    let vals = match v {
                        Json::Arr(a) => a.iter().map(|x| json_scalar(x, k)).collect::<Result<_>>()?,
                        other => vec![json_scalar(other, k)?],
                    };
                    Ok((k.clone(), vals))
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(product(&lists))
        }
        _ => bail!("give a list of parameter sets ([{{\"tp\": 1}}, …]) or lists to combine ({{\"tp\": [1, 2]}})"),
    }
}

fn toml_scalar(v: &toml::Value, name: &str) -> Result<String> {
    match v {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(n) => Ok(n.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        toml::Value::Boolean(b) => Ok(b.to_string()),
        _ => bail!("the value of '{name}' must be a string, a number or a boolean"),
    }
}

/// `[[config]]` tables (a list of parameter sets), or keys with arrays (a
/// product of lists).
fn from_toml(t: &toml::Table) -> Result<Vec<Params>> {
    if let Some(list) = t.get("config") {
        if t.len() > 1 {
            bail!("give either [[config]] tables or lists to combine, not both");
        }
        let list = list.as_array().ok_or_else(|| anyhow!("'config' must be [[config]] tables"))?;
        return list
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let tab = s.as_table().ok_or_else(|| anyhow!("[[config]] entry {i} is not a table"))?;
                tab.iter().map(|(k, v)| Ok((k.clone(), toml_scalar(v, k)?))).collect::<Result<_>>().map(Params)
            })
            .collect();
    }
    let lists = t
        .iter()
        .map(|(k, v)| {
            let vals = match v {
                toml::Value::Array(a) => a.iter().map(|x| toml_scalar(x, k)).collect::<Result<_>>()?,
                other => vec![toml_scalar(other, k)?],
            };
            Ok((k.clone(), vals))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(product(&lists))
}

/// Names are placeholders' names; no two configurations alike; at most
/// 10,000 of them.
fn check(grid: Vec<Params>) -> Result<Vec<Params>> {
    if grid.is_empty() || grid.iter().all(|p| p.0.is_empty()) && grid.len() > 1 {
        bail!("--serve-grid gives no configuration");
    }
    if grid.len() > 10_000 {
        bail!("--serve-grid gives {} configurations: at most 10,000 (each starts a server)", grid.len());
    }
    for p in &grid {
        for (k, _) in &p.0 {
            if !is_name(k) {
                bail!(
                    "--serve-grid: '{k}' is not a parameter name (letters, digits, _ and -, not starting with a digit)"
                );
            }
            // {port} is goodput's to fill with a free port: a grid of ports
            // had labelled identical servers as different configurations.
            if k == "port" {
                bail!(
                    "--serve-grid: 'port' is the free port goodput gives each server ({{port}} in --serve-cmd), not \
                     a parameter: drop it from the grid"
                );
            }
        }
    }
    for p in &grid {
        // A blank label: nothing to tell it by in the tables, and a log named `01-.log`.
        if p.get("id").is_some_and(|id| id.trim().is_empty()) {
            bail!("--serve-grid: a configuration has an empty id: give it a name (id=…), or drop id to label it by its parameters");
        }
    }
    for (i, p) in grid.iter().enumerate() {
        if grid[..i].iter().any(|q| q.map() == p.map()) {
            bail!("--serve-grid gives the configuration {} twice", p.id());
        }
        if grid[..i].iter().any(|q| q.id() == p.id()) {
            bail!(
                "--serve-grid: two configurations would both be labelled '{}' (long values are cut): give each a \
                 parameter id=… to name it",
                p.id()
            );
        }
    }
    Ok(grid)
}

fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-')
}

/// The placeholders `{name}` in `word`, with their byte ranges. A brace not
/// followed by a name and `}` is text (JSON in an argument stays as it is).
fn placeholders(word: &str) -> Vec<(std::ops::Range<usize>, &str)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(open) = word[from..].find('{').map(|i| from + i) {
        match word[open + 1..].find('}').map(|i| open + 1 + i) {
            Some(close) if is_name(&word[open + 1..close]) => {
                out.push((open..close + 1, &word[open + 1..close]));
                from = close + 1;
            }
            _ => from = open + 1,
        }
    }
    out
}

/// The command template, split into words as a POSIX shell would (quotes
/// and backslashes; no variables, globs or pipes: no shell runs it).
#[derive(Debug, Clone)]
pub struct Template {
    words: Vec<String>,
}

impl Template {
    pub fn parse(text: &str) -> Result<Template> {
        let words = shlex::split(text).ok_or_else(|| {
            anyhow!("--serve-cmd: cannot split '{text}' into words (an unclosed quote, or a trailing backslash?)")
        })?;
        if words.is_empty() {
            bail!("--serve-cmd is empty: give the server's command, e.g. 'vllm serve MODEL --port {{port}}'");
        }
        let t = Template { words };
        if !t.names().contains(&"port") {
            bail!(
                "--serve-cmd has no {{port}}: goodput picks a free port for each server and must tell it (e.g. \
                 '--port {{port}}')"
            );
        }
        Ok(t)
    }

    /// Every placeholder's name, in order, once each.
    pub fn names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = Vec::new();
        for w in &self.words {
            for (_, n) in placeholders(w) {
                if !v.contains(&n) {
                    v.push(n);
                }
            }
        }
        v
    }

    /// Checks that every placeholder but `{port}` is a parameter of every
    /// configuration.
    pub fn check(&self, grid: &[Params]) -> Result<()> {
        for name in self.names().into_iter().filter(|n| *n != "port") {
            if let Some(p) = grid.iter().find(|p| p.get(name).is_none()) {
                bail!(
                    "--serve-cmd has {{{name}}}, which configuration {} of --serve-grid does not give: add {name}=… \
                     to the grid",
                    p.id()
                );
            }
        }
        Ok(())
    }

    /// The command's words for `params` on `port`. Each word is filled on its
    /// own, so a value with spaces stays one argument. In a shell's script
    /// (the word after `-c` of `sh`, `bash` and the like, see
    /// [`script_word`]) a value set among other text is shell-quoted, so
    /// that the script's shell reads it as one word, unexpanded; a
    /// placeholder that is the whole script is filled as it is (the value is
    /// the script).
    pub fn fill(&self, params: &Params, port: u16) -> Vec<String> {
        self.words
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let holes = placeholders(w);
                let quote = script_word(&self.words, i) && !(holes.len() == 1 && holes[0].0 == (0..w.len()));
                let mut out = String::new();
                let mut last = 0;
                for (r, name) in holes {
                    out.push_str(&w[last..r.start]);
                    let value = match name {
                        "port" => port.to_string(),
                        n => params.get(n).unwrap_or("").to_string(),
                    };
                    if quote {
                        out.push_str(&quoted_for(shell_quote_at(w, r.start), &value));
                    } else {
                        out.push_str(&value);
                    }
                    last = r.end;
                }
                out.push_str(&w[last..]);
                out
            })
            .collect()
    }
}

/// The quoting a POSIX shell is in at byte `at` of `script`: bare, inside
/// '…', or inside "…" (a backslash escapes the next character outside
/// single quotes).
#[derive(Debug, Clone, Copy, PartialEq)]
enum ShellQuote {
    Bare,
    Single,
    Double,
}

fn shell_quote_at(script: &str, at: usize) -> ShellQuote {
    let mut state = ShellQuote::Bare;
    let mut escaped = false;
    for (i, c) in script.char_indices() {
        if i >= at {
            break;
        }
        if escaped {
            escaped = false;
            continue;
        }
        state = match (state, c) {
            (ShellQuote::Bare | ShellQuote::Double, '\\') => {
                escaped = true;
                state
            }
            (ShellQuote::Bare, '\'') => ShellQuote::Single,
            (ShellQuote::Bare, '"') => ShellQuote::Double,
            (ShellQuote::Single, '\'') | (ShellQuote::Double, '"') => ShellQuote::Bare,
            (s, _) => s,
        };
    }
    state
}

/// `value` written so that a shell reads it as its literal text where it
/// stands: bare, one word of its own (shell-quoted); inside '…', its single
/// quotes closed and escaped; inside "…", its `\`, `"`, `$` and backquotes
/// escaped. So `'{x}'`, `"{x}"` and `{x}` all give the value itself, spaces
/// and all (a value quoted bare inside the script's own quotes had come out
/// with its quotes, or split in two).
fn quoted_for(state: ShellQuote, value: &str) -> String {
    match state {
        // A NUL cannot be quoted, nor passed in an argument at all.
        ShellQuote::Bare => shlex::try_quote(value).map_or_else(|_| value.to_string(), |q| q.into_owned()),
        ShellQuote::Single => value.replace('\'', r"'\''"),
        ShellQuote::Double => {
            let mut out = String::with_capacity(value.len());
            for c in value.chars() {
                if matches!(c, '\\' | '"' | '$' | '`') {
                    out.push('\\');
                }
                out.push(c);
            }
            out
        }
    }
}

/// Whether `words[i]` is a script a shell runs: the word after `-c` (or an
/// option cluster ending in it, `-ec`, `-lc`) given to a POSIX-like shell
/// (`sh`, `bash`, `dash`, `zsh`, `ksh`, `ash`, `mksh`, by name or path), the
/// shell being the command or following `env`, `nohup`, `exec` or the like.
fn script_word(words: &[String], i: usize) -> bool {
    const SHELLS: [&str; 7] = ["sh", "bash", "dash", "zsh", "ksh", "ash", "mksh"];
    if i < 2 {
        return false;
    }
    let c = &words[i - 1];
    let is_c = c.len() >= 2
        && c.starts_with('-')
        && !c.starts_with("--")
        && c.ends_with('c')
        && c[1..].chars().all(|ch| ch.is_ascii_alphabetic());
    if !is_c {
        return false;
    }
    // The shell: the nearest word before the option that is not an option itself.
    words[..i - 1].iter().rev().find(|w| !w.starts_with('-')).is_some_and(|w| {
        let base = w.rsplit('/').next().unwrap_or(w);
        SHELLS.contains(&base)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(g: &[Params]) -> Vec<String> {
        g.iter().map(Params::id).collect()
    }

    #[test]
    fn an_inline_grid_is_the_product_of_its_lists() {
        let g = parse_grid("a=1,2; b=x,y").unwrap();
        assert_eq!(ids(&g), ["a=1 b=x", "a=1 b=y", "a=2 b=x", "a=2 b=y"]);
        assert!(parse_grid("a").unwrap_err().to_string().contains("not NAME=V1,V2"));
        assert!(parse_grid("a=1,,2").unwrap_err().to_string().contains("empty value"));
        assert!(parse_grid("a=1,1").unwrap_err().to_string().contains("twice"));
        let e = parse_grid("max_num_seqs=2;max_num_seqs=16").unwrap_err().to_string();
        assert!(e.contains("names max_num_seqs twice"), "{e}");
        assert!(parse_grid("a=1; b=2; a =3").unwrap_err().to_string().contains("names a twice"));
        assert!(parse_grid("1a=1").unwrap_err().to_string().contains("not a parameter name"));
        assert!(parse_grid("port=1,2").unwrap_err().to_string().contains("'port' is the free port goodput gives"));
        assert!(parse_grid(" ; ").unwrap_err().to_string().contains("empty"));
        assert_eq!(parse_grid("a=x/y z").unwrap()[0].slug(), "a=x_y_z");
        assert_eq!(Params(vec![("id".into(), "x".repeat(500))]).slug().len(), 60);
        let long = "sh -c 'exec vllm serve --port 1'";
        assert_eq!(Params(vec![("cmd".into(), long.into())]).id(), "cmd=sh -c 'exec vllm ser…");
        assert_eq!(Params(vec![("cmd".into(), long.into()), ("id".into(), "vllm".into())]).id(), "vllm");
        let e = parse_grid(&format!("a={long}x,{long}y")).unwrap_err().to_string();
        assert!(e.contains("id=…"), "{e}");
    }

    #[test]
    fn grid_files_hold_lists_of_sets_or_lists_to_combine() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p.to_string_lossy().into_owned()
        };
        let j = write("list.json", r#"[{"tp": 1, "seqs": 64}, {"tp": 2, "quant": "fp8"}]"#);
        // In the order written (they had come sorted by name).
        assert_eq!(ids(&parse_grid(&j).unwrap()), ["tp=1 seqs=64", "tp=2 quant=fp8"]);
        let j = write("product.json", r#"{"tp": [1, 2], "eager": true}"#);
        assert_eq!(ids(&parse_grid(&j).unwrap()), ["tp=1 eager=true", "tp=2 eager=true"]);
        let j = write("float.json", r#"{"zeta": [1.0, 2.5], "alpha": "x"}"#);
        assert_eq!(ids(&parse_grid(&j).unwrap()), ["zeta=1.0 alpha=x", "zeta=2.5 alpha=x"]);
        let keys: Vec<String> = parse_grid(&j).unwrap()[0].map().keys().cloned().collect();
        assert_eq!(keys, ["zeta", "alpha"]);
        let t = write("list.toml", "[[config]]\ntp = 1\n[[config]]\ntp = 2\nseqs = 128\n");
        assert_eq!(ids(&parse_grid(&t).unwrap()), ["tp=1", "tp=2 seqs=128"]);
        let t = write("product.toml", "tp = [1, 2]\nseqs = [64]\n");
        assert_eq!(ids(&parse_grid(&t).unwrap()), ["tp=1 seqs=64", "tp=2 seqs=64"]);
        // A name given twice: JSON's reader would keep the last silently.
        for (name, text) in [
            ("twice.json", r#"{"seqs": [2], "seqs": [16]}"#),
            ("twice-list.json", r#"[{"seqs": 2, "seqs": 16}]"#),
            ("twice.toml", "seqs = [2]\nseqs = [16]\n"),
            ("twice-list.toml", "[[config]]\nseqs = 2\nseqs = 16\n"),
        ] {
            let e = format!("{:#}", parse_grid(&write(name, text)).unwrap_err());
            assert!(e.contains("seqs") && (e.contains("twice") || e.contains("duplicate")), "{name}: {e}");
        }
        let e = format!("{:#}", parse_grid(&write("blank.json", r#"[{"id": "", "tp": 1}]"#)).unwrap_err());
        assert!(e.contains("empty id"), "{e}");
        let e = format!("{:#}", parse_grid(&write("blank.toml", "[[config]]\nid = \" \"\ntp = 1\n")).unwrap_err());
        assert!(e.contains("empty id"), "{e}");
        let bad = write("bad.json", r#"{"tp": [[1]]}"#);
        let e = format!("{:#}", parse_grid(&bad).unwrap_err());
        assert!(e.contains("must be a string, a number or a boolean") && e.contains("bad.json"), "{e}");
        let e = format!("{:#}", parse_grid(&dir.path().join("none.toml").to_string_lossy()).unwrap_err());
        assert!(e.contains("cannot read the grid file"), "{e}");
    }

    #[test]
    fn a_template_is_split_like_a_shell_and_filled_word_by_word() {
        let t = Template::parse(
            r#"vllm serve m --port {port} --max-num-seqs {seqs} --speculative-config '{"n": 2}' --x "a {seqs}b""#,
        )
        .unwrap();
        assert_eq!(t.names(), ["port", "seqs"]);
        let p = Params(vec![("seqs".into(), "6 4".into())]);
        assert_eq!(
            t.fill(&p, 8123),
            [
                "vllm",
                "serve",
                "m",
                "--port",
                "8123",
                "--max-num-seqs",
                "6 4",
                "--speculative-config",
                r#"{"n": 2}"#,
                "--x",
                "a 6 4b"
            ]
        );
        assert!(t.check(&[p]).is_ok());
        let e = t.check(&[Params(vec![("tp".into(), "1".into())])]).unwrap_err().to_string();
        assert!(e.contains("{seqs}") && e.contains("tp=1"), "{e}");
        assert!(Template::parse("serve --port 80").unwrap_err().to_string().contains("no {port}"));
        // In a shell's script, a value among other text is quoted for that
        // shell; one that is the whole script, or an argument after it, is not.
        let t =
            Template::parse(r#"env A=1 /bin/bash -ec 'serve --port {port} --name {name} -x "{seqs}"' {name} {port}"#)
                .unwrap();
        let p = Params(vec![("name".into(), "a b; touch x".into()), ("seqs".into(), "64".into())]);
        let w = t.fill(&p, 8123);
        assert_eq!(w[4], r#"serve --port 8123 --name 'a b; touch x' -x "64""#);
        assert_eq!(&w[5..], ["a b; touch x", "8123"]);
        // Inside the script's own quotes a value is escaped for them, not
        // quoted again: '{x}' and "{x}" give the value itself (they had
        // given 'a b' with its quotes, or two words).
        let t = Template::parse(r#"sh -c "serve --name '{name}' --cfg \"{cfg}\" --x {x}" {port}"#).unwrap();
        let p = Params(vec![
            ("name".into(), "my model's".into()),
            ("cfg".into(), r#"{"n": "$HOME`x`"}"#.into()),
            ("x".into(), "a b".into()),
        ]);
        assert_eq!(t.fill(&p, 1)[2], r#"serve --name 'my model'\''s' --cfg "{\"n\": \"\$HOME\`x\`\"}" --x 'a b'"#);
        let t = Template::parse("sh -c {script} {port}").unwrap();
        let p = Params(vec![("script".into(), "exec serve --port \"$0\"".into())]);
        assert_eq!(t.fill(&p, 1)[2], "exec serve --port \"$0\"");
        let t = Template::parse("python -c 'print({name})' --port {port}").unwrap();
        assert_eq!(t.fill(&Params(vec![("name".into(), "a b".into())]), 1)[2], "print(a b)", "not a shell");
        assert!(Template::parse("serve 'open").unwrap_err().to_string().contains("unclosed quote"));
    }
}
