use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = gpumon::cli::Cli::parse();
    match gpumon::app::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("gpumon: {e:#}");
            ExitCode::FAILURE
        }
    }
}
