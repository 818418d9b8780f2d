//! What users install starts where they run it: the binaries `scripts/release-build` makes (for
//! x86_64 and aarch64) need at most glibc 2.28 (RHEL 8, Ubuntu 20.04 and later), read from the
//! versions their ELF files ask of each library (`.gnu.version_r`), as the dynamic loader checks
//! them at start; the aarch64 one runs (under qemu-user here); the wheels carry those binaries
//! under tags that say so, and install and run with plain `pip` and with `uvx`.
//!
//! `scripts/test` builds them and passes their paths in environment variables (each test names
//! its own); CI runs it, and a test whose artifact is missing fails there.

use std::path::{Path, PathBuf};
use std::process::Command;

use object::read::elf::ElfFile64;
use object::{Architecture, Endianness, Object};

/// The newest glibc a binary for the clusters people have may need.
const MAX_GLIBC: (u32, u32) = (2, 28);

/// Every `(library, version)` a binary needs: ("libc.so.6", "GLIBC_2.17"), …
fn needed_versions(bytes: &[u8]) -> Vec<(String, String)> {
    let elf = ElfFile64::<Endianness>::parse(bytes).expect("a 64-bit ELF file");
    let endian = elf.endian();
    let sections = elf.elf_section_table();
    let Some((mut needs, link)) = sections.gnu_verneed(endian, bytes).expect(".gnu.version_r")
    else {
        return Vec::new();
    };
    let strings = sections
        .strings(endian, bytes, link)
        .expect("the version strings");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let mut out = Vec::new();
    while let Some((need, mut aux)) = needs.next().expect("a version need") {
        let file = text(need.file(endian, strings).expect("file name"));
        while let Some(a) = aux.next().expect("a version") {
            out.push((
                file.clone(),
                text(a.name(endian, strings).expect("version name")),
            ));
        }
    }
    out
}

/// The glibc release a version name needs: `GLIBC_2.2.5` → (2, 2), `GLIBC_2.34` → (2, 34).
/// `GLIBC_ABI_DT_RELR` (packed relocations) is glibc 2.36's; other `GLIBC_ABI_*` names are
/// unknown, hence newer than anything allowed.
fn glibc_release(name: &str) -> Option<(u32, u32)> {
    if name == "GLIBC_ABI_DT_RELR" {
        return Some((2, 36));
    }
    if name.starts_with("GLIBC_ABI_") {
        return Some((u32::MAX, 0));
    }
    let v = name.strip_prefix("GLIBC_")?;
    let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
    Some((parts.next()??, parts.next()??))
}

/// The newest glibc release `bytes` needs, and the name that needs it.
fn newest_glibc(bytes: &[u8]) -> Option<((u32, u32), String)> {
    needed_versions(bytes)
        .into_iter()
        .filter_map(|(_, v)| Some((glibc_release(&v)?, v)))
        .max()
}

#[test]
fn version_names_map_to_glibc_releases() {
    assert_eq!(glibc_release("GLIBC_2.2.5"), Some((2, 2)));
    assert_eq!(glibc_release("GLIBC_2.28"), Some((2, 28)));
    assert_eq!(glibc_release("GLIBC_2.34"), Some((2, 34)));
    assert_eq!(glibc_release("GLIBC_ABI_DT_RELR"), Some((2, 36)));
    assert!(glibc_release("GLIBC_ABI_SOMETHING_NEW") > Some(MAX_GLIBC));
    assert_eq!(glibc_release("GCC_3.0"), None);
}

/// The reader on a binary at hand (the test build of this machine): it finds the C library's
/// versions, so a release binary that needed nothing would be noticed, not passed.
#[test]
fn the_reader_finds_the_c_librarys_versions() {
    let bytes = std::fs::read(env!("CARGO_BIN_EXE_gpumon")).expect("read the test build");
    let needs = needed_versions(&bytes);
    assert!(
        needs
            .iter()
            .any(|(lib, v)| lib.starts_with("libc.so") && v.starts_with("GLIBC_2.")),
        "{needs:?}"
    );
    assert!(newest_glibc(&bytes).is_some());
}

/// The path `scripts/test` passes in the environment variable `name`; outside CI, `None` when
/// it is not set (the test then checks nothing, and says so). CI must set it.
fn artifact(name: &str) -> Option<PathBuf> {
    let Some(path) = std::env::var_os(name) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must check this: scripts/test sets {name}"
        );
        eprintln!("{name} is not set (scripts/test sets it): nothing to check");
        return None;
    };
    Some(PathBuf::from(path))
}

