use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    one_malloc_arena();
    let cli = gpumon::cli::Cli::parse();
    match gpumon::dispatch::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("gpumon: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// glibc gives each thread that allocates its own malloc arena, each with its own free
/// pages: a few hundred KiB of resident memory per thread for a program whose threads
/// (device readers, the key reader, the /proc readers) allocate little and rarely at the
/// same time. One arena serves them all.
fn one_malloc_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called before any thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}
