//! Issue 18: the command line as a user of gh, cosign or pip expects it: shell completions and
//! man pages generated from the same grammar `vouch` parses with.

use crate::common::*;

/// The bash script is sourced in a real bash, and completes commands and flags (new ones
/// included) as a user's shell would.
#[test]
fn bash_completions_source_and_complete() {
    let r = run(vouch().args(["completions", "bash"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let dir = tempdir();
    let script = dir.path().join("vouch.bash");
    std::fs::write(&script, &r.stdout).unwrap();
    // `_vouch CMD CUR PREV` with COMP_WORDS/COMP_CWORD, as bash's completion calls it.
    let probe = r#"
set -e
source "$1"
complete -p vouch
complete_at() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=();
  _vouch vouch "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}";
  printf '%s\n' "${COMPREPLY[@]}"; echo ---; }
complete_at vouch ver
complete_at vouch verify --github-a
complete_at vouch attest --record
complete_at vouch completions ''
"#;
    let out = std::process::Command::new("bash")
        .args(["-c", probe, "probe"])
        .arg(&script)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let blocks: Vec<Vec<&str>> = stdout.split("---\n").map(|b| b.lines().collect()).collect();
    assert!(blocks[0][0].contains("-F _vouch vouch"), "{stdout}");
    assert!(blocks[0][1..].contains(&"verify"), "{stdout}");
    assert_eq!(blocks[1], vec!["--github-attestations"], "{stdout}");
    assert_eq!(blocks[2], vec!["--record-github"], "{stdout}");
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        assert!(blocks[3].contains(&shell), "{stdout}");
    }
    // Every other shell gets a script too.
    for shell in ["zsh", "fish", "powershell", "elvish"] {
        let r = run(vouch().args(["completions", shell]));
        assert_eq!(r.code, 0, "{shell}: {}", r.stderr);
        assert!(r.stdout.contains("github-attestations"), "{shell}");
    }
}

#[test]
fn man_pages_build_one_per_command() {
    let dir = tempdir();
    let out = dir.path().join("man1");
    let r = run(vouch().arg("man").arg("--out").arg(&out));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let mut pages: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    pages.sort();
    for want in [
        "vouch.1",
        "vouch-verify.1",
        "vouch-attest.1",
        "vouch-cache-serve.1",
    ] {
        assert!(
            pages.iter().any(|p| p == want),
            "{want} missing from {pages:?}"
        );
    }
    assert!(!pages.iter().any(|p| p.contains("help")), "{pages:?}");
    // A page is roff that man(1) reads: the flag and its help text are in it.
    let verify = std::fs::read_to_string(out.join("vouch-verify.1")).unwrap();
    assert!(verify.starts_with(".ie \\n(.g .ds Aq"), "{}", &verify[..80]);
    assert!(verify.contains("github\\-attestations"), "{verify}");
    assert!(verify.contains("GitHub attestation store"), "{verify}");
    assert_eq!(r.stdout.lines().count(), pages.len());
}

/// `--offline` means no network: the lookups that need one are refused, not tried.
#[test]
fn offline_refuses_what_needs_the_network() {
    let digest = format!("sha256:{}", "0".repeat(64));
    for (args, flag) in [
        (
            vec![
                "verify",
                "--digest",
                &digest,
                "--github-attestations",
                "o/r",
                "--repo",
                "o/r",
                "--offline",
            ],
            "--github-attestations",
        ),
        (vec!["audit", "--pypi", "x==1", "--offline"], "--pypi"),
        (
            vec!["audit", ".", "--github-attestations", "o/r", "--offline"],
            "--github-attestations",
        ),
    ] {
        let r = run(vouch().args(&args));
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains(flag) && r.stderr.contains("--offline"),
            "{}",
            r.stderr
        );
    }
}

/// `GH_TOKEN_FILE` is consumed by `verify`, `audit` and `attest` only when they will talk to
/// GitHub; otherwise the file stays for a later step that needs it.
#[test]
fn gh_token_file_is_taken_only_by_commands_that_use_it() {
    let dir = tempdir();
    let token = dir.path().join("token");
    let digest = format!("sha256:{}", "0".repeat(64));
    std::fs::write(&token, "ghp_x").unwrap();
    let r = run(vouch()
        .args([
            "verify",
            "--digest",
            &digest,
            "--bundle",
            "/nonexistent",
            "--repo",
            "o/r",
        ])
        .env("GH_TOKEN_FILE", &token));
    assert_ne!(r.code, 0);
    assert!(
        token.exists(),
        "verify without --github-attestations leaves it"
    );
    let r = run(vouch()
        .args([
            "verify",
            "--digest",
            &digest,
            "--github-attestations",
            "o/r",
            "--repo",
            "o/r",
        ])
        .args(["--api-url", "http://127.0.0.1:9", "--offline"])
        .env("GH_TOKEN_FILE", &token));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(!token.exists(), "verify --github-attestations takes it");
}