/// The architecture an ELF file is built for.
fn architecture(bytes: &[u8]) -> Architecture {
    ElfFile64::<Endianness>::parse(bytes)
        .expect("a 64-bit ELF file")
        .architecture()
}

/// The ELF reader's name for an architecture as Rust and wheel tags name it.
fn arch_of(arch: &str) -> Architecture {
    match arch {
        "x86_64" => Architecture::X86_64,
        "aarch64" => Architecture::Aarch64,
        other => panic!("no release build for {other}"),
    }
}

/// This machine's architecture.
fn host_architecture() -> Architecture {
    arch_of(std::env::consts::ARCH)
}

/// The binary at `path` is built for `arch` and needs at most glibc `max`.
fn check_binary(path: &Path, arch: Architecture, max: (u32, u32)) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    assert_eq!(architecture(&bytes), arch, "{}", path.display());
    let (release, name) = newest_glibc(&bytes).expect("the binary needs glibc versions");
    assert!(
        release <= max,
        "{} needs {name}: it would not start on glibc {}.{}",
        path.display(),
        max.0,
        max.1
    );
    eprintln!("{}: newest glibc version needed: {name}", path.display());
}

#[test]
fn the_elf_reader_tells_the_architecture() {
    let bytes = std::fs::read(env!("CARGO_BIN_EXE_gpumon")).expect("read the test build");
    assert_eq!(architecture(&bytes), host_architecture());
}

#[test]
fn the_release_binary_needs_at_most_glibc_2_28() {
    if let Some(path) = artifact("GPUMON_RELEASE_BIN") {
        check_binary(&path, host_architecture(), MAX_GLIBC);
    }
}

/// CI passes the `smoke` profile's build of the same code (scripts/test), for both
/// architectures, whose version needs are the release profile's;
/// `GPUMON_RELEASE_PROFILE=release GPUMON_AARCH64_PROFILE=release scripts/test` checks the
/// release builds themselves.
#[test]
fn the_aarch64_release_binary_needs_at_most_glibc_2_28() {
    if let Some(path) = artifact("GPUMON_RELEASE_BIN_AARCH64") {
        check_binary(&path, Architecture::Aarch64, MAX_GLIBC);
    }
}

/// A command that runs the aarch64 binary `program`: itself on an aarch64 machine, else under
/// qemu-user (`qemu-aarch64-static` or `qemu-aarch64`) with the aarch64 C library of Debian's
/// libc6-arm64-cross (`/usr/aarch64-linux-gnu`, or `QEMU_LD_PREFIX`). `None` outside CI when
/// qemu or that library is missing.
fn aarch64_command(program: &Path) -> Option<Command> {
    if host_architecture() == Architecture::Aarch64 {
        return Some(Command::new(program));
    }
    let qemu = ["qemu-aarch64-static", "qemu-aarch64"]
        .into_iter()
        .find(|q| {
            Command::new(q)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        });
    let sysroot = std::env::var_os("QEMU_LD_PREFIX")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/aarch64-linux-gnu"));
    let loader = sysroot.join("lib/ld-linux-aarch64.so.1");
    let (Some(qemu), true) = (qemu, loader.exists()) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the aarch64 binary: scripts/test installs qemu-user-static and \
             libc6-arm64-cross"
        );
        eprintln!("no qemu-aarch64 or no {}: not run", loader.display());
        return None;
    };
    let mut cmd = Command::new(qemu);
    cmd.env("QEMU_LD_PREFIX", sysroot).arg(program);
    Some(cmd)
}

/// Runs `cmd` with `NO_COLOR`, asserts it succeeds, and returns its standard output.
fn stdout_of(mut cmd: Command, what: &str) -> String {
    let out = cmd
        .env("NO_COLOR", "1")
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// The fake `libnvidia-ml.so.1` for this machine, built as the integration tests build it.
fn host_fake_nvml() -> PathBuf {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_gpumon"));
    let lib = bin.parent().expect("target dir").join("libnvidia_ml.so");
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "-p", "fake-nvml"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("run cargo build -p fake-nvml");
    assert!(status.success(), "building the fake NVML library failed");
    lib
}

/// `gpumon once --json` reading NVML from the fake library `lib`, serving the demo scenario at
/// a frozen time: what the GPUs are, as NVML's answers say (hostname, time, this host's figures
/// and how long each read took left out, as they move between two runs).
fn fake_nvml_devices(mut cmd: Command, lib: &Path, what: &str) -> serde_json::Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    cmd.args(["once", "--json"])
        .env("GPUMON_NVML_LIB", lib)
        .env(
            "FAKE_NVML_SCENARIO",
            root.join("assets/scenarios/demo.json"),
        )
        .env("FAKE_NVML_TIME", "30")
        .env("FAKE_NVML_SPEED", "0");
    let json: serde_json::Value =
        serde_json::from_str(&stdout_of(cmd, what)).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(json["source"], "nvml", "{what}: {json}");
    let mut json = json;
    for device in json["devices"].as_array_mut().into_iter().flatten() {
        for timing in ["data_age_ms", "late", "stalled"] {
            device
                .as_object_mut()
                .and_then(|d| d.remove(timing))
                .unwrap_or_else(|| panic!("{what}: no {timing} in {device}"));
        }
        // The peak between frames is read over `once`'s own moment: its figure must agree,
        // when and over how many reads depends on the clock (slower under emulation).
        let peak = device["peak"]["used_bytes"].clone();
        device["peak"] = peak;
    }
    serde_json::json!({
        "driver_version": json["driver_version"],
        "cuda_version": json["cuda_version"],
        "devices": json["devices"],
    })
}

