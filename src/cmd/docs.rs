//! `gpumon completions` and `gpumon man`: generated from the command-line definitions.

use std::io::{self, Write};
use std::process::ExitCode;

use clap::CommandFactory;

use crate::cli::{Cli, ManArgs};

/// The shell's completion script.
pub fn completions(shell: clap_complete::Shell) -> anyhow::Result<ExitCode> {
    // Generated into memory first: clap_complete panics on a write error (a closed pipe).
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "gpumon", &mut script);
    let mut out = io::stdout().lock();
    out.write_all(&script)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The pages: gpumon(1) and one per command (gpumon-once(1), …), as (file name, roff).
pub fn pages() -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let mut top = Cli::command();
    // Every command's flags (they are built on demand: see cli::Deferred).
    top.build();
    let mut out = Vec::new();
    let mut page = Vec::new();
    clap_mangen::Man::new(top.clone()).render(&mut page)?;
    out.push(("gpumon.1".to_owned(), page));
    for sub in top.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = format!("gpumon-{}", sub.get_name());
        // clap takes a command's name as a static string (without its "string" feature): the
        // few pages of one run leak a few bytes each.
        let static_name: &'static str = Box::leak(name.clone().into_boxed_str());
        let cmd = sub
            .clone()
            .name(static_name)
            .bin_name(format!("gpumon {}", sub.get_name()))
            .version(env!("CARGO_PKG_VERSION"));
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut page)?;
        out.push((format!("{name}.1"), page));
    }
    Ok(out)
}

/// `gpumon man [COMMAND]`, or every page into `--dir`.
pub fn man(args: &ManArgs) -> anyhow::Result<ExitCode> {
    let pages = pages()?;
    if let Some(dir) = &args.dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
        for (name, page) in &pages {
            let path = dir.join(name);
            std::fs::write(&path, page)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
            println!("{}", path.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let file = match &args.command {
        None => "gpumon.1".to_owned(),
        Some(c) => format!("gpumon-{c}.1"),
    };
    let Some((_, page)) = pages.iter().find(|(n, _)| *n == file) else {
        let known: Vec<&str> = pages
            .iter()
            .filter_map(|(n, _)| n.strip_prefix("gpumon-")?.strip_suffix(".1"))
            .collect();
        return Ok(crate::console::usage_error(format!(
            "no command '{}': the pages are gpumon(1) and those of {}",
            args.command.as_deref().unwrap_or(""),
            known.join(", ")
        )));
    };
    let mut out = io::stdout().lock();
    out.write_all(page)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
