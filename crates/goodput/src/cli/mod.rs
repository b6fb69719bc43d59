//! Command-line arguments as clap parses them: raw options in groups shared
//! between commands, checked and turned into built objects by each command's
//! module.

mod commands;
mod groups;
mod parse;
mod plan_args;
mod runs_args;
mod servegrid;
mod until;

pub use commands::*;
pub use groups::*;
pub use parse::*;
pub use plan_args::*;
pub use runs_args::*;
pub use servegrid::*;
pub use until::*;

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Parses the command line. clap reads a value such as `-1` or `-5s` as an
/// unknown flag and says only "unexpected argument"; this names the option
/// it was meant for and why it was refused.
pub fn parse() -> Cli {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    parse_from(&args).unwrap_or_else(|e| {
        if let Some(msg) = secret_value_message(&e)
            .or_else(|| negative_value_message(&e, &args))
            .or_else(|| positional_url_message(&e, &args))
        {
            goodput_core::tell!("error: {msg}");
            std::process::exit(2);
        }
        e.exit()
    })
}

/// Parses `args` (the program's name first) and records in the commands
/// that ask which flags were typed ([`Given`]).
pub fn parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let matches = Cli::command().try_get_matches_from(args)?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    let given = Given::of(&matches);
    if let (Some(slo), Some(field)) = (repeated_slo(&matches)?, cli.command.slo_mut()) {
        *field = Some(slo);
    }
    match &mut cli.command {
        Command::Bench(a) => a.sim.given = given,
        Command::Estimate(a) => a.given = given,
        Command::Sweep(a) => {
            a.sim.given = given.clone();
            a.given = given;
        }
        Command::Serve(a) => a.given = given,
        // `monitor --url URL` is `monitor URL`.
        Command::Monitor(a) => a.url = a.url.take().or_else(|| a.url_flag.take()),
        _ => {}
    }
    Ok(cli)
}

/// `--slo` given more than once (`--slo 'ttft:p95<=2s' --slo
/// 'tpot:p95<=50ms'`): one SLO of all their terms, read as if they had been
/// given in one, so a term given twice is refused as it is there. clap keeps
/// only the first of an option given again; every command's `--slo`
/// appends, and this joins them.
fn repeated_slo(matches: &ArgMatches) -> Result<Option<goodput_core::Slo>, clap::Error> {
    let Some((name, sub)) = matches.subcommand() else { return Ok(None) };
    // Commands without --slo (serve, monitor) have no such id.
    let parts: Vec<String> = match sub.try_get_raw("slo") {
        Ok(Some(given)) if given.len() > 1 => given.map(|v| v.to_string_lossy().into_owned()).collect(),
        _ => return Ok(None),
    };
    let joined = parts.join(",");
    joined.parse().map(Some).map_err(|e: goodput_core::SloError| {
        let mut cli = Cli::command();
        cli.build();
        let mut cmd = match cli.find_subcommand_mut(name) {
            Some(sub) => sub.clone(),
            None => cli,
        };
        clap::Error::raw(
            clap::error::ErrorKind::ValueValidation,
            format!("--slo given {} times is one SLO of all their terms ({joined}): {e}", parts.len()),
        )
        .format(&mut cmd)
    })
}

/// The flags typed on the command line (or set by their environment
/// variable), by clap's id (the field's name), the subcommand's included.
/// A flag given its default value is given all the same: a check that a
/// flag was dropped asks this, not whether the value differs from the
/// default, which would let `--timeout 120s` through and have to repeat
/// every default.
#[derive(Debug, Clone, Default)]
pub struct Given(Arc<BTreeSet<String>>);

impl Given {
    pub fn of(m: &ArgMatches) -> Given {
        let mut ids = BTreeSet::new();
        let mut at = Some(m);
        while let Some(m) = at {
            for id in m.ids() {
                if matches!(m.value_source(id.as_str()), Some(ValueSource::CommandLine | ValueSource::EnvVariable)) {
                    ids.insert(id.as_str().to_owned());
                }
            }
            at = m.subcommand().map(|(_, sub)| sub);
        }
        Given(Arc::new(ids))
    }