/// The aarch64 build does what the x86_64 one does: it starts, says its version, explains a
/// corpus error word for word as this machine's build does, shows the demo, and reads NVML
/// (the fake library, built for aarch64 with the same zig toolchain) into the same figures as
/// this machine's build reading this machine's fake library.
#[test]
fn the_aarch64_binary_runs_as_the_x86_64_one_does() {
    let (Some(binary), Some(fake_nvml)) = (
        artifact("GPUMON_RELEASE_BIN_AARCH64"),
        artifact("GPUMON_FAKE_NVML_AARCH64"),
    ) else {
        return;
    };
    let fake = std::fs::read(&fake_nvml).expect("read the aarch64 fake NVML");
    assert_eq!(architecture(&fake), Architecture::Aarch64);
    let Some(_) = aarch64_command(&binary) else {
        return;
    };
    let aarch64 = || aarch64_command(&binary).expect("checked above");
    let host = || Command::new(env!("CARGO_BIN_EXE_gpumon"));

    let mut cmd = aarch64();
    cmd.arg("--version");
    assert_eq!(
        stdout_of(cmd, "aarch64 gpumon --version").trim(),
        format!("gpumon {}", env!("CARGO_PKG_VERSION"))
    );

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for log in ["jax-bfc-traceback.log", "tensorflow-traceback.log"] {
        let file = root.join("tests/fixtures/logs").join(log);
        let (mut a, mut h) = (aarch64(), host());
        a.arg("explain").arg(&file);
        h.arg("explain").arg(&file);
        let explained = stdout_of(a, &format!("aarch64 gpumon explain {log}"));
        assert!(explained.contains("out of memory"), "{explained}");
        assert_eq!(explained, stdout_of(h, &format!("gpumon explain {log}")));
    }

    let mut cmd = aarch64();
    cmd.args(["--demo", "once"]);
    let demo = stdout_of(cmd, "aarch64 gpumon --demo once");
    for expected in [
        "(simulated)",
        "[2] NVIDIA A100-SXM4-80GB",
        "MIG 3g.40gb GI 1",
    ] {
        assert!(demo.contains(expected), "no {expected:?} in\n{demo}");
    }

    let on_aarch64 = fake_nvml_devices(aarch64(), &fake_nvml, "aarch64 gpumon once (fake NVML)");
    assert!(
        on_aarch64["devices"]
            .as_array()
            .is_some_and(|d| d.len() == 3),
        "{on_aarch64}"
    );
    let on_host = fake_nvml_devices(host(), &host_fake_nvml(), "gpumon once (fake NVML)");
    assert_eq!(on_aarch64, on_host);
}

