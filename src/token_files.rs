//! Token files are consumed before anything can fail. `main` calls [`take_all`] before clap
//! parses the command line, so neither an unknown flag, `--help`, nor a usage error leaves a
//! token file behind; the value parsers then take the contents from here.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

/// Flags whose value is a token file, the flags that keep it, if one may, and the only
/// command where the flag is one (`None`: every command). `--password-file` is consumed only by
/// `dispatch`: a cache store's password file is read again by later steps (the build after
/// `cache check`), so the cache commands leave it in place and say so in their help.
const FLAGS: &[(&str, &[&str], Option<&str>)] = &[
    ("--token-file", &["--keep-token-file"], None),
    ("--oidc-token-file", &[], None),
    (
        "--password-file",
        &["--keep-password-file", "--keep-secret-file"],
        Some("dispatch"),
    ),
    (
        "--secret-file",
        &["--keep-password-file", "--keep-secret-file"],
        Some("dispatch"),
    ),
];

/// Whether `command` with these arguments asks GitHub's API, and so reads `GH_TOKEN_FILE`.
/// Otherwise the file is left alone: a later step may need it.
fn talks_to_github(command: &str, args: &[&OsString]) -> bool {
    let has = |flags: &[&str]| {
        args.iter().any(|a| {
            let a = a.to_string_lossy();
            flags
                .iter()
                .any(|f| a == *f || a.starts_with(&format!("{f}=")))
        })
    };
    match command {
        "fetch" | "install" => true,
        "attest" => has(&["--record-github"]),
        "audit" => has(&["--github-attestations"]),
        // `--owner` alone: the evidence is the owner's attestation store.
        "verify" => {
            has(&["--github-attestations"])
                || has(&["--owner"]) && !has(&["--bundle", "-b", "--attestation", "--provenance"])
        }
        _ => false,
    }
}

type Taken = HashMap<PathBuf, Result<String, String>>;

fn taken() -> &'static Mutex<Taken> {
    static TAKEN: OnceLock<Mutex<Taken>> = OnceLock::new();
    TAKEN.get_or_init(Default::default)
}

/// The token files `args` names (and `GH_TOKEN_FILE`, for the commands that read it), read and
/// removed. Arguments after `--` belong to pip and are not looked at.
pub fn take_all(args: &[OsString]) {
    let args: Vec<&OsString> = args
        .iter()
        .skip(1)
        .take_while(|a| a.as_os_str() != "--")
        .collect();
    let given = |flag: &str| args.iter().any(|a| a.as_os_str() == flag);
    let command = args
        .iter()
        .map(|a| a.to_string_lossy())
        .find(|a| !a.starts_with('-'));
    let mut files: Vec<(PathBuf, bool)> = Vec::new();
    for (i, a) in args.iter().enumerate() {
        let a = a.to_string_lossy();
        for (flag, keep_flags, only_in) in FLAGS {
            if only_in.is_some_and(|c| command.as_deref() != Some(c)) {
                continue;
            }
            let value = if a == *flag {
                args.get(i + 1).map(|v| PathBuf::from(v.as_os_str()))
            } else {
                a.strip_prefix(&format!("{flag}=")).map(PathBuf::from)
            };
            if let Some(v) = value {
                files.push((v, keep_flags.iter().any(|k| given(k))));
            }
        }
    }
    let keep = given("--keep-token-file");
    let reads_env = command.is_some_and(|c| talks_to_github(&c, &args));
    if reads_env && let Some(v) = std::env::var_os("GH_TOKEN_FILE").filter(|v| !v.is_empty()) {
        files.push((PathBuf::from(v), keep));
    }
    let mut map = taken().lock().expect("not poisoned");
    for (path, keep) in files {
        if map.contains_key(&path) {
            continue;
        }
        let read = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read the token file {path:?}: {e}"));
        let removed = if keep {
            Ok(())
        } else {
            std::fs::remove_file(&path)
        };
        let read = match removed {
            Err(e) if path.exists() => Err(format!("cannot remove the token file {path:?}: {e}")),
            _ => read,
        };
        map.insert(path, read);
    }
}

/// The contents of a token file [`take_all`] consumed, or the file read now (a path it did not
/// see, e.g. in tests of the parsers themselves).
pub fn contents(path: &std::path::Path) -> Result<String, String> {
    if let Some(r) = taken().lock().expect("not poisoned").get(path) {
        return r.clone();
    }
    std::fs::read_to_string(path).map_err(|e| format!("cannot read the token file {path:?}: {e}"))
}
