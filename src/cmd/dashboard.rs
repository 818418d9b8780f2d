//! `gpumon` on a terminal: the live dashboard.

use std::process::ExitCode;
use std::time::Duration;

use crate::cli::Common;
use crate::collect::{new_sampler, start_opening, Needs};
use crate::runtime::usage_error;
use crate::tui::Start;

/// How long the dashboard waits for the driver before it opens its screen: a missing driver
/// fails at once and is better said on the plain terminal.
const OPEN_WAIT: Duration = Duration::from_millis(300);

pub fn run(common: &Common) -> anyhow::Result<ExitCode> {
    let config = common.collect();
    let opening = start_opening(&config);
    let start = match opening.wait_a_little(OPEN_WAIT) {
        Ok(Some(source)) => Start::Ready(Box::new(new_sampler(
            &config,
            source,
            Needs {
                system: true,
                ..Needs::ALL
            },
        ))),
        Ok(None) => Start::Opening(
            opening,
            Box::new(move |source| {
                new_sampler(
                    &config,
                    source,
                    Needs {
                        system: true,
                        ..Needs::ALL
                    },
                )
            }),
        ),
        Err(e) => return Ok(usage_error(e)),
    };
    match crate::tui::run(start, common.interval, common.history)? {
        Some(e) => Ok(usage_error(e)),
        None => Ok(ExitCode::SUCCESS),
    }
}
