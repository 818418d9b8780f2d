//! `gpumon explain`: an out-of-memory error read from a file or standard input, explained.

use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;

use crate::cli::ExplainArgs;
use crate::oom::scan::{for_each_line, Scanner};
use crate::oom::{diagnose::Sizing, render};
use crate::runtime::{terminal_width, EXIT_USAGE};
use crate::text::Paint;

pub fn run(args: &ExplainArgs) -> anyhow::Result<ExitCode> {
    let sizing = match args.estimate.as_deref().map(crate::cli::estimate_line) {
        None => None,
        Some(Ok((shape, _, run))) => Some(Sizing { shape, run }),
        Some(Err(e)) => {
            eprintln!("gpumon: --estimate: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    let mut scanner = Scanner::new();
    // A file, or a pipe (`<(tail -f train.log)`): read as a stream, in bounded memory.
    let (read, input) = match args.file.as_deref() {
        Some(p) if p != std::path::Path::new("-") => {
            if p.is_dir() {
                eprintln!("gpumon: {} is a directory: give a log file", p.display());
                return Ok(ExitCode::from(EXIT_USAGE));
            }
            match std::fs::File::open(p) {
                Ok(file) => (
                    for_each_line(file, |l| scanner.push_line(l)),
                    p.display().to_string(),
                ),
                Err(e) => {
                    eprintln!("gpumon: cannot read {}: {e}", p.display());
                    return Ok(ExitCode::from(EXIT_USAGE));
                }
            }
        }
        _ => {
            // Typed or pasted at a terminal, nothing says when the input is over: say how.
            if io::stdin().is_terminal() {
                eprintln!(
                    "gpumon explain: paste the error or the log, then press Ctrl-D on an \
                     empty line (Ctrl-C cancels)"
                );
            }
            (
                for_each_line(io::stdin().lock(), |l| scanner.push_line(l)),
                "standard input".to_owned(),
            )
        }
    };
    if let Err(e) = read {
        eprintln!("gpumon: cannot read {input}: {e}");
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    let analysis = scanner.finish();
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    if args.json {
        crate::text::write_json_pretty(
            &mut out,
            &render::to_json_with(&analysis, sizing.as_ref()),
        )?;
        out.write_all(b"\n")?;
    } else {
        // Wrapped to the terminal (or COLUMNS, or 100), with hanging indents.
        let layout = render::Layout {
            width: Some(terminal_width()),
            sizing,
            ..render::Layout::default()
        };
        if analysis.main().is_some() {
            out.write_all(render::render_with(&analysis, Paint::for_stdout(), &layout).as_bytes())?;
        } else {
            eprint!(
                "gpumon: {}",
                render::render_with(&analysis, Paint(false), &layout)
            );
        }
    }
    out.flush()?;
    Ok(if analysis.main().is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