/// The newest glibc a manylinux platform tag allows: `manylinux_2_28_aarch64` → (2, 28),
/// `manylinux2014_x86_64` → (2, 17) (PEP 599's alias); `None` for any other tag.
fn manylinux_glibc(tag: &str) -> Option<(u32, u32)> {
    if tag.starts_with("manylinux2014_") {
        return Some((2, 17));
    }
    let mut parts = tag.strip_prefix("manylinux_")?.splitn(3, '_');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

#[test]
fn manylinux_tags_name_their_glibc() {
    assert_eq!(manylinux_glibc("manylinux_2_28_aarch64"), Some((2, 28)));
    assert_eq!(manylinux_glibc("manylinux_2_17_x86_64"), Some((2, 17)));
    assert_eq!(manylinux_glibc("manylinux2014_x86_64"), Some((2, 17)));
    assert_eq!(manylinux_glibc("linux_x86_64"), None);
    assert_eq!(manylinux_glibc("musllinux_1_2_x86_64"), None);
}

/// Unpacks a wheel (a zip file) with Python's own zipfile module, as pip reads it.
fn unpack(wheel: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("dir");
    let status = Command::new("python3")
        .args(["-m", "zipfile", "-e"])
        .arg(wheel)
        .arg(dir.path())
        .status()
        .expect("python3 -m zipfile");
    assert!(status.success(), "unpacking {}", wheel.display());
    dir
}

/// The wheel at `path` is gpumon's for `arch`: its name's and its WHEEL file's tags agree, are
/// manylinux for `arch` with glibc 2.28 or older, and are not pure Python; its binary is built
/// for `arch`, needs no newer glibc than the tag says and is `release` byte for byte (one
/// compile made both); the `python -m gpumon` shim is in it; its metadata says what gpumon is,
/// its version and licence; RECORD lists every file.
fn check_wheel(path: &Path, arch: &str, release: Option<&Path>) {
    let version = env!("CARGO_PKG_VERSION");
    let name = path.file_name().expect("file name").to_string_lossy();
    let stem = name.strip_suffix(".whl").expect("a .whl file");
    let fields: Vec<&str> = stem.split('-').collect();
    let [dist, v, python, abi, platform] = fields[..] else {
        panic!("{name}: not NAME-VERSION-PYTHON-ABI-PLATFORM.whl");
    };
    assert_eq!((dist, v, python, abi), ("gpumon", version, "py3", "none"));
    let platforms: Vec<&str> = platform.split('.').collect();
    let mut ceiling = MAX_GLIBC;
    for tag in &platforms {
        assert!(tag.ends_with(&format!("_{arch}")), "{name}: {tag}");
        let glibc = manylinux_glibc(tag).unwrap_or_else(|| panic!("{name}: {tag}"));
        assert!(glibc <= MAX_GLIBC, "{name}: {tag} is newer than glibc 2.28");
        ceiling = ceiling.min(glibc);
    }

    let dir = unpack(path);
    let info = dir.path().join(format!("gpumon-{version}.dist-info"));
    let read = |p: PathBuf| {
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{name}: {}: {e}", p.display()))
    };
    let wheel = read(info.join("WHEEL"));
    let mut tags: Vec<String> = wheel
        .lines()
        .filter_map(|l| l.strip_prefix("Tag: "))
        .map(str::to_owned)
        .collect();
    tags.sort();
    let mut named: Vec<String> = platforms.iter().map(|p| format!("py3-none-{p}")).collect();
    named.sort();
    assert_eq!(tags, named, "{name}: WHEEL's tags\n{wheel}");
    assert!(
        wheel.lines().any(|l| l == "Root-Is-Purelib: false"),
        "{wheel}"
    );

    let metadata = read(info.join("METADATA"));
    let header = |key: &str| -> Vec<&str> {
        metadata
            .lines()
            .take_while(|l| !l.is_empty())
            .filter_map(|l| l.strip_prefix(&format!("{key}: ")))
            .collect()
    };
    assert_eq!(header("Name"), ["gpumon"]);
    assert_eq!(header("Version"), [version]);
    assert_eq!(header("Summary"), [env!("CARGO_PKG_DESCRIPTION")]);
    assert_eq!(header("License-Expression"), [env!("CARGO_PKG_LICENSE")]);

    let binary = dir
        .path()
        .join(format!("gpumon-{version}.data/scripts/gpumon"));
    check_binary(&binary, arch_of(arch), ceiling);
    if let Some(release) = release {
        assert!(
            std::fs::read(&binary).expect("read") == std::fs::read(release).expect("read"),
            "{name}'s binary is not {}",
            release.display()
        );
    }
    for shim in ["__init__.py", "__main__.py"] {
        assert!(
            dir.path().join("gpumon").join(shim).is_file(),
            "{name}: {shim}"
        );
    }

    let record = read(info.join("RECORD"));
    let recorded: std::collections::BTreeSet<&str> =
        record.lines().filter_map(|l| l.split(',').next()).collect();
    let mut files = Vec::new();
    let mut todo = vec![dir.path().to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).expect("read_dir") {
            let p = entry.expect("entry").path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let rel = p.strip_prefix(dir.path()).expect("inside");
                files.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    for file in &files {
        assert!(
            recorded.contains(file.as_str()),
            "{name}: RECORD lacks {file}"
        );
    }
}

#[test]
fn the_wheel_carries_the_release_binary() {
    if let Some(wheel) = artifact("GPUMON_WHEEL") {
        let release = std::env::var_os("GPUMON_RELEASE_BIN").map(PathBuf::from);
        check_wheel(&wheel, std::env::consts::ARCH, release.as_deref());
    }
}

#[test]
fn the_aarch64_wheel_carries_an_aarch64_binary_for_its_tag() {
    if let Some(wheel) = artifact("GPUMON_WHEEL_AARCH64") {
        let release = std::env::var_os("GPUMON_RELEASE_BIN_AARCH64").map(PathBuf::from);
        check_wheel(&wheel, "aarch64", release.as_deref());
    }
}

/// What a user runs first, from wherever the wheel put `gpumon`: `--version` and the demo.
fn check_installed(gpumon: impl Fn() -> Command, what: &str) {
    let mut version = gpumon();
    version.arg("--version");
    assert_eq!(
        stdout_of(version, &format!("{what} --version")).trim(),
        format!("gpumon {}", env!("CARGO_PKG_VERSION"))
    );
    let mut demo = gpumon();
    demo.args(["--demo", "once"]);
    let out = stdout_of(demo, &format!("{what} --demo once"));
    assert!(out.contains("[2] NVIDIA A100-SXM4-80GB"), "{out}");
}

/// The wheel as a user installs it: a fresh virtual environment, plain pip, no index (the wheel
/// is all it needs); `gpumon` then runs from the environment's PATH, and `python -m gpumon`
/// runs it too, passing its exit status on.
#[test]
fn pip_installs_the_wheel_into_a_fresh_venv() {
    let Some(wheel) = artifact("GPUMON_WHEEL") else {
        return;
    };
    let dir = tempfile::tempdir().expect("dir");
    let venv = dir.path().join("venv");
    let status = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .expect("python3 -m venv");
    assert!(status.success(), "python3 -m venv");
    let out = Command::new(venv.join("bin/pip"))
        .args([
            "install",
            "--no-index",
            "--disable-pip-version-check",
            "--quiet",
        ])
        .arg(&wheel)
        .output()
        .expect("pip install");
    assert!(
        out.status.success(),
        "pip install {}: {}",
        wheel.display(),
        String::from_utf8_lossy(&out.stderr)
    );

    // As after `source venv/bin/activate`: found on PATH.
    let path = std::env::join_paths(std::iter::once(venv.join("bin")).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("PATH");
    let gpumon = || {
        let mut c = Command::new("gpumon");
        c.env("PATH", &path).env_remove("GPUMON_NVML_LIB");
        c
    };
    check_installed(gpumon, "pip-installed gpumon");
    let mut python = Command::new(venv.join("bin/python"));
    python.args(["-m", "gpumon", "--help"]);
    let help = stdout_of(python, "python -m gpumon --help");
    assert!(help.contains("Usage: gpumon"), "{help}");

    let missing = dir.path().join("no-such-file");
    let out = Command::new(venv.join("bin/python"))
        .args(["-m", "gpumon", "explain"])
        .arg(&missing)
        .output()
        .expect("python -m gpumon explain");
    let direct = Command::new(env!("CARGO_BIN_EXE_gpumon"))
        .arg("explain")
        .arg(&missing)
        .output()
        .expect("gpumon explain");
    assert!(!direct.status.success());
    assert_eq!(
        out.status.code(),
        direct.status.code(),
        "python -m gpumon passes gpumon's exit status on"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no-such-file"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `uvx` (uv from PyPI, `GPUMON_UVX`) runs the wheel from its path, in its own throwaway
/// environment, with no network and no Python downloaded.
#[test]
fn uvx_runs_the_wheel_from_its_path() {
    let (Some(wheel), Some(uvx)) = (artifact("GPUMON_WHEEL"), artifact("GPUMON_UVX")) else {
        return;
    };
    let dir = tempfile::tempdir().expect("dir");
    let uvx = || {
        let mut c = Command::new(&uvx);
        c.env("UV_CACHE_DIR", dir.path().join("cache"))
            .env("UV_TOOL_DIR", dir.path().join("tools"))
            .env("UV_PYTHON_DOWNLOADS", "never")
            .env("UV_OFFLINE", "1")
            .env_remove("GPUMON_NVML_LIB")
            .arg("--from")
            .arg(&wheel)
            .arg("gpumon");
        c
    };
    check_installed(uvx, "uvx gpumon");
}

/// The Containerfile and the DaemonSet that runs its image agree: the same non-root user, the
/// port the DaemonSet probes is the one the image exposes, and the image runs `gpumon`, whose
/// first argument in the DaemonSet is `serve`.
#[test]
fn the_daemonset_runs_the_containerfiles_image_as_it_is_built() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let containerfile =
        std::fs::read_to_string(root.join("Containerfile")).expect("read the Containerfile");
    let instruction = |name: &str| -> String {
        containerfile
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("the Containerfile has no {name}"))
            .trim()
            .to_owned()
    };
    let user = instruction("USER");
    let port = instruction("EXPOSE");
    assert!(instruction("ENTRYPOINT").contains("/usr/local/bin/gpumon"));
    let uid: u32 = user
        .split(':')
        .next()
        .and_then(|u| u.parse().ok())
        .expect("a numeric USER");
    assert_ne!(uid, 0, "the image runs as root");

    let text = std::fs::read_to_string(root.join("assets/deploy/gpumon-daemonset.yaml"))
        .expect("read the DaemonSet");
    let docs: Vec<serde_yaml_ng::Value> = serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).expect("YAML"))
        .collect();
    let ds = docs
        .iter()
        .find(|d| d["kind"] == "DaemonSet")
        .expect("a DaemonSet");
    let container = &ds["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["securityContext"]["runAsUser"].as_u64(),
        Some(u64::from(uid)),
        "the DaemonSet's user is the image's"
    );
    assert_eq!(
        container["securityContext"]["runAsNonRoot"].as_bool(),
        Some(true)
    );
    assert_eq!(
        container["ports"][0]["containerPort"]
            .as_u64()
            .map(|p| p.to_string()),
        Some(port.clone()),
        "the DaemonSet's port is the one the image exposes"
    );
    assert_eq!(container["args"][0].as_str(), Some("serve"));
    assert_eq!(
        ds["spec"]["template"]["spec"]["hostPID"].as_bool(),
        Some(true)
    );
}

/// `scripts/container-build` builds the image from the release binary, and the image runs it as
/// its non-root user: `gpumon serve` answers inside it. No registry is reachable here, so the
/// Debian base is stood in for by an image holding the host's C library (the files the binary
/// loads); what stays untested is that base itself and the NVIDIA container toolkit's
/// injection of `libnvidia-ml.so.1`. Needs buildah (`scripts/test` installs it) and the release
/// binary (`GPUMON_RELEASE_BIN`); CI has both.
#[test]
fn the_container_image_runs_the_release_binary_as_nobody() {
    use std::process::{Command, Stdio};
    let ci = std::env::var_os("CI").is_some();
    let Some(binary) = std::env::var_os("GPUMON_RELEASE_BIN") else {
        assert!(
            !ci,
            "CI must build the image: scripts/test sets GPUMON_RELEASE_BIN"
        );
        eprintln!("GPUMON_RELEASE_BIN is not set (scripts/test sets it): no image to build");
        return;
    };
    if Command::new("buildah").arg("--version").output().is_err() {
        assert!(
            !ci,
            "CI must build the image: scripts/test installs buildah"
        );
        eprintln!("buildah is not installed: no image to build");
        return;
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let tag = format!("gpumon-test-{}", std::process::id());
    let base = format!("localhost/{tag}-base");
    let image = format!("localhost/{tag}:test");
    // vfs storage and chroot isolation: no overlay filesystem or user namespaces needed.
    let buildah = || {
        let mut c = Command::new("buildah");
        c.env("STORAGE_DRIVER", "vfs")
            .env("BUILDAH_ISOLATION", "chroot");
        c
    };
    struct Cleanup(Vec<Vec<String>>);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            for args in self.0.iter().rev() {
                let _ = Command::new("buildah")
                    .env("STORAGE_DRIVER", "vfs")
                    .args(args)
                    .output();
            }
        }
    }
    let mut cleanup = Cleanup(Vec::new());

    // The stand-in base: the files the binary's loader maps, at their paths.
    let dir = tempfile::tempdir().expect("dir");
    let ldd = Command::new("ldd").arg(&binary).output().expect("ldd");
    let ldd = String::from_utf8_lossy(&ldd.stdout).into_owned();
    let mut libraries = 0;
    for path in ldd.split_whitespace().filter(|w| w.starts_with('/')) {
        let to = dir.path().join(path.trim_start_matches('/'));
        std::fs::create_dir_all(to.parent().expect("dir")).expect("mkdir");
        std::fs::copy(path, &to).unwrap_or_else(|e| panic!("copy {path}: {e}"));
        libraries += 1;
    }
    assert!(libraries >= 2, "ldd found no libraries: {ldd}");
    std::fs::create_dir_all(dir.path().join("tmp")).expect("tmp");
    std::fs::write(dir.path().join("Containerfile"), "FROM scratch\nCOPY . /\n").expect("write");
    let out = buildah()
        .args(["build", "-q", "-f"])
        .arg(dir.path().join("Containerfile"))
        .args(["-t", &base])
        .arg(dir.path())
        .output()
        .expect("buildah build");
    assert!(
        out.status.success(),
        "building the stand-in base: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    cleanup
        .0
        .push(vec!["rmi".into(), "-f".into(), base.clone()]);

    // The image, as users build it.
    let out = Command::new(root.join("scripts/container-build"))
        .env("GPUMON_BINARY", &binary)
        .env("GPUMON_IMAGE", &image)
        .env("GPUMON_BUILDER", "buildah")
        .env("STORAGE_DRIVER", "vfs")
        .env("BUILDAH_ISOLATION", "chroot")
        .args(["--build-arg", &format!("BASE={base}"), "--pull-never"])
        .output()
        .expect("scripts/container-build");
    assert!(
        out.status.success(),
        "scripts/container-build: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    cleanup
        .0
        .push(vec!["rmi".into(), "-f".into(), image.clone()]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().last(),
        Some(image.as_str()),
        "the last line names the image"
    );
    let inspect = buildah()
        .args(["inspect", "--type", "image", &image])
        .output()
        .expect("inspect");
    let config: serde_json::Value =
        serde_json::from_slice(&inspect.stdout).expect("buildah inspect's JSON");
    let config = &config["OCIv1"]["config"];
    assert_eq!(config["User"], "65534:65534", "{config}");
    assert_eq!(config["Entrypoint"][0], "/usr/local/bin/gpumon", "{config}");
    assert_eq!(config["Cmd"][0], "serve", "{config}");
    assert!(config["ExposedPorts"].get("9400/tcp").is_some(), "{config}");

    // Run it: `gpumon serve` on the demo, as the image's user, answering /healthz.
    let out = buildah()
        .args([
            "from",
            "--pull-never",
            "--name",
            &format!("{tag}-run"),
            &image,
        ])
        .output()
        .expect("buildah from");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let container = format!("{tag}-run");
    cleanup.0.push(vec!["rm".into(), container.clone()]);
    let mut serve = buildah()
        .args(["run", &container, "--"])
        .args([
            "/usr/local/bin/gpumon",
            "--demo",
            "serve",
            "--listen",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("buildah run");
    let stderr = serve.stderr.take().expect("stderr");
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stderr), &mut line).expect("read");
    let addr = line
        .split("://")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .map(str::to_owned);
    // /healthz says 503 until the first sample: ask until it says 200, for up to 10 s.
    let healthz = |addr: &str| -> Option<String> {
        let mut s = std::net::TcpStream::connect(addr).ok()?;
        std::io::Write::write_all(&mut s, b"GET /healthz HTTP/1.0\r\n\r\n").ok()?;
        let mut body = String::new();
        std::io::Read::read_to_string(&mut s, &mut body).ok()?;
        Some(body)
    };
    let ok = |b: &str| b.starts_with("HTTP/1.0 200") || b.starts_with("HTTP/1.1 200");
    let started = std::time::Instant::now();
    let mut answer = None;
    while let Some(addr) = addr.as_deref() {
        answer = healthz(addr);
        if answer.as_deref().is_some_and(ok) || started.elapsed().as_secs() >= 10 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // The server's uid, from the host's view of its process.
    let uid = addr.as_ref().and_then(|_| {
        let out = Command::new("pgrep")
            .args(["-n", "-f", "/usr/local/bin/gpumon --demo serve"])
            .output()
            .ok()?;
        let pid = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|u| u.split_whitespace().next().map(str::to_owned))
    });
    let _ = serve.kill();
    let _ = serve.wait();
    let _ = Command::new("pkill")
        .args([
            "-f",
            "/usr/local/bin/gpumon --demo serve --listen 127.0.0.1:0",
        ])
        .status();
    assert!(
        answer
            .as_deref()
            .is_some_and(|b| b.starts_with("HTTP/1.0 200") || b.starts_with("HTTP/1.1 200")),
        "gpumon serve in the image: {line} {answer:?}"
    );
    assert_eq!(uid.as_deref(), Some("65534"), "the server's user");
}

/// `GPUMON_ARCHES="x86_64 aarch64" scripts/container-build` makes a manifest list of an amd64
/// and an arm64 image, each holding its architecture's release binary. The images are built on
/// an empty base (no registry is reachable in CI) and not run: the arm64 one would need qemu
/// registered with the kernel's binfmt_misc, which CI's container does not have. The amd64
/// image running is the test above.
#[test]
fn the_container_image_is_built_for_both_architectures() {
    let ci = std::env::var_os("CI").is_some();
    let (Some(x86_64), Some(aarch64)) = (
        artifact("GPUMON_RELEASE_BIN"),
        artifact("GPUMON_RELEASE_BIN_AARCH64"),
    ) else {
        return;
    };
    if Command::new("buildah").arg("--version").output().is_err() {
        assert!(
            !ci,
            "CI must build the image: scripts/test installs buildah"
        );
        eprintln!("buildah is not installed: no image to build");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let image = format!("localhost/gpumon-test-{}-multi:test", std::process::id());
    let buildah = |args: &[&str]| {
        Command::new("buildah")
            .env("STORAGE_DRIVER", "vfs")
            .env("BUILDAH_ISOLATION", "chroot")
            .args(args)
            .output()
            .expect("buildah")
    };
    struct Cleanup<'a>(&'a str);
    impl Drop for Cleanup<'_> {
        fn drop(&mut self) {
            for args in [
                vec!["manifest", "rm", self.0],
                vec!["rmi", "-f", &format!("{}-amd64", self.0)],
                vec!["rmi", "-f", &format!("{}-arm64", self.0)],
            ] {
                let _ = Command::new("buildah")
                    .env("STORAGE_DRIVER", "vfs")
                    .args(args)
                    .output();
            }
        }
    }
    let _cleanup = Cleanup(&image);

    let out = Command::new(root.join("scripts/container-build"))
        .env("GPUMON_ARCHES", "x86_64 aarch64")
        .env("GPUMON_BINARY_X86_64", &x86_64)
        .env("GPUMON_BINARY_AARCH64", &aarch64)
        .env("GPUMON_IMAGE", &image)
        .env("GPUMON_BUILDER", "buildah")
        .env("STORAGE_DRIVER", "vfs")
        .env("BUILDAH_ISOLATION", "chroot")
        .args(["--build-arg", "BASE=scratch"])
        .output()
        .expect("scripts/container-build");
    assert!(
        out.status.success(),
        "scripts/container-build: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().last(),
        Some(image.as_str())
    );

    let list = buildah(&["manifest", "inspect", &image]);
    assert!(
        list.status.success(),
        "{}",
        String::from_utf8_lossy(&list.stderr)
    );
    let list: serde_json::Value = serde_json::from_slice(&list.stdout).expect("the list's JSON");
    let mut platforms: Vec<String> = list["manifests"]
        .as_array()
        .expect("manifests")
        .iter()
        .map(|m| format!("{}/{}", m["platform"]["os"], m["platform"]["architecture"]))
        .collect();
    platforms.sort();
    assert_eq!(platforms, [r#""linux"/"amd64""#, r#""linux"/"arm64""#]);

    for (platform, binary) in [("amd64", &x86_64), ("arm64", &aarch64)] {
        let arch_image = format!("{image}-{platform}");
        let inspect = buildah(&["inspect", "--type", "image", &arch_image]);
        let config: serde_json::Value =
            serde_json::from_slice(&inspect.stdout).expect("buildah inspect's JSON");
        assert_eq!(config["OCIv1"]["architecture"], platform, "{arch_image}");
        assert_eq!(config["OCIv1"]["config"]["User"], "65534:65534");

        // The binary in it, read back from the image's layers (no mount, no privileges).
        let dir = tempfile::tempdir().expect("dir");
        let dest = format!("dir:{}", dir.path().join("image").display());
        let push = buildah(&["push", &arch_image, &dest]);
        assert!(
            push.status.success(),
            "{}",
            String::from_utf8_lossy(&push.stderr)
        );
        let manifest: serde_json::Value = serde_json::from_slice(
            &std::fs::read(dir.path().join("image/manifest.json")).expect("manifest.json"),
        )
        .expect("the image's manifest");
        let unpacked = dir.path().join("rootfs");
        std::fs::create_dir_all(&unpacked).expect("mkdir");
        for layer in manifest["layers"].as_array().expect("layers") {
            let digest = layer["digest"].as_str().expect("digest");
            let blob = dir
                .path()
                .join("image")
                .join(digest.trim_start_matches("sha256:"));
            let status = Command::new("tar")
                .arg("-xf")
                .arg(&blob)
                .arg("-C")
                .arg(&unpacked)
                .status()
                .expect("tar");
            assert!(status.success(), "unpacking {digest}");
        }
        let inside = std::fs::read(unpacked.join("usr/local/bin/gpumon")).expect("the binary");
        assert!(
            inside == std::fs::read(binary).expect("read"),
            "{arch_image} does not hold {}",
            binary.display()
        );
    }
}
