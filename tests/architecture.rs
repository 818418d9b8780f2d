//! The house rules of `src/`, read from the source's own paths (`crate::…`, `super::…` and the
//! crates each file names):
//! - commands are leaves: no file under `src/cmd/X` names another command or the dispatcher;
//! - only `main.rs` names the dispatcher (`dispatch`);
//! - the pure modules (`units`, `text`, `model`, `oom`, `estimate`) name only each other, and no
//!   UI, runtime, driver or command-line crate;
//! - `collect` names no view, command, the command line or the feed (it is below the feed);
//! - between top-level folders, imports go one way: no cycle;
//! - only `main`, the dispatcher and the commands name the command line (`cli`);
//! - the text views (`view`) name no collection code, no feed (the fleet's network readers
//!   live there) and no driver or network crate;
//! - inside a folder, its files import one way too: no cycle between siblings.
//!
//! Where the code breaks a rule today, the break is listed by name in a `KNOWN_…` list with its
//! reason; a listed break that is gone fails the test, so the lists only shrink.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const PURE: &[&str] = &["units", "text", "files", "model", "oom", "estimate"];
/// Crates a pure module must not use: the terminal UI, the async runtime, the driver, HTTP, the
/// command line.
const IMPURE_CRATES: &[&str] = &[
    "ratatui",
    "ratatui_crossterm",
    "crossterm",
    "tokio",
    "nvml_wrapper",
    "nvml_wrapper_sys",
    "hyper",
    "hyper_util",
    "clap",
    "sysinfo",
];

struct File {
    /// Module path inside the crate: ["cmd", "serve", "metrics"]; `mod.rs` is its folder.
    module: Vec<String>,
    path: PathBuf,
    text: String,
}

fn files(dir: &Path, out: &mut Vec<File>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read src")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
            let rel = path.strip_prefix(&src).expect("under src");
            let mut module: Vec<String> = rel
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if module.last().is_some_and(|m| m == "mod") {
                module.pop();
            }
            let text = std::fs::read_to_string(&path).expect("read file");
            out.push(File { module, path, text });
        }
    }
}

/// Code without comments: doc comments name modules in prose.
fn code(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The crate paths a file names, each as module segments from the crate root: `crate::a::b`
/// as written, `super::x` resolved against the file's own module.
fn references(f: &File) -> BTreeSet<Vec<String>> {
    let code = code(&f.text);
    let mut out = BTreeSet::new();
    // Lower-case segments joined by `::`, up to the first that is not a module name.
    let ident = |s: &str| -> Vec<String> {
        let mut out = Vec::new();
        let mut rest = s;
        loop {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            let after = &rest[name.len()..];
            let whole = !after.starts_with(|c: char| c.is_ascii_alphanumeric());
            if name.is_empty() || !whole {
                return out;
            }
            out.push(name);
            match after.strip_prefix("::") {
                Some(next) => rest = next,
                None => return out,
            }
        }
    };
    for (i, _) in code.match_indices("crate::") {
        let before = code[..i].chars().last();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let path = ident(&code[i + "crate::".len()..]);
        if !path.is_empty() {
            out.insert(path);
        }
    }
    // `super::` from a file is its parent module (a `mod.rs` file's module is its folder, so
    // the same rule holds).
    for (i, _) in code.match_indices("super::") {
        let before = code[..i].chars().last();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        // Inside `mod tests` blocks `super` is the file itself: those lines are tests.
        let mut base = f.module.clone();
        let in_tests = code[..i].contains("mod tests");
        if !in_tests {
            base.pop();
        }
        let rest = ident(&code[i + "super::".len()..]);
        base.extend(rest);
        if !base.is_empty() {
            out.insert(base);
        }
    }
    out
}

/// External crates a file names (`use x::…` or `x::…` at a path's start).
fn names_crate(f: &File, krate: &str) -> bool {
    let code = code(&f.text);
    let needle = format!("{krate}::");
    code.match_indices(&needle).any(|(i, _)| {
        !code[..i]
            .chars()
            .last()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    })
}

fn all() -> Vec<File> {
    let mut out = Vec::new();
    files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut out);
    assert!(out.len() > 20, "src/ not found");
    out
}

