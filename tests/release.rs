//! The binary users copy onto GPU nodes starts there: the one `scripts/release-build` makes
//! needs at most glibc 2.28 (RHEL 8, Ubuntu 20.04 and later), read from the versions its ELF
//! file asks of each library (`.gnu.version_r`), as the dynamic loader checks them at start.
//!
//! `scripts/test` builds that binary and passes its path in `GPUMON_RELEASE_BIN`; CI runs it.

use object::read::elf::ElfFile64;
use object::Endianness;

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

#[test]
fn the_release_binary_needs_at_most_glibc_2_28() {
    let Some(path) = std::env::var_os("GPUMON_RELEASE_BIN") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must check the release binary: scripts/test sets GPUMON_RELEASE_BIN"
        );
        eprintln!("GPUMON_RELEASE_BIN is not set (scripts/test sets it): nothing to check");
        return;
    };
    let bytes = std::fs::read(&path).expect("read the release binary");
    let (release, name) = newest_glibc(&bytes).expect("the binary needs glibc versions");
    assert!(
        release <= MAX_GLIBC,
        "{} needs {name}: it would not start on glibc {}.{}",
        path.to_string_lossy(),
        MAX_GLIBC.0,
        MAX_GLIBC.1
    );
    eprintln!(
        "{}: newest glibc version needed: {name}",
        path.to_string_lossy()
    );
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
