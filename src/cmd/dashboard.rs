//! `gpumon` on a terminal: the live dashboard.

use std::process::ExitCode;
use std::time::Duration;

use crate::cli::Common;
use crate::collect::{check_gpus, new_sampler, start_opening, Needs};
use crate::console::usage_error;
use crate::feed::live::Start;
use crate::feed::Source;

/// How long the dashboard waits for the driver before it opens its screen: a missing driver
/// fails at once and is better said on the plain terminal.
const OPEN_WAIT: Duration = Duration::from_millis(300);

/// Everything about the GPUs and their processes, and the host line.
const NEEDS: Needs = Needs {
    system: true,
    ..Needs::ALL
};

pub fn run(common: &Common) -> anyhow::Result<ExitCode> {
    // The recording is opened first: a path that cannot be written is said before anything.
    let record = match &common.record {
        Some(path) => match crate::store::recording::Writer::open(path, Default::default()) {
            Ok(w) => Some(w),
            Err(e) => {
                return Ok(usage_error(format!(
                    "--record: cannot record to {}: {e}",
                    path.display()
                )))
            }
        },
        None => None,
    };
    let config = common.collect();
    let opening = start_opening(&config);
    let start = match opening.wait_a_little(OPEN_WAIT) {
        Ok(Some(source)) => {
            let mut sampler = new_sampler(&config, source, NEEDS);
            // Said on the plain terminal, before the screen opens.
            if let Err(e) = check_gpus(&config, &mut sampler) {
                return Ok(usage_error(e));
            }
            Start::Ready(Box::new(sampler))
        }
        Ok(None) => Start::Opening(
            opening,
            Box::new(move |source| new_sampler(&config, source, NEEDS)),
        ),
        Err(e) => return Ok(usage_error(e)),
    };
    match crate::tui::run(
        Source::Live(start, record),
        settings(common, common.interval),
    )? {
        Some(e) => Ok(usage_error(e)),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// `gpumon --remote …`: the fleet view, every node read every `--interval` (2 s unless given)
/// within `--timeout` (2 s unless given).
pub fn fleet(common: &Common, args: &crate::cli::OnceArgs) -> anyhow::Result<ExitCode> {
    use crate::feed::fleet::Nodes;
    let (nodes, client) = match &args.prometheus {
        Some(url) => match crate::feed::prometheus::open(
            url,
            args.selector.as_deref(),
            args.remote_config.as_deref(),
        ) {
            Ok((source, client)) => (Nodes::Prometheus(source), client),
            Err(e) => return Ok(usage_error(e)),
        },
        None => match crate::feed::remote::endpoints(
            &args.remote,
            args.remote_file.as_deref(),
            args.remote_config.as_deref(),
        ) {
            Ok((eps, client)) => (Nodes::Listed(eps), client),
            Err(e) => return Ok(usage_error(e)),
        },
    };
    let deadline = common.timeout.unwrap_or(crate::feed::remote::DEADLINE);
    let interval = common.interval_given.unwrap_or(FLEET_INTERVAL);
    let source = Source::Fleet {
        nodes,
        client,
        deadline,
    };
    match crate::tui::run(source, settings(common, interval))? {
        Some(e) => Ok(usage_error(e)),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// How often the fleet is read when no `--interval` is given.
const FLEET_INTERVAL: Duration = Duration::from_secs(2);

/// The dashboard's settings from the command's flags, read every `interval`.
pub fn settings(common: &Common, interval: Duration) -> crate::tui::Settings {
    crate::tui::Settings {
        interval,
        history: common.history,
        idle_after: common.idle_after,
        estimate: crate::cli::panel_estimate,
    }
}
