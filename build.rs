//! A link option that cuts what the binary keeps resident, used only where a probe program
//! links and runs with it:
//! - packed relative relocations (`-z pack-relative-relocs`, DT_RELR): the loader's table of
//!   9,000 pointer fix-ups shrinks from 230 KB to 3 KB. It needs glibc 2.36 or later where the
//!   binary runs, so the probe must run here; a binary built with it and copied to an older
//!   system refuses to start ("GLIBC_ABI_DT_RELR not found"): build there, or set
//!   `GPUMON_NO_RELR=1`.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=GPUMON_NO_RELR");
    let linux = env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux");
    let native = env::var("HOST").ok() == env::var("TARGET").ok();
    const RELR: &str = "-Wl,-z,pack-relative-relocs";
    let relr = linux && native && env::var_os("GPUMON_NO_RELR").is_none() && probe(RELR, true);
    if relr {
        println!("cargo:rustc-link-arg-bin=gpumon={RELR}");
    }
    println!(
        "cargo:rustc-env=GPUMON_RELR={}",
        if relr { "1" } else { "0" }
    );
}

/// Links an empty program with `arg` through the same rustc, target, linker and flags as the
/// real build (and runs it, with `run`): a linker that cannot read the script (gold, or a
/// platform linker that is not GNU ld or LLD), or a C library without DT_RELR, fails here
/// instead of in the real link or at start.
fn probe(arg: &str, run: bool) -> bool {
    let Some(out) = env::var_os("OUT_DIR").map(PathBuf::from) else {
        return false;
    };
    let source = out.join("link_probe.rs");
    let program = out.join(if run { "link_probe_run" } else { "link_probe" });
    if std::fs::write(&source, "fn main() {}\n").is_err() {
        return false;
    }
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let mut cmd = Command::new(rustc);
    cmd.arg(&source)
        .arg("-o")
        .arg(&program)
        .arg("-C")
        .arg(format!("link-arg={arg}"));
    if let Ok(target) = env::var("TARGET") {
        cmd.args(["--target", &target]);
    }
    if let Some(linker) = env::var_os("RUSTC_LINKER") {
        cmd.arg("-C").arg({
            let mut a = std::ffi::OsString::from("linker=");
            a.push(linker);
            a
        });
    }
    if let Ok(flags) = env::var("CARGO_ENCODED_RUSTFLAGS") {
        cmd.args(flags.split('\x1f').filter(|f| !f.is_empty()));
    }
    let quiet = |cmd: &mut Command| {
        cmd.stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    quiet(&mut cmd) && (!run || quiet(&mut Command::new(&program)))
}
