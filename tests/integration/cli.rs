//! Shell completions and the man page, generated from the command-line definitions.

use std::process::Command;

use crate::common::gpumon;

#[test]
fn completions_for_every_shell_know_the_commands_and_flags() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = gpumon().args(["completions", shell]).output().expect("run");
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8_lossy(&out.stdout);
        for word in [
            "serve",
            "explain",
            "--web.config.file",
            "--timeout",
            "--demo",
        ] {
            // fish names long options as `-l timeout`.
            let fish = format!("-l {}", word.trim_start_matches("--"));
            assert!(
                script.contains(word) || script.contains(&fish),
                "{shell} completion lacks {word}"
            );
        }
    }
    // bash (and zsh, when installed) accept their scripts.
    let out = gpumon()
        .args(["completions", "bash"])
        .output()
        .expect("run");
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("gpumon.bash");
    std::fs::write(&file, &out.stdout).expect("write");
    let status = Command::new("bash")
        .arg("-n")
        .arg(&file)
        .status()
        .expect("bash");
    assert!(status.success(), "bash -n rejects the completion script");
    let loaded = Command::new("bash")
        .arg("-c")
        .arg(format!("source {}; complete -p gpumon", file.display()))
        .output()
        .expect("bash");
    assert!(
        String::from_utf8_lossy(&loaded.stdout).contains("gpumon"),
        "the script registers a completion for gpumon"
    );
    let bad = gpumon()
        .args(["completions", "tcsh"])
        .output()
        .expect("run");
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn the_man_page_is_roff_with_every_command() {
    let out = gpumon().arg("man").output().expect("run");
    assert!(out.status.success());
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(page.contains(".TH gpumon 1"), "{page}");
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", ".SH SUBCOMMANDS"] {
        assert!(page.contains(section), "missing {section}");
    }
    for command in ["gpumon\\-serve", "gpumon\\-explain", "gpumon\\-completions"] {
        assert!(page.contains(command), "missing {command}");
    }
}
