//! The documentation against the program, so that it cannot drift: the README's captures and
//! examples are the program's real output (regenerated with `UPDATE_DOCS=1`), the JSON
//! schemas in `docs/schema` describe real output exactly, their enums are the code's, and every
//! `gpumon` command line in the README and `docs/` parses.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use gpumon::model::{HostStats, Sample};
use gpumon::tui::app::App;
use gpumon::tui::render_once;
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use regex::Regex;
use serde_json::Value;

use crate::common::{gpumon, gpumon_fake, scenario, stdout_json, MIB};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn updating() -> bool {
    std::env::var_os("UPDATE_DOCS").is_some_and(|v| v == "1")
}

// ---------------------------------------------------------------------------------------------
// Generated blocks: `<!-- generated: NAME -->` … `<!-- end generated -->` in a Markdown file.

/// How a block's text is compared with what the program prints now.
#[derive(Clone, Copy)]
enum Compare {
    /// Byte for byte.
    Exact,
    /// With every run of digits taken as one digit: the demo's clock, timestamps and ages move
    /// from run to run, the layout, fields and units must not.
    Shape,
    /// `estimate`'s report: the model's figures (parts, peak, what each change saves) byte for
    /// byte; the GPUs' lines and the plan for the freest GPU, which follow the demo's moving
    /// free memory, by their shape.
    Estimate,
}

/// The lines of an `estimate` report that follow the GPUs' live free memory.
fn estimate_volatile(text: &str) -> (Vec<&str>, String) {
    let mut fixed = Vec::new();
    let mut volatile = Vec::new();
    let mut plan = false;
    for line in text.lines() {
        plan |= line.starts_with("The fewest") || line.starts_with("Nothing fits");
        if plan || line.starts_with("  [") {
            volatile.push(line);
        } else {
            fixed.push(line);
        }
    }
    (fixed, shape(&volatile.join("\n")))
}

