//! deploy/k8s: the manifests parse and carry what a cluster needs for a
//! sharded run (an Indexed Job whose completions equal its parallelism and
//! its --shard count, the shard index in the args, the shared volume), and
//! their goodput arguments are ones goodput itself accepts. No cluster is
//! reachable from the tests; this is what can be checked without one.
//!
//! The other ways goodput is shipped are held the same way: the GitHub
//! Action (action.yml: every input documented and wired, none spliced into a
//! script, its command lines ones goodput accepts; scripts/action-smoke
//! runs it) and the wheel (pyproject.toml: maturin's `bin` bindings over
//! the crate whose binary is goodput; scripts/build-wheel builds and runs it).

use clap::Parser;
use goodput::cli::{Cli, Command};
use serde_json::Value;
use std::path::PathBuf;

fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

fn k8s(name: &str) -> PathBuf {
    repo("deploy/k8s").join(name)
}

fn manifest(name: &str) -> Value {
    let text = std::fs::read_to_string(k8s(name)).unwrap();
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{name} is not YAML: {e}"))
}

/// The container's args with what Kubernetes and the README put in place
/// of the variables, as goodput's own parser reads them.
fn parsed(args: &Value, index: u32) -> Cli {
    let args: Vec<String> = args
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            a.as_str()
                .unwrap()
                .replace("$(JOB_COMPLETION_INDEX)", &index.to_string())
                .replace("$(START_AT)", "2030-01-01T00:00:00Z")
        })
        .collect();
    Cli::try_parse_from(std::iter::once("goodput".to_string()).chain(args)).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_shards_job_is_an_indexed_job_of_one_shard_a_pod() {
    let job = manifest("shards-job.yaml");
    assert_eq!((job["apiVersion"].as_str(), job["kind"].as_str()), (Some("batch/v1"), Some("Job")));
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let n = spec["completions"].as_u64().unwrap();
    assert_eq!(spec["parallelism"].as_u64(), Some(n), "every shard runs at once");
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let c = &pod["containers"][0];
    // The index comes from the Job, spelled out through the downward API.
    let env = c["env"].as_array().unwrap();
    let index = env.iter().find(|e| e["name"] == "JOB_COMPLETION_INDEX").expect("JOB_COMPLETION_INDEX");
    assert_eq!(
        index["valueFrom"]["fieldRef"]["fieldPath"],
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    );
    let text = c["args"].to_string();
    assert!(text.contains(&format!("--shard=$(JOB_COMPLETION_INDEX)/{n}")), "{text}");
    assert!(text.contains("--start-at=$(START_AT)"), "{text}");
    assert!(std::fs::read_to_string(k8s("shards-job.yaml")).unwrap().contains("value: \"__START_AT__\""));
    // Each pod's args are a bench of shard i of n, writing its result and
    // records to the shared volume, stopped by SIGTERM within the pod's grace.
    for i in 0..n as u32 {
        let Command::Bench(b) = parsed(&c["args"], i).command else { panic!("not a bench") };
        assert_eq!(b.shard.shard, Some((i, n as u32)));
        assert_eq!(b.shard.start_at, Some(1_893_456_000.0));
        assert_eq!(b.output.output, Some(PathBuf::from(format!("/results/shard-{i}.json"))));
        assert_eq!(b.output.records, Some(PathBuf::from(format!("/results/shard-{i}.jsonl"))));
        let period = pod["terminationGracePeriodSeconds"].as_f64().unwrap();
        assert!(b.target.grace.as_secs_f64() < period / 2.0, "--grace well inside the pod's grace period");
    }
    assert_volume(pod, c);
}