/// Files under `src/cmd/X` that name another command, and files other than `dispatch` that name
/// the dispatcher.
fn leaf_violations(files: &[File]) -> Vec<String> {
    let mut bad = Vec::new();
    for f in files {
        for r in references(f) {
            if r[0] == "dispatch" && f.module != ["dispatch"] {
                bad.push(format!(
                    "{} names the dispatcher: crate::{}",
                    f.path.display(),
                    r.join("::")
                ));
            }
            if f.module.first().is_some_and(|m| m == "cmd")
                && f.module.len() >= 2
                && r.len() >= 2
                && r[0] == "cmd"
                && r[1] != f.module[1]
            {
                bad.push(format!(
                    "{} (command {}) names another command: crate::{}",
                    f.path.display(),
                    f.module[1],
                    r.join("::")
                ));
            }
        }
    }
    bad
}

/// Pure modules that name an impure module or crate.
fn purity_violations(files: &[File]) -> Vec<String> {
    let mut bad = Vec::new();
    for f in files {
        let Some(top) = f.module.first() else {
            continue;
        };
        if !PURE.contains(&top.as_str()) {
            continue;
        }
        for r in references(f) {
            if !PURE.contains(&r[0].as_str()) {
                bad.push(format!(
                    "{} names crate::{}",
                    f.path.display(),
                    r.join("::")
                ));
            }
        }
        for krate in IMPURE_CRATES {
            if names_crate(f, krate) {
                bad.push(format!("{} uses the crate {krate}", f.path.display()));
            }
        }
    }
    bad
}

/// Files of `collect` that name a view, a command, the command line or the feed.
fn collection_violations(files: &[File]) -> Vec<String> {
    let mut bad = Vec::new();
    for f in files {
        if f.module.first().is_none_or(|m| m != "collect") {
            continue;
        }
        for r in references(f) {
            if ["cli", "cmd", "dispatch", "view", "tui", "console", "feed"].contains(&r[0].as_str())
            {
                bad.push(format!(
                    "{} names crate::{}",
                    f.path.display(),
                    r.join("::")
                ));
            }
        }
    }
    bad
}

/// A cycle between top-level folders, as the path that closes it.
fn folder_cycle(files: &[File]) -> Option<Vec<String>> {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let Some(top) = f.module.first().cloned() else {
            continue;
        };
        for r in references(f) {
            if r[0] != top {
                edges.entry(top.clone()).or_default().insert(r[0].clone());
            }
        }
    }
    cycle_in(&edges)
}

/// A cycle in a graph of names, as the path that closes it.
fn cycle_in(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = stack.iter().position(|s| s == n) {
            let mut cycle = stack[i..].to_vec();
            cycle.push(n.to_owned());
            return Some(cycle);
        }
        if done.contains(n) {
            return None;
        }
        stack.push(n.to_owned());
        for m in edges.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, edges, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(n.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|n| visit(n, edges, &mut Vec::new(), &mut done))
}

/// Top-level modules that may name the command line: `main`, the dispatcher, the commands and
/// the command line itself.
const CLI_USERS: &[&str] = &["main", "dispatch", "cmd", "cli"];

/// Modules outside [`CLI_USERS`] that name the command line today, with why.
const KNOWN_CLI_USERS: &[(&str, &str)] = &[];

/// Crates that read the driver or the host, or the network: what a view must leave to
/// collection and to the feed.
const DRIVER_CRATES: &[&str] = &[
    "nvml_wrapper",
    "nvml_wrapper_sys",
    "sysinfo",
    "hyper",
    "hyper_util",
    "tokio_rustls",
    "rustls",
];

/// What a view may not name: this machine's collection, and the feed (the live sampler, the
/// player and the fleet's network readers).
const BELOW_VIEWS: &[&str] = &["collect", "feed"];

/// View files that name collection today, with why.
const KNOWN_VIEW_COLLECTION: &[(&str, &str)] = &[];

/// Imports a rule forbids, as (module that imports, what it names) per offending reference.
type Breaks = Vec<(String, String)>;

/// Modules outside [`CLI_USERS`] that name `crate::cli`.
fn cli_violations(files: &[File]) -> Breaks {
    let mut bad = Vec::new();
    for f in files {
        let Some(top) = f.module.first() else {
            continue;
        };
        if CLI_USERS.contains(&top.as_str()) {
            continue;
        }
        for r in references(f) {
            if r[0] == "cli" {
                bad.push((f.module.join("::"), r.join("::")));
            }
        }
    }
    bad
}

/// Files of `view` that name collection, the feed, or a driver or network crate.
fn view_violations(files: &[File]) -> Breaks {
    let mut bad = Vec::new();
    for f in files {
        if f.module.first().is_none_or(|m| m != "view") {
            continue;
        }
        for r in references(f) {
            if BELOW_VIEWS.contains(&r[0].as_str()) {
                bad.push((f.module.join("::"), r.join("::")));
            }
        }
        for krate in DRIVER_CRATES {
            if names_crate(f, krate) {
                bad.push((f.module.join("::"), (*krate).to_owned()));
            }
        }
    }
    bad
}