fn shape(text: &str) -> String {
    static DIGITS: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    static UNITS: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let re = DIGITS.get_or_init(|| Regex::new(r"[0-9]+(\.[0-9]+)?").expect("regex"));
    // The host's own figures change unit with the machine: 594.6 MiB or 1.7 GiB of memory,
    // up 12m05s or 1d02h. A size is a size, an age an age.
    let units = UNITS.get_or_init(|| {
        Regex::new(r"\b[0-9]+(\.[0-9]+)? (B|KiB|MiB|GiB|TiB)\b|\b[0-9]+[dhms]([0-9]+[hms])?\b")
            .expect("regex")
    });
    let text = units.replace_all(text, |c: &regex::Captures| {
        if c.get(2).is_some() {
            "9 B".to_owned()
        } else {
            "9s".to_owned()
        }
    });
    // Column padding moves with the number of digits: compare words, not spaces.
    re.replace_all(&text, "9")
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Checks (or, with `UPDATE_DOCS=1`, rewrites) every generated block of `file` against
/// `blocks`, and that the file has no generated block that is not in `blocks`.
fn check_generated(file: &str, blocks: &[(&str, String, Compare)]) {
    let text = read(file);
    let start = Regex::new(r"(?m)^<!-- generated: ([a-z0-9-]+) [^\n]*-->\n").expect("regex");
    let end = "<!-- end generated -->";
    let mut out = String::new();
    let mut rest = text.as_str();
    let mut seen = Vec::new();
    let mut stale = Vec::new();
    while let Some(m) = start.captures(rest) {
        let whole = m.get(0).expect("match");
        let name = m[1].to_owned();
        out.push_str(&rest[..whole.end()]);
        let body_at = whole.end();
        let body_len = rest[body_at..]
            .find(end)
            .unwrap_or_else(|| panic!("{file}: block {name} has no `{end}`"));
        let body = &rest[body_at..body_at + body_len];
        let (_, want, compare) = blocks
            .iter()
            .find(|(n, _, _)| *n == name)
            .unwrap_or_else(|| panic!("{file}: no generator for block {name}"));
        let same = match compare {
            Compare::Exact => body == want,
            Compare::Shape => shape(body) == shape(want),
            Compare::Estimate => estimate_volatile(body) == estimate_volatile(want),
        };
        if !same {
            stale.push(format!(
                "block {name}:\n--- in {file}\n{body}\n--- the program now\n{want}"
            ));
        }
        out.push_str(if same { body } else { want });
        rest = &rest[body_at + body_len..];
        seen.push(name);
    }
    out.push_str(rest);
    for (name, _, _) in blocks {
        assert!(
            seen.iter().any(|s| s == name),
            "{file}: block {name} is missing"
        );
    }
    if updating() {
        if out != text {
            std::fs::write(root().join(file), out).expect("write");
        }
    } else {
        assert!(
            stale.is_empty(),
            "{file} is out of date (UPDATE_DOCS=1 cargo test --test integration docs:: rewrites it):\n{}",
            stale.join("\n")
        );
    }
}

fn fenced(lang: &str, body: &str) -> String {
    format!("```{lang}\n{}\n```\n", body.trim_end_matches('\n'))
}

// ---------------------------------------------------------------------------------------------
// The README.

/// `gpumon --demo --history 2m` at 100×32, `SECONDS` after it started, drawn from the demo
/// scenario at fixed moments (with a fixed host line), so the capture is the same on every run.
fn dashboard_capture() -> String {
    use gpumon::collect::source::simulated::Simulated;
    const SECONDS: u64 = 110;
    const T0: u64 = 1_795_000_000;
    let demo = Simulated::demo().expect("the demo scenario");
    let mut app = App::new(&crate::common::dashboard_settings(
        Duration::from_secs(1),
        Duration::from_secs(120),
    ));
    let mut terminal = Terminal::new(TestBackend::new(100, 32)).expect("terminal");
    let mut util_seen = Vec::new();
    for k in 0..=SECONDS {
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(T0 + k);
        let mut devices = demo.devices_at(42.0 + k as f64, wall, &mut util_seen);
        for d in &mut devices {
            d.data_age_ms = Some(0);
        }
        let sample = Arc::new(Sample {
            timestamp: wall,
            hostname: Some("gpu-node-1".into()),
            source: "simulated",
            driver_version: Some("550.54.15".into()),
            cuda_version: Some("12.4".into()),
            devices,
            error: None,
            host: Some(HostStats {
                cpu_percent: Some(27.0),
                cpu_count: Some(64),
                memory_total_bytes: Some(512 * 1024 * MIB),
                memory_used_bytes: Some(61 * 1024 * MIB),
                memory_available_bytes: Some(451 * 1024 * MIB),
                swap_total_bytes: Some(0),
                swap_used_bytes: Some(0),
                load_average: Some([18.2, 17.9, 15.3]),
                uptime_s: Some(9 * 86400 + 3 * 3600),
                pids_hidden: false,
            }),
        });
        if k < SECONDS {
            app.on_sample(sample);
        } else {
            render_once(&mut terminal, &mut app, sample).expect("draw");
        }
    }
    let buffer = terminal.backend().buffer();
    let mut text = String::new();
    for y in 0..buffer.area.height {
        let mut line = String::new();
        for x in 0..buffer.area.width {
            line.push_str(buffer[(x, y)].symbol());
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    fenced("text", &text)
}

/// The dashboard's keys as one Markdown table, from the help screen's own list.
fn keys_table() -> String {
    let mut t = String::from("| Key | What it does |\n| --- | --- |\n");
    for (k, what) in gpumon::tui::ui::KEYS {
        let keys: Vec<String> = k.split(", ").map(|k| format!("`{k}`")).collect();
        writeln!(t, "| {} | {} |", keys.join(", "), what.replace('|', "\\|")).expect("write");
    }
    t
}

/// What `gpumon` prints for `args` (run as the README shows it, on the demo).
fn output(args: &[&str], env: &[(&str, &str)]) -> String {
    let mut cmd = gpumon();
    cmd.args(args).env("COLUMNS", "100");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run gpumon");
    assert!(
        out.status.success(),
        "gpumon {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

const EXPLAIN_EXAMPLE: &str = "assets/oom/pytorch2-this-process.txt";

fn explain_example() -> String {
    let error = read(EXPLAIN_EXAMPLE);
    let report = output(&["explain", EXPLAIN_EXAMPLE], &[]);
    format!(
        "{}\n{}",
        fenced("text", &error),
        fenced("text", &format!("$ gpumon explain error.txt\n{report}"))
    )
}

const LOG_ARGS: &[&str] = &[
    "--demo",
    "log",
    "--count",
    "1",
    "--format",
    "table",
    "--fields",
    "timestamp,index,mig.profile,memory.used,memory.total,utilization.gpu,power.draw,processes.count",
];

fn log_example() -> String {
    fenced(
        "text",
        &format!("$ gpumon {}\n{}", LOG_ARGS.join(" "), output(LOG_ARGS, &[])),
    )
}

fn once_example() -> String {
    fenced(
        "text",
        &format!("$ gpumon --demo once\n{}", output(&["--demo", "once"], &[])),
    )
}

#[test]
fn the_readme_shows_what_the_program_does_now() {
    check_generated(
        "README.md",
        &[
            ("dashboard", dashboard_capture(), Compare::Exact),
            ("keys", keys_table(), Compare::Exact),
            ("explain", explain_example(), Compare::Exact),
            ("log", log_example(), Compare::Shape),
            ("once", once_example(), Compare::Shape),
        ],
    );
}

/// The README for users: short, and its first example early.
#[test]
fn the_readme_stays_a_guide() {
    let text = read("README.md");
    let lines = text.lines().count();
    assert!(
        lines < 450,
        "README.md is {lines} lines: move details to docs/"
    );
    let first_example = text
        .lines()
        .position(|l| l.starts_with("$ gpumon explain"))
        .expect("an explain example");
    assert!(
        first_example < 120,
        "the first explain example is at line {}",
        first_example + 1
    );
    // Each command has its section.
    for command in [
        "explain", "log", "once", "run", "serve", "estimate", "pick", "man",
    ] {
        assert!(
            text.contains(&format!("## `gpumon {command}")),
            "no section for gpumon {command}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// docs/serve.md's metrics table, from a live exposition; docs/estimate.md's example.

/// Every metric family `gpumon --demo serve --process-labels user,command` exports, with its
/// type, its labels and its help, in the order served.
fn metrics_table() -> String {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_gpumon"))
        .args([
            "--demo",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--process-labels",
            "user,command",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start gpumon serve");
    let addr = crate::common::serve_address(&mut child);
    let body = crate::serve::wait_for(&format!("http://{addr}/metrics"), "metrics", |b| {
        // The demo's Xid comes 2 s after it starts.
        b.contains("gpumon_allocator_allocated_bytes{") && b.contains("gpumon_xid_errors_total{")
    });
    let _ = child.kill();
    let _ = child.wait();
    struct Family {
        name: String,
        kind: String,
        help: String,
        labels: Vec<String>,
    }
    let mut families: Vec<Family> = Vec::new();
    let label = Regex::new(r#"([A-Za-z_][A-Za-z0-9_]*)=""#).expect("regex");
    for line in body.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            families.push(Family {
                name: name.to_owned(),
                kind: String::new(),
                help: help.to_owned(),
                labels: Vec::new(),
            });
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            if let (Some(f), Some((_, kind))) = (families.last_mut(), rest.split_once(' ')) {
                f.kind = kind.to_owned();
            }
        } else if !line.starts_with('#') && !line.is_empty() {
            let Some(f) = families.last_mut() else {
                continue;
            };
            if let Some((_, labels)) = line.split_once('{') {
                for c in label.captures_iter(labels) {
                    if !f.labels.iter().any(|l| l == &c[1]) {
                        f.labels.push(c[1].to_owned());
                    }
                }
            }
        }
    }
    let mut t = String::from("| metric | type | labels | meaning |\n| --- | --- | --- | --- |\n");
    for f in &families {
        writeln!(
            t,
            "| `{}` | {} | {} | {} |",
            f.name,
            f.kind,
            f.labels
                .iter()
                .map(|l| format!("`{l}`"))
                .collect::<Vec<_>>()
                .join(", "),
            f.help.replace('|', "\\|")
        )
        .expect("write");
    }
    t
}

const ESTIMATE_ARGS: &[&str] = &[
    "--demo",
    "estimate",
    "--model",
    "tests/fixtures/configs/llama-2-7b.json",
    "--batch",
    "4",
    "--seq-len",
    "2048",
    "--mixed-precision",
    "--optimizer",
    "adamw",
];

fn estimate_example() -> String {
    let mut cmd = gpumon();
    cmd.args(ESTIMATE_ARGS)
        .env("COLUMNS", "100")
        .current_dir(root());
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    fenced(
        "text",
        &format!(
            "$ gpumon {}\n{}",
            ESTIMATE_ARGS.join(" "),
            String::from_utf8_lossy(&out.stdout)
        ),
    )
}

#[test]
fn the_metrics_reference_is_what_serve_exports() {
    check_generated(
        "docs/serve.md",
        &[("metrics", metrics_table(), Compare::Exact)],
    );
}

#[test]
fn the_estimate_example_is_real() {
    check_generated(
        "docs/estimate.md",
        &[("example", estimate_example(), Compare::Estimate)],
    );
}

// ---------------------------------------------------------------------------------------------
// Links: every relative link in the README and docs/ names a file that exists, and every
// `#anchor` a heading.

fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md"), root().join("CHANGELOG.md")];
    let mut dirs = vec![root().join("docs"), root().join("assets")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir").flatten() {
            let p = entry.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "md") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

/// GitHub's anchor for a heading.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(text: &str) -> Vec<String> {
    let mut in_code = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            out.push(anchor(line.trim_start_matches('#')));
        }
    }
    out
}

#[test]
fn links_in_the_docs_lead_somewhere() {
    let link = Regex::new(r"\]\(([^)\s]+)\)").expect("regex");
    let mut broken = Vec::new();
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).expect("read");
        let dir = file.parent().expect("dir");
        for c in link.captures_iter(&text) {
            let target = &c[1];
            if target.starts_with("http://") || target.starts_with("https://") {
                continue;
            }
            let (path, frag) = target.split_once('#').unwrap_or((target, ""));
            let resolved: PathBuf = if path.is_empty() {
                file.clone()
            } else {
                dir.join(path)
            };
            if !resolved.exists() {
                broken.push(format!("{}: {target}", file.display()));
                continue;
            }
            if !frag.is_empty() && resolved.extension().is_some_and(|e| e == "md") {
                let t = std::fs::read_to_string(&resolved).expect("read");
                if !anchors(&t).iter().any(|a| a == frag) {
                    broken.push(format!("{}: {target} (no such heading)", file.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// Every `gpumon …` line in a shell or text block of the README and docs/ is a command line
/// gpumon accepts (so an example never names a flag that was renamed or removed).
#[test]
fn every_command_line_in_the_docs_parses() {
    use clap::Parser;
    let mut bad = Vec::new();
    let mut count = 0;
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).expect("read");
        let mut lang: Option<String> = None;
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("```") {
                lang = match lang {
                    Some(_) => None,
                    None => Some(rest.trim().to_owned()),
                };
                continue;
            }
            // Shell blocks are commands; in text blocks (captured output), only what follows
            // a `$ ` prompt is.
            let line = match lang.as_deref() {
                Some("sh" | "console") => line,
                Some("text") => match line.strip_prefix("$ ") {
                    Some(rest) => rest,
                    None => continue,
                },
                _ => continue,
            };
            let Some(at) = line.find("gpumon ").filter(|&i| {
                let before = line[..i].trim_end();
                before.is_empty() || before.ends_with('|')
            }) else {
                continue;
            };
            // The command ends at a pipe, a redirection, a comment or `&`.
            let cmd = line[at..]
                .split(['|', '>', '#', '&', ';'])
                .next()
                .unwrap_or_default()
                .trim();
            let Some(words) = shlex::split(cmd) else {
                bad.push(format!("{}: unbalanced quotes: {cmd}", file.display()));
                continue;
            };
            // `gpumon run -- CMD` and `gpumon run … -- CMD`: only gpumon's part is parsed here.
            count += 1;
            if let Err(e) = gpumon::cli::Cli::try_parse_from(&words) {
                if !matches!(
                    e.kind(),
                    clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
                ) {
                    bad.push(format!("{}: {cmd}\n{e}", file.display()));
                }
            }
        }
    }
    assert!(count > 20, "only {count} command lines found");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// The JSON schemas.

fn schema(name: &str) -> (Value, jsonschema::Validator) {
    let text = read(&format!("docs/schema/{name}"));
    let value: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&value)
        .unwrap_or_else(|e| panic!("{name} is not a valid schema: {e}"));
    (value, validator)
}

/// A schema and its validator, for the tests of other outputs.
pub fn schema_pub(name: &str) -> (Value, jsonschema::Validator) {
    schema(name)
}

/// `once --json`'s schema, for the tests of other outputs that carry the same sample.
pub fn once_validator() -> jsonschema::Validator {
    schema("once.schema.json").1
}

pub fn assert_valid(validator: &jsonschema::Validator, instance: &Value, what: &str) {
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{} (at {})", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what} does not match its schema:\n{}\n{}",
        errors.join("\n"),
        serde_json::to_string_pretty(instance).unwrap_or_default()
    );
}

/// A sample that has every kind of device state and optional field: faults, a lost GPU, a
/// process list denied, a container, an allocator split and a stalled GPU.
const EVERYTHING: &str = r#"{
  "version": 1,
  "devices": [
    {"name": "G0", "memory_total_mib": 1024, "fan_percent": 40,
     "processes": [
       {"pid": 4100001, "memory_mib": 100, "sm_percent": 50, "mem_bw_percent": 20},
       {"pid": 4100002, "memory_mib": 50}]},
    {"name": "G1", "memory_total_mib": 1024, "processes": [{"pid": 4100004, "memory_mib": 10}]},
    {"name": "G2", "memory_total_mib": 1024, "processes": [{"pid": 4100005, "memory_mib": 10}]},
    {"name": "G3", "memory_total_mib": 1024},
    {"name": "G4", "memory_total_mib": 1024}
  ],
  "faults": [
    {"kind": "not_supported", "device": 0, "field": "fan"},
    {"kind": "process_memory_unavailable", "pid": 4100002},
    {"kind": "device_lost", "device": 1},
    {"kind": "no_permission", "device": 2, "field": "processes"},
    {"kind": "hang", "device": 3, "block_s": 30},
    {"kind": "garbage", "device": 4, "field": "memory", "value": 20000000000000000}
  ]
}"#;

#[test]
fn once_json_is_what_its_schema_says() {
    let (_, v) = schema("once.schema.json");
    // The demo: processes in a container and with PyTorch's allocator split, a host line.
    let demo = stdout_json(gpumon().args(["--demo", "once", "--json"]));
    assert_eq!(demo["schema_version"], 1);
    assert_valid(&v, &demo, "once --json on the demo");
    // Faults of every kind, a stalled GPU, and no process lists.
    let s = scenario(EVERYTHING);
    for extra in [&[][..], &["--no-processes"][..]] {
        let mut cmd = gpumon_fake(&s, 1.0);
        cmd.args(["once", "--json", "--timeout", "500ms"])
            .args(extra);
        let sample = stdout_json(&mut cmd);
        let d = &sample["devices"];
        assert_eq!(d[1]["error"], "GPU is lost", "{sample}");
        assert_eq!(d[3]["stalled"], true, "{sample}");
        if extra.is_empty() {
            assert!(d[2]["processes_error"].is_string(), "{sample}");
            assert!(
                d[0]["processes"][1]["gpu_memory_bytes"].is_null(),
                "{sample}"
            );
        }
        assert_valid(&v, &sample, &format!("once --json {extra:?} with faults"));
    }
    // No driver at all: the error, and no devices.
    let out = gpumon()
        .args([
            "once",
            "--json",
            "--nvml-lib",
            "/nonexistent/libnvidia-ml.so.1",
        ])
        .output()
        .expect("run");
    if let Ok(sample) = serde_json::from_slice::<Value>(&out.stdout) {
        assert_valid(&v, &sample, "once --json without a driver");
    }
}

#[test]
fn the_schema_rejects_what_gpumon_never_prints() {
    let (_, v) = schema("once.schema.json");
    let demo = stdout_json(gpumon().args(["--demo", "once", "--json"]));
    let mut unknown_field = demo.clone();
    unknown_field["devices"][0]["memory"]["shared_bytes"] = 1.into();
    let mut zero_for_unknown = demo.clone();
    zero_for_unknown["devices"][0]["utilization"]["gpu_percent"] = "N/A".into();
    let mut bad_kind = demo.clone();
    bad_kind["devices"][0]["breakdown"]["parts"][0]["kind"] = "driver".into();
    let mut epoch_timestamp = demo;
    epoch_timestamp["timestamp"] = 1_795_000_000.into();
    for (what, bad) in [
        ("an undocumented field", unknown_field),
        ("a string for a percent", zero_for_unknown),
        ("an unknown part kind", bad_kind),
        ("a timestamp in epoch seconds", epoch_timestamp),
    ] {
        assert!(!v.is_valid(&bad), "the schema accepts {what}");
    }
}

#[test]
fn explain_snapshot_json_is_what_its_schema_says() {
    let (_, v) = schema("snapshot.schema.json");
    for name in ["fragmented", "too-much"] {
        let path = root().join(format!("tests/fixtures/snapshots/{name}.pickle"));
        let out = gpumon()
            .args(["explain", "--json", "--snapshot"])
            .arg(&path)
            .output()
            .expect("run");
        assert!(out.status.success(), "{name}");
        let j: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_valid(&v, &j, name);
    }
    // The schema can fail: a verdict of an unknown kind, a negative size.
    for (field, bad) in [
        ("verdict", serde_json::json!({"kind": "maybe"})),
        ("reserved", serde_json::json!(-1)),
    ] {
        let out = gpumon()
            .args(["explain", "--json", "--snapshot"])
            .arg(root().join("tests/fixtures/snapshots/fragmented.pickle"))
            .output()
            .expect("run");
        let mut j: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        j[field] = bad;
        assert!(!v.is_valid(&j), "the schema accepts a bad {field}");
    }
}

#[test]
fn explain_json_is_what_its_schema_says() {
    let (_, v) = schema("explain.schema.json");
    let corpus = root().join("assets/oom");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&corpus)
        .expect("corpus")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    assert!(files.len() > 100);
    // Every corpus message's JSON, made in this process the way `explain --json` makes it (the
    // streaming scanner, then the renderer; the fields that depend on the machine are null
    // here), is checked against the schema. The binary then runs on messages that between them
    // give every framework and every cause the corpus has, and each oddity of bytes it holds,
    // and its output must be that same JSON. The binary's path from a file to its JSON is the same for every format; a process
    // per message cost CI a quarter of an hour, and one per format, framework and cause (294)
    // two minutes of its two cores.
    let mut causes = std::collections::BTreeSet::new();
    let mut frameworks = std::collections::BTreeSet::new();
    let mut quirks = std::collections::BTreeSet::new();
    let mut picked = Vec::new();
    for f in &files {
        let mut scanner = gpumon::oom::scan::Scanner::new();
        gpumon::oom::scan::for_each_line(std::fs::File::open(f).expect("open"), |l, quiet| {
            scanner.push_noted(l, quiet)
        })
        .expect("read");
        let analysis = scanner.finish();
        let mut j =
            serde_json::to_value(gpumon::oom::render::to_json_with(&analysis, None)).expect("JSON");
        for key in ["here", "container_limit", "recording"] {
            j[key] = Value::Null;
        }
        assert_valid(&v, &j, &f.display().to_string());
        let mut new = frameworks.insert(j["framework"].to_string());
        for finding in j["findings"].as_array().into_iter().flatten() {
            new |= causes.insert(finding["cause"].as_str().unwrap_or_default().to_owned());
        }
        // And the first file with each oddity of its bytes the binary must read as the scanner
        // does: CRLF, a byte-order mark, a tab, text beyond ASCII, a line over 1,000 bytes.
        let bytes = std::fs::read(f).expect("read");
        for (quirk, has) in [
            ("crlf", bytes.windows(2).any(|w| w == b"\r\n")),
            ("bom", bytes.starts_with(&[0xef, 0xbb, 0xbf])),
            ("tab", bytes.contains(&b'\t')),
            ("non-ascii", !bytes.is_ascii()),
            (
                "long line",
                bytes.split(|b| *b == b'\n').any(|l| l.len() > 1000),
            ),
        ] {
            if has {
                new |= quirks.insert(quirk);
            }
        }
        if new {
            picked.push((f.clone(), j));
        }
    }
    assert!(frameworks.len() > 30, "only {frameworks:?}");
    assert!(picked.len() >= 40, "only {} picked", picked.len());
    assert!(quirks.len() >= 3, "the corpus has only {quirks:?}");
    // As many processes at once as there are cores (each mostly compiles its patterns; the
    // tests beside this one mostly wait).
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let chunk = picked.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for part in picked.chunks(chunk) {
            let v = &v;
            s.spawn(move || {
                for (f, mine) in part {
                    let out = gpumon()
                        .args(["explain", "--json", "--offline"])
                        .arg(f)
                        .output()
                        .expect("run");
                    let mut j: Value = serde_json::from_slice(&out.stdout).expect("JSON");
                    assert_valid(v, &j, &f.display().to_string());
                    // Offline: nothing on this machine is asked what holds the device; no
                    // recording.
                    for key in ["here", "container_limit", "recording"] {
                        assert_eq!(j[key], Value::Null, "{}: {key}", f.display());
                        j[key] = Value::Null;
                    }
                    assert_eq!(&j, mine, "{}: the binary's JSON differs", f.display());
                }
            });
        }
    });
    // Nothing found, and remedies sized by an estimate.
    let none = gpumon()
        .args(["explain", "--json"])
        .write_stdin("all good\n")
        .output()
        .expect("run");
    assert_eq!(none.status.code(), Some(1));
    let j: Value = serde_json::from_slice(&none.stdout).expect("JSON");
    assert_valid(&v, &j, "explain --json with no OOM");
    let sized = stdout_json(
        gpumon()
            .args(["explain", "--json", "--estimate", "--params 7B --batch 8"])
            .arg(root().join(EXPLAIN_EXAMPLE)),
    );
    assert_valid(&v, &sized, "explain --json --estimate");
    // TensorRT-LLM's executor report with no component before the failed one: its
    // components are in the schema too.
    let report = gpumon()
        .args(["explain", "--json"])
        .write_stdin(
            "RuntimeError: Executor creation failed due to insufficient GPU memory.\n\n\
             The following component could not be created: Model\n\
             Total GPU memory (GiB): 23.53\n\
             Free GPU memory before component creation attempt (GiB): 22.90\n\n\
             Previously created components and free GPU memory before/after creation (GiB):\n\n\
             Please refer to the TensorRT LLM documentation. Possible options include:\n\
             \x20 Model: reduce max_num_tokens and/or shard the model weights\n",
        )
        .output()
        .expect("run");
    let j: Value = serde_json::from_slice(&report.stdout).expect("JSON");
    assert_valid(&v, &j, "explain --json on TensorRT-LLM's executor report");
    assert_eq!(
        j["breakdown"]["components"],
        serde_json::json!([{"name": "Model", "free_before_bytes": 24588687770_u64, "free_after_bytes": null}]),
        "{j}"
    );
    // 22.9 of 23.5 GiB free: the figures do not explain it, and the model's knob is offered.
    assert_eq!(j["findings"][0]["cause"], "unexplained", "{j}");
    assert!(j["findings"][0]["remedies"]
        .as_array()
        .is_some_and(|r| r.iter().any(|r| r["text"]
            .as_str()
            .is_some_and(|t| t.contains("tensor_parallel_size")))));
    assert!(causes.len() >= 8, "the corpus exercises only {causes:?}");
}

#[test]
fn estimate_json_is_what_its_schema_says() {
    let (_, v) = schema("estimate.schema.json");
    let model = crate::common::sharded_model();
    let model = model.path().to_str().expect("utf-8");
    let cases: &[&[&str]] = &[
        &[
            "--demo", "--params", "7B", "--layers", "32", "--hidden", "4096", "--heads", "32",
        ],
        &["--demo", "--params", "125M", "--batch", "1"],
        &["--demo", "--model", model, "--inference", "--dtype", "int4"],
        &[
            "--nvml-lib",
            "/nonexistent/libnvidia-ml.so.1",
            "--params",
            "70B",
            "--optimizer",
            "adamw-8bit",
            "--lora-rank",
            "8",
            "--checkpointing",
            "full",
            "--attention",
            "eager",
        ],
    ];
    for args in cases {
        let out = gpumon()
            .arg("estimate")
            .args(*args)
            .arg("--json")
            .current_dir(root())
            .output()
            .expect("run");
        let j: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "estimate {args:?}: {e}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        assert_valid(&v, &j, &format!("estimate {args:?}"));
    }
}

fn enum_of(schema: &Value, def: &str) -> Vec<String> {
    schema["$defs"][def]["enum"]
        .as_array()
        .unwrap_or_else(|| panic!("no enum {def}"))
        .iter()
        .map(|v| v.as_str().expect("string").to_owned())
        .collect()
}

fn names<T: serde::Serialize>(all: &[T]) -> Vec<String> {
    all.iter()
        .map(|v| match serde_json::to_value(v).expect("json") {
            Value::String(s) => s,
            Value::Object(o) => o["kind"].as_str().expect("tagged").to_owned(),
            other => panic!("{other}"),
        })
        .collect()
}

/// The schemas' enums are the code's: each list below names every variant (a match makes
/// a new variant a compile error here until it is listed and documented).
#[test]
fn the_schemas_name_every_value_the_code_can_print() {
    use gpumon::model::breakdown::PartKind;
    use gpumon::model::ProcessKind;
    use gpumon::oom::diagnose::Cause;
    use gpumon::oom::Framework;

    let kinds = [
        PartKind::Process { pid: 1 },
        PartKind::Allocated,
        PartKind::Cached,
        PartKind::Reserved,
        PartKind::NonFramework,
        PartKind::ThisProcess,
        PartKind::OtherApps,
        PartKind::Unattributed,
        PartKind::Used,
        PartKind::DriverReserved,
        PartKind::Free,
        PartKind::Unaccounted,
    ];
    for k in kinds {
        match k {
            PartKind::Process { .. }
            | PartKind::Allocated
            | PartKind::Cached
            | PartKind::Reserved
            | PartKind::NonFramework
            | PartKind::ThisProcess
            | PartKind::OtherApps
            | PartKind::Unattributed
            | PartKind::Used
            | PartKind::DriverReserved
            | PartKind::Free
            | PartKind::Unaccounted => {}
        }
    }
    let frameworks = [
        Framework::Pytorch,
        Framework::Hip,
        Framework::Xpu,
        Framework::Mps,
        Framework::Tensorflow,
        Framework::Jax,
        Framework::Cuda,
        Framework::Onnxruntime,
        Framework::Ggml,
        Framework::Vllm,
        Framework::Cupy,
        Framework::Paddle,
        Framework::Tensorrt,
        Framework::Rocm,
        Framework::Triton,
        Framework::Unknown,
        Framework::Rmm,
        Framework::Numba,
        Framework::Mxnet,
        Framework::TensorrtLlm,
        Framework::VllmRs,
        Framework::Npu,
        Framework::Mlu,
        Framework::Musa,
        Framework::Gcu,
        Framework::Hpu,
        Framework::Mlx,
        Framework::PytorchXla,
        Framework::Neuron,
        Framework::Tgi,
        Framework::Sglang,
        Framework::MlcLlm,
        Framework::Tvm,
        Framework::RtpLlm,
        Framework::Deepspeed,
        Framework::Wgpu,
        Framework::Xgboost,
        Framework::Catboost,
        Framework::Lightgbm,
        Framework::Faiss,
        Framework::Sophgo,
        Framework::Mindspore,
        Framework::OpenCl,
        Framework::Vulkan,
        Framework::DirectMl,
        Framework::Direct3d,
        Framework::Metal,
        Framework::OpenGl,
        Framework::Darknet,
        Framework::Caffe,
        Framework::OpenCv,
    ];
    for f in frameworks {
        match f {
            Framework::Pytorch
            | Framework::Hip
            | Framework::Xpu
            | Framework::Mps
            | Framework::Tensorflow
            | Framework::Jax
            | Framework::Cuda
            | Framework::Onnxruntime
            | Framework::Ggml
            | Framework::Vllm
            | Framework::Cupy
            | Framework::Paddle
            | Framework::Tensorrt
            | Framework::Rocm
            | Framework::Triton
            | Framework::Unknown
            | Framework::Rmm
            | Framework::Numba
            | Framework::Mxnet
            | Framework::TensorrtLlm
            | Framework::VllmRs
            | Framework::Npu
            | Framework::Mlu
            | Framework::Musa
            | Framework::Gcu
            | Framework::Hpu
            | Framework::Mlx
            | Framework::PytorchXla
            | Framework::Neuron
            | Framework::Tgi
            | Framework::Sglang
            | Framework::MlcLlm
            | Framework::Tvm
            | Framework::RtpLlm
            | Framework::Deepspeed
            | Framework::Wgpu
            | Framework::Xgboost
            | Framework::Catboost
            | Framework::Lightgbm
            | Framework::Faiss
            | Framework::Sophgo
            | Framework::Mindspore
            | Framework::OpenCl
            | Framework::Vulkan
            | Framework::DirectMl
            | Framework::Direct3d
            | Framework::Metal
            | Framework::OpenGl
            | Framework::Darknet
            | Framework::Caffe
            | Framework::OpenCv => {}
        }
    }
    let causes = [
        Cause::RequestExceedsTotal,
        Cause::ProcessCap,
        Cause::OtherProcesses,
        Cause::DeviceInUse,
        Cause::Fragmentation,
        Cause::FrameworkAllocations,
        Cause::OutsideFramework,
        Cause::FrameworkSettings,
        Cause::NoNumbers,
        Cause::RequestOnly,
        Cause::Unexplained,
        Cause::ImplausibleFigures,
        Cause::SharedMemory,
        Cause::HostMemory,
        Cause::Unrecognised,
        Cause::PinnedHostMemory,
        Cause::BufferCount,
        Cause::SpilledToSystemMemory,
        Cause::TpuOnChipMemory,
        Cause::ZeroByteRequest,
        Cause::IntegratedGpu,
    ];
    for c in causes {
        match c {
            Cause::RequestExceedsTotal
            | Cause::ProcessCap
            | Cause::OtherProcesses
            | Cause::DeviceInUse
            | Cause::Fragmentation
            | Cause::FrameworkAllocations
            | Cause::OutsideFramework
            | Cause::FrameworkSettings
            | Cause::NoNumbers
            | Cause::RequestOnly
            | Cause::Unexplained
            | Cause::ImplausibleFigures
            | Cause::SharedMemory
            | Cause::HostMemory
            | Cause::Unrecognised
            | Cause::PinnedHostMemory
            | Cause::BufferCount
            | Cause::SpilledToSystemMemory
            | Cause::TpuOnChipMemory
            | Cause::ZeroByteRequest
            | Cause::IntegratedGpu => {}
        }
    }
    let process_kinds = [
        ProcessKind::Compute,
        ProcessKind::Graphics,
        ProcessKind::Both,
    ];
    use gpumon::model::owner::OwnerKind;
    let owner_kinds = [
        OwnerKind::Kubernetes,
        OwnerKind::Slurm,
        OwnerKind::Docker,
        OwnerKind::Podman,
        OwnerKind::Containerd,
        OwnerKind::CriO,
        OwnerKind::Lxc,
        OwnerKind::Container,
        OwnerKind::Systemd,
    ];
    for k in owner_kinds {
        match k {
            OwnerKind::Kubernetes
            | OwnerKind::Slurm
            | OwnerKind::Docker
            | OwnerKind::Podman
            | OwnerKind::Containerd
            | OwnerKind::CriO
            | OwnerKind::Lxc
            | OwnerKind::Container
            | OwnerKind::Systemd => {}
        }
    }

    let (once, _) = schema("once.schema.json");
    let (explain, _) = schema("explain.schema.json");
    let (estimate, _) = schema("estimate.schema.json");
    assert_eq!(enum_of(&once, "part_kind"), names(&kinds));
    assert_eq!(explain["$defs"]["part_kind"], once["$defs"]["part_kind"]);
    assert_eq!(explain["$defs"]["part"], once["$defs"]["part"]);
    assert_eq!(explain["$defs"]["breakdown"], once["$defs"]["breakdown"]);
    assert_eq!(
        once["$defs"]["process"]["properties"]["kind"]["enum"],
        serde_json::to_value(names(&process_kinds)).expect("json")
    );
    assert_eq!(enum_of(&once, "owner_kind"), names(&owner_kinds));
    assert_eq!(enum_of(&explain, "framework"), names(&frameworks));
    assert_eq!(enum_of(&explain, "cause"), names(&causes));

    use gpumon::estimate::memory::{Attention, Checkpointing, Choice, Dtype, Optimizer};
    fn choices<T: Choice>() -> Vec<String> {
        T::ALL.iter().map(|(n, _)| (*n).to_owned()).collect()
    }
    assert_eq!(enum_of(&estimate, "dtype"), choices::<Dtype>());
    assert_eq!(enum_of(&estimate, "optimizer"), choices::<Optimizer>());
    assert_eq!(
        enum_of(&estimate, "checkpointing"),
        choices::<Checkpointing>()
    );
    assert_eq!(enum_of(&estimate, "attention"), choices::<Attention>());
    // Every described kind and cause is named in its description.
    for (schema, def) in [
        (&once, "part_kind"),
        (&explain, "cause"),
        (&explain, "framework"),
    ] {
        let description = schema["$defs"][def]["description"]
            .as_str()
            .unwrap_or_default();
        for v in enum_of(schema, def) {
            let said = description.starts_with(&format!("{v}:"))
                || description.contains(&format!(" {v}:"))
                || description.contains(&format!(" {v};"));
            assert!(said, "{def}: {v} is not described");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// docs/json.md: a reference generated from the schemas, and a real sample.

/// One row per property: its path, its JSON types and its description.
fn reference(schema: &Value) -> String {
    fn types(node: &Value, root: &Value) -> String {
        let node = resolve(node, root);
        if let Some(c) = node.get("const") {
            return format!("`{c}`");
        }
        if let Some(e) = node.get("enum").and_then(Value::as_array) {
            let values: Vec<String> = e
                .iter()
                .map(|v| format!("`{}`", v.as_str().unwrap_or("?")))
                .collect();
            return values.join(", ");
        }
        if let Some(one) = node.get("oneOf").and_then(Value::as_array) {
            let parts: Vec<String> = one.iter().map(|n| types(n, root)).collect();
            return parts.join(" or ");
        }
        match node.get("type") {
            Some(Value::String(t)) => match t.as_str() {
                "array" => format!(
                    "array of {}",
                    node.get("items").map_or("any".into(), |i| types(i, root))
                ),
                t => t.to_owned(),
            },
            Some(Value::Array(ts)) => ts
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" or "),
            _ => "any".into(),
        }
    }
    fn resolve<'a>(node: &'a Value, root: &'a Value) -> &'a Value {
        match node.get("$ref").and_then(Value::as_str) {
            Some(r) => {
                let name = r.trim_start_matches("#/$defs/");
                let target = &root["$defs"][name];
                // A reference with its own description keeps it (and the target's type).
                resolve(target, root)
            }
            None => node,
        }
    }
    fn object_of<'a>(node: &'a Value, root: &'a Value) -> Option<&'a Value> {
        let node = resolve(node, root);
        if node.get("properties").is_some() {
            return Some(node);
        }
        if let Some(items) = node.get("items") {
            return object_of(items, root);
        }
        node.get("oneOf")?
            .as_array()?
            .iter()
            .find_map(|n| object_of(n, root))
    }
    fn walk(node: &Value, root: &Value, path: &str, out: &mut String) {
        let Some(obj) = object_of(node, root) else {
            return;
        };
        let list = resolve(node, root).get("items").is_some()
            || resolve(node, root)
                .get("type")
                .is_some_and(|t| t == "array");
        let prefix = if path.is_empty() {
            String::new()
        } else if list {
            format!("{path}[].")
        } else {
            format!("{path}.")
        };
        for (name, prop) in obj["properties"].as_object().into_iter().flatten() {
            let description = prop
                .get("description")
                .or_else(|| resolve(prop, root).get("description"))
                .and_then(Value::as_str)
                .unwrap_or("");
            let p = format!("{prefix}{name}");
            writeln!(
                out,
                "| `{p}` | {} | {} |",
                types(prop, root).replace('|', "\\|"),
                description.replace('|', "\\|")
            )
            .expect("write");
            walk(prop, root, &p, out);
        }
    }
    let mut out = String::from("| field | type | meaning |\n| --- | --- | --- |\n");
    walk(schema, schema, "", &mut out);
    out
}

fn pretty_demo_sample() -> String {
    let sample = stdout_json(gpumon().args(["--demo", "once", "--json"]));
    fenced(
        "json",
        &serde_json::to_string_pretty(&sample).expect("json"),
    )
}

#[test]
fn the_json_reference_is_the_schemas() {
    let (once, v) = schema("once.schema.json");
    let (explain, _) = schema("explain.schema.json");
    let (estimate, _) = schema("estimate.schema.json");
    let (by, by_v) = schema("by.schema.json");
    let (fleet, _) = schema("fleet.schema.json");
    let (summary, _) = schema("summary.schema.json");
    let (prometheus, _) = schema("prometheus.schema.json");
    for who in ["user", "owner"] {
        let out = stdout_json(gpumon().args(["--demo", "once", "--by", who, "--json"]));
        assert_valid(&by_v, &out, &format!("once --by {who} --json"));
        assert_eq!(out["by"], who);
        assert!(!out["rows"].as_array().expect("rows").is_empty());
    }
    let sample = pretty_demo_sample();
    // The sample in the reference is real and matches the schema.
    let body = sample
        .trim_start_matches("```json\n")
        .trim_end_matches("```\n");
    assert_valid(&v, &serde_json::from_str(body).expect("json"), "the sample");
    check_generated(
        "docs/json.md",
        &[
            ("once-sample", sample, Compare::Shape),
            ("once-fields", reference(&once), Compare::Exact),
            ("explain-fields", reference(&explain), Compare::Exact),
            ("estimate-fields", reference(&estimate), Compare::Exact),
            ("by-fields", reference(&by), Compare::Exact),
            ("fleet-fields", reference(&fleet), Compare::Exact),
            ("summary-fields", reference(&summary), Compare::Exact),
            ("prometheus-fields", reference(&prometheus), Compare::Exact),
        ],
    );
}

/// The README shows the dashboard's keys from the same list as its help screen; checked by
/// [`the_readme_shows_what_the_program_does_now`]; here, that the list is not empty and each
/// key is documented once.
#[test]
fn each_key_is_listed_once() {
    let mut seen = std::collections::BTreeSet::new();
    for (k, _) in gpumon::tui::ui::KEYS {
        for key in k.split(", ") {
            assert!(seen.insert(key), "{key} is listed twice");
        }
    }
    assert!(seen.len() > 15);
}