    /// Whether the flag of clap id `id` (`max_buffer` for `--max-buffer`) was typed.
    pub fn has(&self, id: &str) -> bool {
        self.0.contains(id)
    }

    /// The first of `flags` (`--name`, clap id) that was typed.
    pub fn first<'a>(&self, flags: &[(&'a str, &str)]) -> Option<&'a str> {
        flags.iter().find(|(_, id)| self.has(id)).map(|(flag, _)| *flag)
    }
}

/// A refused `--header`, said without its value: clap's own message
/// repeats the value as typed, and a header may hold a key.
fn secret_value_message(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::ValueValidation {
        return None;
    }
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else { return None };
    if !arg.starts_with("--header") {
        return None;
    }
    let why = std::error::Error::source(e).map(|s| s.to_string()).unwrap_or_default();
    Some(format!("invalid --header: {why}"))
}

/// `bench URL` or `sweep URL`: the address goes in --url (clap had said
/// only that the argument was unexpected).
fn positional_url_message(e: &clap::Error, args: &[std::ffi::OsString]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(bad)) = e.get(ContextKind::InvalidArg) else { return None };
    let command = args.get(1).and_then(|a| a.to_str())?;
    if !matches!(command, "bench" | "sweep") || bad.starts_with('-') || !looks_like_address(bad) {
        return None;
    }
    let url = if bad.contains("://") { bad.clone() } else { format!("http://{bad}") };
    Some(format!(
        "unexpected argument '{bad}': {command} takes no positional argument; pass the server's address as --url {url}"
    ))
}