#[test]
fn the_merge_job_reads_every_shard_from_the_volume() {
    let n = manifest("shards-job.yaml")["spec"]["completions"].as_u64().unwrap();
    let job = manifest("merge-job.yaml");
    let pod = &job["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    let Command::Merge(m) = parsed(&c["args"], 0).command else { panic!("not a merge") };
    let want: Vec<PathBuf> = (0..n).map(|i| PathBuf::from(format!("/results/shard-{i}.json"))).collect();
    assert_eq!(m.shards, want, "every shard's result, once");
    assert!(m.output.is_some() && m.exports.html.is_some() && m.records.is_some());
    assert_volume(pod, c);
    let pvc = manifest("pvc.yaml");
    assert_eq!(pvc["kind"], "PersistentVolumeClaim");
    assert_eq!(pvc["spec"]["accessModes"][0], "ReadWriteMany", "pods on several nodes write to it");
    assert_eq!(
        manifest("results-pod.yaml")["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"],
        pvc["metadata"]["name"]
    );
}

/// The pod mounts the claim pvc.yaml makes at /results.
fn assert_volume(pod: &Value, container: &Value) {
    let claim = manifest("pvc.yaml")["metadata"]["name"].clone();
    let vol = &pod["volumes"][0];
    assert_eq!(vol["persistentVolumeClaim"]["claimName"], claim);
    let mount = &container["volumeMounts"][0];
    assert_eq!((mount["name"].as_str(), mount["mountPath"].as_str()), (vol["name"].as_str(), Some("/results")));
}

#[test]
fn the_dockerfile_builds_a_static_binary_on_scratch() {
    let text = std::fs::read_to_string(k8s("Dockerfile")).unwrap();
    let froms: Vec<&str> = text.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(froms.len(), 2, "a build stage and the image: {froms:?}");
    assert!(froms[0].contains("alpine"), "built on musl: {}", froms[0]);
    assert_eq!(froms[1], "FROM scratch");
    // Built by the script that builds the release's static binary, so the
    // image carries the same one.
    assert!(text.contains("scripts/build-static"), "the image's binary comes from scripts/build-static");
    let script = std::fs::read_to_string(repo("scripts/build-static")).unwrap();
    assert!(script.contains("cargo build --release --locked -p goodput"));
    assert!(script.contains("CARGO_PROFILE_RELEASE_STRIP=true"), "stripped");
    assert!(text.contains("ENTRYPOINT [\"/goodput\"]"));
    let both = ["shards-job.yaml", "merge-job.yaml"]
        .map(|f| manifest(f)["spec"]["template"]["spec"]["containers"][0]["image"].clone());
    assert_eq!(both[0], both[1], "the shards and the merge run the same image");
    // The image's user owns what the pods write: a fresh volume is root's,
    // and without the pod's fsGroup the first write to /results fails.
    let user = text.lines().find_map(|l| l.strip_prefix("USER ")).expect("the image names its user");
    let (uid, gid) = user.split_once(':').unwrap();
    for f in ["shards-job.yaml", "merge-job.yaml"] {
        let sc = &manifest(f)["spec"]["template"]["spec"]["securityContext"];
        assert_eq!(sc["fsGroup"].as_u64().map(|g| g.to_string()).as_deref(), Some(gid), "{f}: fsGroup");
        assert_eq!(sc["runAsUser"].as_u64().map(|g| g.to_string()).as_deref(), Some(uid), "{f}: runAsUser");
        assert_eq!(sc["runAsNonRoot"], true, "{f}");
    }
}

fn action() -> Value {
    let text = std::fs::read_to_string(repo("action.yml")).unwrap();
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("action.yml is not YAML: {e}"))
}

#[test]
fn the_action_documents_and_wires_every_input_and_runs_none_as_code() {
    let action = action();
    let inputs = action["inputs"].as_object().unwrap();
    let steps = action["runs"]["steps"].as_array().unwrap();
    assert_eq!(action["runs"]["using"], "composite");
    let docs = std::fs::read_to_string(repo("docs/ci.md")).unwrap();
    let envs: Vec<&str> =
        steps.iter().flat_map(|s| s["env"].as_object().unwrap().values()).map(|v| v.as_str().unwrap()).collect();
    for (name, input) in inputs {
        let description = input["description"].as_str().unwrap_or_default();
        assert!(description.len() > 20, "input {name} says what it does: {description:?}");
        assert!(input["default"].is_string(), "input {name} has a default (string)");
        assert!(docs.contains(&format!("| `{name}` |")), "docs/ci.md lists input {name}");
        let used = format!("${{{{ inputs.{name} }}}}");
        assert!(envs.iter().any(|v| *v == used), "input {name} reaches a step, through its env");
    }
    for (name, output) in action["outputs"].as_object().unwrap() {
        assert!(output["description"].as_str().is_some_and(|d| !d.is_empty()), "output {name} is described");
        assert!(docs.contains(&format!("| `{name}` |")), "docs/ci.md lists output {name}");
    }
    for step in steps {
        // An input spliced into the script would run as code (a pull
        // request's title in `args`); through env it stays a value.
        let run = step["run"].as_str().unwrap();
        assert!(!run.contains("${{"), "step {} splices an expression into its script", step["id"]);
        assert_eq!(step["shell"], "bash");
    }
}

