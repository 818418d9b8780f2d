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