/// `http://h`, `h:8000`, `localhost`: what a server's address looks like.
fn looks_like_address(s: &str) -> bool {
    s.contains("://")
        || s.starts_with("localhost")
        || s.rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

fn negative_value_message(e: &clap::Error, args: &[std::ffi::OsString]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(bad)) = e.get(ContextKind::InvalidArg) else { return None };
    if !bad.strip_prefix('-').is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit() || c == '.')) {
        return None;
    }
    // The whole value as typed (clap may name only its first short flag).
    let at = args.iter().position(|a| a.to_str().is_some_and(|a| a.starts_with(bad.as_str())))?;
    let value = args[at].to_string_lossy();
    let option = at.checked_sub(1).map(|i| args[i].to_string_lossy()).filter(|o| o.starts_with("--"));
    Some(match option {
        Some(option) => {
            format!("{option} {value}: a negative value makes no sense here; see --help for what {option} takes")
        }
        None => format!("'{value}' is not an option (a negative number?); see --help"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_key_header_is_x_api_key_only_for_anthropic_s_own_messages_api() {
        use goodput_load::{Api, KeyHeader};
        let auto = KeyHeaderArg::Auto;
        assert_eq!(auto.resolve(Api::Messages, "https://api.anthropic.com"), KeyHeader::XApiKey);
        assert_eq!(auto.resolve(Api::Messages, "http://127.0.0.1:8000"), KeyHeader::Bearer);
        assert_eq!(auto.resolve(Api::Chat, "https://api.anthropic.com"), KeyHeader::Bearer);
        assert_eq!(KeyHeaderArg::XApiKey.resolve(Api::Chat, "http://h"), KeyHeader::XApiKey);
    }

    /// `--slo` given twice is one SLO of both, on every command that takes
    /// it (clap had refused the second, "cannot be used multiple times");
    /// a term the two repeat is refused as it is in one --slo.
    #[test]
    fn slo_given_twice_is_one_slo_of_both() {
        let slo_of = |mut cli: Cli| cli.command.slo_mut().expect("a command with --slo").take();
        let twice = ["--slo", "ttft:p95<=2s", "--slo=tpot:p95<=50ms,attainment>=0.95"];
        for (command, rest) in [
            ("bench", &["--url", "http://127.0.0.1:8000"][..]),
            ("estimate", &[]),
            ("sweep", &["--url", "http://127.0.0.1:8000"]),
            ("report", &["run.json"]),
            ("merge", &["a.json", "b.json"]),
            ("plan", &["--gpu", "h100=2"]),
            ("compare", &["a.json", "b.json"]),
        ] {
            let head = ["goodput", command];
            let args: Vec<&str> = head.iter().chain(rest).chain(&twice).copied().collect();
            let cli = parse_from(args).unwrap_or_else(|e| panic!("{command}: {e}"));
            let slo = slo_of(cli).unwrap_or_else(|| panic!("{command}: no SLO"));
            assert_eq!(slo.to_string(), "ttft:p95<=2s,tpot:p95<=50ms,attainment>=0.95", "{command}");
            // Once, as before.
            let once: Vec<&str> = head.iter().chain(rest).chain(&["--slo", "ttft<=1s"]).copied().collect();
            assert_eq!(slo_of(parse_from(once).unwrap()).unwrap().to_string(), "ttft<=1s", "{command}");
        }
        let e = parse_from(["goodput", "plan", "--gpu", "h100", "--slo", "ttft:p95<=2s", "--slo", "ttft:p95<=1s"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--slo given 2 times") && e.contains("twice") && e.contains("goodput plan"), "{e}");
        // A command without --slo still parses.
        assert!(parse_from(["goodput", "serve", "--port", "0"]).is_ok());
    }

    /// bench's --sim-profile names exactly the engine flags bench takes, and
    /// where the rest are; it had listed serve's (--model, --gpu, --tp,
    /// engine limits), which bench does not take.
    #[test]
    fn bench_s_sim_profile_help_names_the_engine_flags_bench_takes() {
        use clap::CommandFactory;
        let mut cli = Cli::command();
        let bench = cli.find_subcommand_mut("bench").unwrap();
        let arg = bench.get_arguments().find(|a| a.get_id() == "sim_profile").unwrap();
        let help = arg.get_long_help().or(arg.get_help()).unwrap().to_string();
        for (flag, _) in crate::target::SIM_ENGINE_FLAGS.iter().chain(crate::target::SIM_FIXED_FLAGS) {
            assert!(help.contains(flag), "{flag}: {help}");
        }
        assert!(!help.contains("--model,") && help.contains("goodput serve --profile engine"), "{help}");
        for taken in bench.get_arguments().filter_map(|a| a.get_long()).filter(|l| l.starts_with("sim-")) {
            assert!(taken == "sim-profile" || help.contains(&format!("--{taken}")), "--{taken} is not named");
        }
    }

    /// estimate's --api help lists the generation APIs it models, not the
    /// pooling ones it refuses (it had listed embeddings, rerank and
    /// tei-rerank); those still parse, for estimate's refusal to say where
    /// to measure them.
    #[test]
    fn estimate_s_api_help_lists_only_the_apis_it_models() {
        use clap::CommandFactory;
        let mut cli = Cli::command();
        let estimate = cli.find_subcommand_mut("estimate").unwrap();
        let api = estimate.get_arguments().find(|a| a.get_id() == "api").unwrap();
        let shown: Vec<String> =
            api.get_possible_values().iter().filter(|v| !v.is_hide_set()).map(|v| v.get_name().to_string()).collect();
        let all: Vec<&str> = goodput_load::Api::ALL.iter().map(|a| a.as_str()).collect();
        assert_eq!(shown, all[..7], "the generation APIs, in order");
        let help = estimate.render_long_help().to_string();
        assert!(!help.contains("tei-rerank") && !help.contains("/v1/embeddings"), "{help}");
        let parsed = <Cli as clap::Parser>::try_parse_from(["goodput", "estimate", "--api", "embeddings"]).unwrap();
        assert!(matches!(parsed.command, Command::Estimate(a) if a.api == goodput_load::Api::Embeddings));
    }

    #[test]
    fn headers() {
        assert_eq!(parse_header("X-Team:  infra ").unwrap(), ("X-Team".into(), "infra".into()));
        assert_eq!(parse_header("X-Empty:").unwrap().1, "");
        assert!(parse_header("no colon").unwrap_err().contains("'Name: value'"));
        assert!(!parse_header("Authorization sk-SECRET").unwrap_err().contains("SECRET"), "the value is not repeated");
        assert!(parse_header("Bad Name: x").unwrap_err().contains("not a header name"));
    }

    #[test]
    fn windows() {
        let w = parse_window("30s..1m30s").unwrap();
        assert_eq!((w.from, w.to), (Duration::from_secs(30), Some(Duration::from_secs(90))));
        assert_eq!(window_text(&w), "30s..1m 30s");
        assert_eq!(parse_window("..2m").unwrap().from, Duration::ZERO);
        assert_eq!(parse_window("1m..").unwrap().to, None);
        assert!(parse_window("30s").unwrap_err().contains("e.g. 30s..90s"));
        assert!(parse_window("30s..soon").unwrap_err().contains("'soon'"));
        assert!(parse_window("90s..30s").unwrap_err().contains("ends before it starts"));
        assert!(parse_window("30s..30s").unwrap_err().contains("ends where it starts, and holds no time"));
    }

    #[test]
    fn shards_and_start_instants() {
        assert_eq!(parse_shard("2/3").unwrap(), (2, 3));
        assert!(parse_shard("3/3").unwrap_err().contains("0/3 … 2/3"));
        assert!(
            parse_shard("1/0").unwrap_err().contains("one shard or more")
                && parse_shard("1").unwrap_err().contains("INDEX/COUNT")
        );
        // Counts past u32 and u64 are too many shards, not a format error.
        for count in ["4294967295", "4294967296", "18446744073709551615", "99999999999999999999999"] {
            let err = parse_shard(&format!("0/{count}")).unwrap_err();
            assert!(err.contains("at most 10000 shards") && err.contains(count), "{err}");
        }
        assert!(parse_shard("4294967296/3").unwrap_err().contains("4294967296/3: the index counts from 0"));
        assert!(parse_shard("-1/3").unwrap_err().contains("INDEX/COUNT"));
        assert_eq!(parse_shard("+1/3").unwrap(), (1, 3));
        assert_eq!(parse_start_at("1767225600.25").unwrap(), 1_767_225_600.25);
        assert_eq!(parse_start_at("2026-01-01T00:00:00Z").unwrap(), 1_767_225_600.0);
        assert_eq!(parse_start_at("2026-01-01T01:00:00.5+01:00").unwrap(), 1_767_225_600.5);
        assert!(parse_start_at("tomorrow").unwrap_err().contains("RFC 3339"));
        assert!(parse_start_at("-5").is_err());
        assert_eq!(crate::common::rfc3339(1_767_225_600.25), "2026-01-01T00:00:00.250Z");
    }

    #[test]
    fn json_is_o_on_every_command_that_writes_a_json_document() {
        // Only compare had taken it; the others refused it, with a tip toward --slo.
        let out = |args: &[&str]| {
            let cli = parse_from(["goodput"].iter().chain(args).chain(&["--json", "doc.json"]))
                .unwrap_or_else(|e| panic!("{args:?} --json: {e}"));
            match cli.command {
                Command::Bench(a) => a.output.output,
                Command::Estimate(a) => a.output.output,
                Command::Sweep(a) => a.output.output,
                Command::Report(a) => a.output,
                Command::Merge(a) => a.output,
                Command::Plan(a) => a.output,
                Command::Compare(a) => a.output,
                _ => panic!("{args:?}: not a command that writes a JSON document"),
            }
        };
        let commands: [&[&str]; 7] = [
            &["bench"],
            &["estimate"],
            &["sweep", "--concurrency", "1,2"],
            &["report", "run.json"],
            &["merge", "a.json", "b.json"],
            &["plan", "--gpu", "h100"],
            &["compare", "a.json", "b.json"],
        ];
        for args in commands {
            assert_eq!(out(args).as_deref(), Some(std::path::Path::new("doc.json")), "{args:?}");
        }
    }

    #[test]
    fn a_scrape_interval_is_at_least_10ms() {
        assert_eq!(parse_scrape_interval("10ms").unwrap(), Duration::from_millis(10));
        assert!(parse_scrape_interval("1ns").unwrap_err().contains("10 ms at least"));
        assert!(parse_scrape_interval("0s").unwrap_err().contains("no time at all"));
    }

    #[test]
    fn byte_sizes_are_at_least_a_kib() {
        assert_eq!(parse_bytes("64MiB").unwrap(), 64 << 20);
        assert_eq!(parse_bytes("1KiB").unwrap(), 1024);
        assert_eq!(parse_bytes("1024").unwrap(), 1024);
        // 0 and 1 alike: a buffer of a few bytes fails every request.
        for small in ["0", "1", "1023", "0MiB"] {
            assert!(parse_bytes(small).unwrap_err().contains("give at least 1KiB"), "{small}");
        }
        assert!(parse_bytes("64 parsecs").unwrap_err().contains("is not a size"));
    }

    #[test]
    fn a_list_with_an_empty_item_is_refused() {
        assert_eq!(parse_counts(" 1, 2 ,4").unwrap().0, vec![1, 2, 4]);
        for bad in ["1,,2", "1,2,", ",1"] {
            assert!(parse_counts(bad).unwrap_err().contains("has an empty item"), "{bad}");
            assert!(parse_rates(bad).unwrap_err().contains("has an empty item"), "{bad}");
        }
        assert!(parse_counts("").unwrap_err().contains("is not a comma-separated list"));
        // A sweep's rates are finite: inf is a bench's --rate.
        let inf = parse_rates("1,10,inf").unwrap_err();
        assert!(inf.contains("a sweep's rates are finite") && inf.contains("give the highest rate"), "{inf}");
        assert!(parse_rates("1,-2").unwrap_err().contains("a positive number"));
    }

    #[test]
    fn percentile_lists() {
        assert_eq!(parse_percentiles("50,90,99.9").unwrap().0, vec![50.0, 90.0, 99.9]);
        assert_eq!(parse_percentiles("p50, p99").unwrap().0, vec![50.0, 99.0]);
        assert!(parse_percentiles("101").is_err());
        assert!(parse_percentiles("x").unwrap_err().contains("50,90,99.9"));
        // Sorted and each once: given out of order, p99 had headed the tables before p50.
        assert_eq!(parse_percentiles("99,50,99").unwrap().0, vec![50.0, 99.0]);
        assert_eq!(parse_percentiles("p99.9, 90,p50,90.0").unwrap().0, vec![50.0, 90.0, 99.9]);
    }

    #[test]
    fn engine_defaults_match_the_flags() {
        let cli = parse_from(["goodput", "serve"]).unwrap();
        let Command::Serve(a) = cli.command else { panic!() };
        let d = EngineHwArgs::default();
        assert_eq!(format!("{:?}", a.hw), format!("{d:?}"));
    }

    #[test]
    fn the_flags_checked_as_typed_are_the_commands_own() {
        let cli = Cli::command();
        let tables: [(&str, &[(&str, &str)]); 6] = [
            ("sweep", crate::sweep::LIVE_FLAGS),
            ("serve", crate::serve::FIXED_FLAGS),
            ("bench", crate::target::SIM_FIXED_FLAGS),
            ("bench", crate::target::SIM_ENGINE_FLAGS),
            ("sweep", crate::target::SIM_FIXED_FLAGS),
            ("sweep", crate::target::SIM_ENGINE_FLAGS),
        ];
        for (name, table) in tables {
            let sub = cli.find_subcommand(name).unwrap();
            for (flag, id) in table {
                let arg = sub.get_arguments().find(|a| a.get_id() == *id);
                let arg = arg.unwrap_or_else(|| panic!("{name} has no argument of id {id}"));
                assert_eq!(format!("--{}", arg.get_long().unwrap()), *flag, "{name} {id}");
            }
        }
    }

    #[test]
    fn a_flag_typed_with_its_default_value_is_given() {
        let cli = parse_from(["goodput", "sweep", "--estimate", "--concurrency", "1", "--timeout", "120s"]).unwrap();
        let Command::Sweep(a) = cli.command else { panic!() };
        assert!(a.given.has("timeout") && a.given.has("concurrency") && a.given.has("estimate"));
        assert!(!a.given.has("max_buffer"), "a default is not typed");
        assert!(a.sim.given.has("timeout"));
        let cli = parse_from(["goodput", "serve", "--profile", "fixed", "--tp", "1"]).unwrap();
        let Command::Serve(a) = cli.command else { panic!() };
        assert!(a.given.has("tp") && !a.given.has("gpu"));
    }

    #[test]
    fn cli_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