/// The breaks not in `known`, and the entries of `known` that no longer break the rule.
fn unknown_and_stale(bad: &Breaks, known: &[(&str, &str)]) -> (Vec<String>, Vec<String>) {
    let unknown = bad
        .iter()
        .filter(|(m, _)| !known.iter().any(|(k, _)| k == m))
        .map(|(m, r)| format!("{m} names {r}"))
        .collect();
    let stale = known
        .iter()
        .filter(|(k, _)| !bad.iter().any(|(m, _)| m == k))
        .map(|(k, _)| (*k).to_owned())
        .collect();
    (unknown, stale)
}

/// A cycle between the files (or subfolders) of one folder, as the path that closes it,
/// prefixed by the folder. A folder's own `mod.rs` is its parent, not a sibling: it is left out.
fn sibling_cycles(files: &[File]) -> Vec<Vec<String>> {
    let mut folders: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for f in files {
        for depth in 0..f.module.len() {
            let folder = f.module[..depth].to_vec();
            let me = &f.module[depth];
            for r in references(f) {
                if r.len() > depth && r[..depth] == folder[..] && &r[depth] != me {
                    folders
                        .entry(folder.clone())
                        .or_default()
                        .entry(me.clone())
                        .or_default()
                        .insert(r[depth].clone());
                }
            }
        }
    }
    let mut out = Vec::new();
    for (folder, edges) in &folders {
        if let Some(cycle) = cycle_in(edges) {
            let mut named = vec![if folder.is_empty() {
                "src".to_owned()
            } else {
                folder.join("/")
            }];
            named.extend(cycle);
            out.push(named);
        }
    }
    out
}

/// Sibling cycles known today, as (folder, a member of the cycle), with why.
const KNOWN_SIBLING_CYCLES: &[(&str, &str, &str)] = &[];

#[test]
fn only_main_the_dispatcher_and_commands_name_the_command_line() {
    let (unknown, stale) = unknown_and_stale(&cli_violations(&all()), KNOWN_CLI_USERS);
    assert!(unknown.is_empty(), "{}", unknown.join("\n"));
    assert!(
        stale.is_empty(),
        "no longer names the CLI: remove from KNOWN_CLI_USERS: {stale:?}"
    );
}

#[test]
fn views_name_no_collection_or_driver_code() {
    let (unknown, stale) = unknown_and_stale(&view_violations(&all()), KNOWN_VIEW_COLLECTION);
    assert!(unknown.is_empty(), "{}", unknown.join("\n"));
    assert!(
        stale.is_empty(),
        "no longer names collection: remove from KNOWN_VIEW_COLLECTION: {stale:?}"
    );
}

#[test]
fn files_inside_a_folder_import_one_way() {
    let cycles = sibling_cycles(&all());
    let known = |c: &Vec<String>| {
        KNOWN_SIBLING_CYCLES
            .iter()
            .any(|(folder, member, _)| c[0] == *folder && c[1..].iter().any(|m| m == member))
    };
    let unknown: Vec<String> = cycles
        .iter()
        .filter(|c| !known(c))
        .map(|c| format!("{}: {}", c[0], c[1..].join(" → ")))
        .collect();
    assert!(
        unknown.is_empty(),
        "import cycles inside a folder:\n{}",
        unknown.join("\n")
    );
    let stale: Vec<&str> = KNOWN_SIBLING_CYCLES
        .iter()
        .filter(|(folder, member, _)| {
            !cycles
                .iter()
                .any(|c| c[0] == *folder && c[1..].iter().any(|m| m == member))
        })
        .map(|(folder, _, _)| *folder)
        .collect();
    assert!(
        stale.is_empty(),
        "no cycle any more: remove from KNOWN_SIBLING_CYCLES: {stale:?}"
    );
}