/// The flags the action's run step adds to goodput's command line
/// (`cmd+=(--flag "$VALUE")`), with a sample value for each flag that takes one.
fn action_flags() -> Vec<String> {
    let action = action();
    let run = action["runs"]["steps"].as_array().unwrap().iter().find(|s| s["id"] == "run").unwrap()["run"]
        .as_str()
        .unwrap()
        .to_string();
    let mut flags = Vec::new();
    for line in run.lines().filter_map(|l| l.trim().strip_prefix("cmd+=(")) {
        let mut words = line.trim_end_matches(')').split_whitespace().peekable();
        while let Some(word) = words.next() {
            if !word.starts_with("--") {
                continue;
            }
            flags.push(word.to_string());
            if words.peek().is_some_and(|w| w.starts_with('"')) {
                words.next();
                let sample = match word {
                    "--url" => "http://127.0.0.1:8000",
                    "--slo" => "ttft:p95<=500ms",
                    "--output" => "goodput-result.json",
                    "--markdown" => "summary.md",
                    other => panic!("the action passes {other} with a value: give it a sample value here"),
                };
                flags.push(sample.to_string());
            }
        }
    }
    flags
}

#[test]
fn the_actions_command_lines_are_ones_goodput_accepts() {
    let flags = action_flags();
    for f in ["--url", "--slo", "--fail-on-slo", "--output", "--markdown"] {
        assert!(flags.iter().any(|g| g == f), "the action passes {f}: {flags:?}");
    }
    let action = action();
    let commands = action["inputs"]["command"]["description"].as_str().unwrap();
    for command in ["bench", "sweep"] {
        assert!(commands.contains(&format!("`{command}`")));
        let argv = ["goodput", command].into_iter().map(String::from).chain(flags.iter().cloned());
        let cli = Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("goodput {command} {flags:?}: {e}"));
        match (command, &cli.command) {
            ("bench", Command::Bench(_)) | ("sweep", Command::Sweep(_)) => {}
            _ => panic!("goodput {command} parsed as another command"),
        }
    }
}

#[test]
fn the_wheel_carries_the_goodput_binary_at_the_workspaces_version() {
    let text = std::fs::read_to_string(repo("pyproject.toml")).unwrap();
    let py: toml::Table = toml::from_str(&text).unwrap_or_else(|e| panic!("pyproject.toml: {e}"));
    let maturin = &py["tool"]["maturin"];
    assert_eq!(maturin["bindings"].as_str(), Some("bin"));
    let manifest = repo(maturin["manifest-path"].as_str().unwrap());
    let cargo: toml::Table = toml::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    let bins = cargo["bin"].as_array().unwrap();
    assert!(
        bins.iter().any(|b| b["name"].as_str() == Some("goodput")),
        "{} builds the goodput binary",
        manifest.display()
    );
    // The version is Cargo's (one place to change it), and the command's name
    // is the binary's, whatever the package's name on PyPI.
    let project = py["project"].as_table().unwrap();
    assert!(!project.contains_key("version"));
    assert!(project["dynamic"].as_array().unwrap().iter().any(|d| d.as_str() == Some("version")));
    assert!(!project.contains_key("scripts"), "the command is the binary itself");
    assert_eq!(
        project["name"].as_str(),
        Some("goodput-bench"),
        "the name goodput is published under (`goodput` on PyPI is another project)"
    );
}
