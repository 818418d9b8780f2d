//! `gpumon replay FILE`: the dashboard on a recording, with a time cursor.

use std::process::ExitCode;

use crate::cli::{Common, ReplayArgs};
use crate::console::usage_error;
use crate::feed::Source;
use crate::store::recording::{resolve_at, Reader};

pub fn run(common: &Common, args: &ReplayArgs) -> anyhow::Result<ExitCode> {
    let reader = match Reader::open(&args.file) {
        Ok(r) => r,
        Err(e) => return Ok(usage_error(e)),
    };
    let Some((first, last)) = reader.span() else {
        return Ok(usage_error(format!(
            "{} holds no sample",
            args.file.display()
        )));
    };
    let at = match args.at.as_deref() {
        Some(t) => match resolve_at(t, first, last) {
            Ok(at) => at,
            Err(e) => return Ok(usage_error(format!("--at: {e}"))),
        },
        None => first,
    };
    let name = args.file.file_name().map_or_else(
        || args.file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let source = Source::Replay {
        reader: Box::new(reader),
        at,
        name,
    };
    let settings = crate::tui::Settings {
        interval: common.interval,
        history: common.history,
        idle_after: common.idle_after,
        estimate: crate::cli::panel_estimate,
    };
    match crate::tui::run(source, settings)? {
        Some(e) => Ok(usage_error(e)),
        None => Ok(ExitCode::SUCCESS),
    }
}