#[test]
fn commands_are_leaves_and_only_main_names_the_dispatcher() {
    let bad = leaf_violations(&all());
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn pure_modules_name_only_pure_modules_and_no_ui_runtime_or_driver_crate() {
    let bad = purity_violations(&all());
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn collection_names_no_view_command_or_command_line() {
    let bad = collection_violations(&all());
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn top_level_folders_import_one_way() {
    if let Some(cycle) = folder_cycle(&all()) {
        panic!("import cycle between folders: {}", cycle.join(" → "));
    }
}

/// Each rule fails on made-up files that break it.
#[test]
fn the_rules_catch_what_they_forbid() {
    let file = |module: &[&str], text: &str| File {
        module: module.iter().map(|s| s.to_string()).collect(),
        path: PathBuf::from(format!("src/{}.rs", module.join("/"))),
        text: text.to_owned(),
    };
    let run = file(
        &["cmd", "run"],
        "use crate::cmd::once::render;\nuse crate::collect::x;",
    );
    assert_eq!(
        references(&run),
        BTreeSet::from([
            vec!["cmd".to_owned(), "once".into(), "render".into()],
            vec!["collect".to_owned(), "x".into()],
        ])
    );
    assert_eq!(leaf_violations(&[run]).len(), 1);
    let serve = file(&["cmd", "serve"], "let x = crate::dispatch::run;");
    assert_eq!(leaf_violations(&[serve]).len(), 1);
    let metrics = file(&["cmd", "serve", "metrics"], "use super::Options;");
    assert!(references(&metrics).contains(&vec!["cmd".to_owned(), "serve".into()]));
    assert!(
        leaf_violations(&[metrics]).is_empty(),
        "a command's own module"
    );

    let model = file(
        &["model", "x"],
        "// crate::tui in a comment\nuse ratatui::Frame;",
    );
    assert!(references(&model).is_empty(), "comments are not imports");
    assert_eq!(purity_violations(&[model]).len(), 1);
    let oom = file(&["oom", "render"], "use crate::cli::Common;");
    assert_eq!(purity_violations(&[oom]).len(), 1);
    let sampler = file(&["collect", "sampler"], "use crate::view::once;");
    assert_eq!(collection_violations(&[sampler]).len(), 1);
    let host = file(&["collect", "host"], "use crate::feed::remote::Client;");
    assert_eq!(
        collection_violations(&[host]).len(),
        1,
        "collect is below the feed"
    );

    let a = file(&["view", "x"], "use crate::tui::y;");
    let b = file(&["tui", "y"], "use crate::view::x;");
    assert!(folder_cycle(&[a, b]).is_some());

    let tui = file(&["tui", "app"], "let s = crate::cli::estimate_line(l);");
    let cmd = file(&["cmd", "once"], "use crate::cli::OnceArgs;");
    let tracer = file(
        &["tracer"],
        "pub fn check(args: &crate::cli::EstimateArgs) {}",
    );
    assert_eq!(
        cli_violations(&[tui, cmd, tracer]).len(),
        2,
        "tui and the tracer may not, a command may"
    );
    let once = file(
        &["view", "once"],
        "use crate::collect::host;\nuse nvml_wrapper::Nvml;",
    );
    assert_eq!(view_violations(&[once]).len(), 2);
    let fleet = file(
        &["view", "fleet"],
        "use crate::feed::remote::Endpoint;\nuse crate::model::fleet::NodeReading;\n\
         let c = hyper::Request::get(\"/\");",
    );
    assert_eq!(
        view_violations(&[fleet]).len(),
        2,
        "a view names no network reader and no network crate"
    );
    let a = file(&["feed", "prometheus"], "use super::remote::request;");
    let b = file(&["feed", "remote"], "use crate::feed::prometheus::Source;");
    assert_eq!(
        sibling_cycles(&[a, b]),
        [["feed", "prometheus", "remote", "prometheus"]],
        "the fleet's readers import one way"
    );
    let bad = vec![("view::once".to_owned(), "collect::host".to_owned())];
    assert_eq!(unknown_and_stale(&bad, &[]).0.len(), 1, "an unlisted break");
    let listed = [("view::once", "why"), ("view::gone", "why")];
    let (unknown, stale) = unknown_and_stale(&bad, &listed);
    assert!(
        unknown.is_empty() && stale == ["view::gone"],
        "a listed one that is gone"
    );

    let parse = file(&["oom", "parse"], "use super::scan::Scanner;");
    let scan = file(&["oom", "scan"], "use crate::oom::parse::parse_text;");
    let oom = file(
        &["oom"],
        "use crate::oom::parse::x;\nuse crate::oom::scan::y;",
    );
    let cycles = sibling_cycles(&[parse, scan, oom]);
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert_eq!(cycles[0][0], "oom");
    let render = file(
        &["oom", "render"],
        "use super::Analysis;\nuse super::scan::x;",
    );
    let scan = file(&["oom", "scan"], "use super::Oom;");
    assert!(
        sibling_cycles(&[render, scan]).is_empty(),
        "a child naming its folder's mod.rs is no cycle"
    );
}
