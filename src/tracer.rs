//! Runs `estimate --torch`'s helper in the user's own interpreter, within a deadline, and
//! brings back its answer bounded in size (what it means is `estimate::trace`'s business).

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::estimate::trace::{Request, HELPER, MAX_ANSWER};

/// Stderr kept from the helper (its tail), for a cause when it dies without an answer.
const MAX_STDERR: usize = 16 << 10;

#[derive(Debug, thiserror::Error)]
pub enum TracerError {
    #[error("no Python at '{python}' (--python): {source}")]
    NoPython {
        python: String,
        source: std::io::Error,
    },
    #[error("the tracer ran past --trace-timeout ({secs} s) and was stopped; a larger model needs a longer one")]
    Timeout { secs: u64 },
    #[error("the tracer ({python}) ended without an answer ({status}){tail}")]
    NoAnswer {
        python: String,
        status: String,
        tail: String,
    },
    #[error("cannot run the tracer: {0}")]
    Io(#[from] std::io::Error),
}

/// Reads at most `limit` bytes of `r` (the rest is drained and dropped, so the child never
/// blocks on a full pipe); with `keep_tail`, the last `limit` bytes instead.
fn read_bounded(mut r: impl Read, limit: usize, keep_tail: bool) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    let mut over = false;
    loop {
        match r.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                if out.len() > limit {
                    over = true;
                    if keep_tail {
                        let cut = out.len() - limit;
                        out.drain(..cut);
                    } else {
                        out.truncate(limit + 1);
                    }
                }
            }
        }
    }
    (out, over)
}

/// Runs the helper with `request`; its answer (stdout) or why there is none.
pub fn run(python: &Path, request: &Request, timeout: Duration) -> Result<Vec<u8>, TracerError> {
    let req = serde_json::to_string(request).map_err(std::io::Error::other)?;
    let shown = python.display().to_string();
    let mut child = {
        use std::os::unix::process::CommandExt;
        Command::new(python)
            .arg("-c")
            .arg(HELPER)
            .arg(req)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group: a deadline stops whatever the model started too.
            .process_group(0)
            .spawn()
            .map_err(|source| TracerError::NoPython {
                python: shown.clone(),
                source,
            })?
    };
    let out = child.stdout.take();
    let err = child.stderr.take();
    let out = std::thread::spawn(move || out.map(|o| read_bounded(o, MAX_ANSWER, false)));
    let err = std::thread::spawn(move || err.map(|e| read_bounded(e, MAX_STDERR, true)));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() >= timeout {
            let pid = child.id() as i32;
            // SAFETY: signals the process group we made for the child.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
            let _ = child.kill();
            let _ = child.wait();
            return Err(TracerError::Timeout {
                secs: timeout.as_secs(),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (answer, _) = out.join().ok().flatten().unwrap_or_default();
    let (stderr, _) = err.join().ok().flatten().unwrap_or_default();
    if answer.iter().all(u8::is_ascii_whitespace) {
        let text = String::from_utf8_lossy(&stderr);
        let last = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| format!(": {}", crate::text::escape(l.trim())))
            .unwrap_or_default();
        return Err(TracerError::NoAnswer {
            python: shown,
            status: status.to_string(),
            tail: last,
        });
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_is_bounded_at_the_head_or_the_tail() {
        let data = vec![b'a'; 100_000];
        let (head, over) = read_bounded(&data[..], 1000, false);
        assert!(over && head.len() == 1001);
        let mut tailed = vec![b'a'; 100_000];
        tailed.extend_from_slice(b"END");
        let (tail, over) = read_bounded(&tailed[..], 10, true);
        assert!(over);
        assert!(tail.ends_with(b"END") && tail.len() == 10);
    }
}
