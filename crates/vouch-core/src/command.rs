//! The one way a vouch library starts a child process: a [`Command`] with a cleared
//! environment and only the variables of [`PASSED`] that the caller asked for, so a token in
//! vouch's own environment (`GITHUB_TOKEN`, a cache password) never reaches pip, a build
//! backend, a compiler or a cache tool, and stray settings cannot make two builds differ.
//!
//! What a child cannot start without differs per host (`SYSTEMROOT` on Windows, `HOME` on
//! POSIX) and Windows ignores the case of names: both come from [`HostLayout`].

use std::ffi::OsStr;
use std::process::Command;

use crate::host::HostLayout;

/// Why a variable may pass; a caller names the groups its child needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// Finding programs and a writable home/temp directory: [`HostLayout::system_env`].
    /// Every child gets these.
    System,
    /// Certificates and proxies, for children that reach the network (pip).
    Network,
    /// pip's own configuration (`PIP_*`: index, find-links, certificates).
    Pip,
    /// The C/C++ toolchain the caller chose (`CC`, `CFLAGS`, ...), and on Windows the MSVC
    /// environment a CI step set up ([`HostLayout::compiler_env`]).
    Compiler,
}

/// Every variable a child may inherit on any host, beyond the host's own
/// ([`HostLayout::system_env`], [`HostLayout::compiler_env`]), and the group it belongs to. A
/// name ending in `*` is a prefix.
pub const PASSED: &[(&str, Pass)] = &[
    ("SSL_CERT_FILE", Pass::Network),
    ("SSL_CERT_DIR", Pass::Network),
    ("HTTPS_PROXY", Pass::Network),
    ("HTTP_PROXY", Pass::Network),
    ("NO_PROXY", Pass::Network),
    ("https_proxy", Pass::Network),
    ("http_proxy", Pass::Network),
    ("no_proxy", Pass::Network),
    ("PIP_*", Pass::Pip),
    ("CC", Pass::Compiler),
    ("CXX", Pass::Compiler),
    ("LD", Pass::Compiler),
    ("AR", Pass::Compiler),
    ("CFLAGS", Pass::Compiler),
    ("CXXFLAGS", Pass::Compiler),
    ("CPPFLAGS", Pass::Compiler),
    ("LDFLAGS", Pass::Compiler),
];

/// Set for every child whatever the caller's environment says: output that does not depend
/// on the caller's locale, time zone, or whether pip wants to announce a new version.
pub const PINNED: &[(&str, &str)] = &[
    ("LC_ALL", "C.UTF-8"),
    ("TZ", "UTC"),
    ("PYTHONDONTWRITEBYTECODE", "1"),
    ("PIP_DISABLE_PIP_VERSION_CHECK", "1"),
];

/// Everything a child needs to build and download: the groups pip, a build backend, a
/// compiler and auditwheel are started with.
pub const BUILD: &[Pass] = &[Pass::System, Pass::Network, Pass::Pip, Pass::Compiler];

fn passes(host: HostLayout, name: &str, groups: &[Pass]) -> bool {
    let matches = |pattern: &&str| host.env_name_matches(pattern, name);
    host.system_env().iter().any(matches)
        || (groups.contains(&Pass::Compiler) && host.compiler_env().iter().any(matches))
        || PASSED
            .iter()
            .any(|(pattern, group)| groups.contains(group) && matches(pattern))
}

/// The variables of `vars` a child with `groups` inherits on this host, plus [`PINNED`].
pub fn environment<K: AsRef<OsStr>, V>(
    vars: impl IntoIterator<Item = (K, V)>,
    groups: &[Pass],
) -> Vec<(std::ffi::OsString, std::ffi::OsString)>
where
    V: AsRef<OsStr>,
{
    environment_on(HostLayout::current(), vars, groups)
}

/// [`environment`] as a `host` would compute it.
pub fn environment_on<K: AsRef<OsStr>, V>(
    host: HostLayout,
    vars: impl IntoIterator<Item = (K, V)>,
    groups: &[Pass],
) -> Vec<(std::ffi::OsString, std::ffi::OsString)>
where
    V: AsRef<OsStr>,
{
    let mut out: Vec<_> = vars
        .into_iter()
        .filter(|(k, _)| {
            k.as_ref().to_str().is_some_and(|name| {
                passes(host, name, groups)
                    && !PINNED.iter().any(|(p, _)| host.same_env_name(p, name))
            })
        })
        .map(|(k, v)| (k.as_ref().to_owned(), v.as_ref().to_owned()))
        .collect();
    out.extend(PINNED.iter().map(|(k, v)| (k.into(), v.into())));
    out
}

/// `program` with a cleared environment, then the caller's variables in `groups` (and
/// [`Pass::System`]), then [`PINNED`].
pub fn scrubbed(program: impl AsRef<OsStr>, groups: &[Pass]) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear();
    cmd.envs(environment(std::env::vars_os(), groups));
    cmd
}

/// How a child started by [`run`] failed; each crate wraps it in its own error.
#[derive(Debug)]
pub enum RunError {
    /// It could not be started.
    Spawn(std::io::Error),
    /// It ran and failed: its exit status and the last lines of its output.
    Exited { status: String, output_tail: String },
}

/// Runs `cmd` to the end; its stdout followed by its stderr, or on failure the last
/// `tail_lines` lines of them. `what` names the child in the debug log.
pub fn run(mut cmd: Command, what: &str, tail_lines: usize) -> Result<String, RunError> {
    tracing::debug!(command = %crate::redact::command_line(&cmd), "running {what}");
    let out = cmd.output().map_err(RunError::Spawn)?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    if !out.status.success() {
        return Err(RunError::Exited {
            status: out.status.to_string(),
            output_tail: tail(&text, tail_lines),
        });
    }
    Ok(text)
}

/// The last `lines` lines of a child's output, for an error message.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_decide_what_passes() {
        let caller = [
            ("PATH", "/bin"),
            ("GITHUB_TOKEN", "secret"),
            ("VOUCH_CACHE_PASSWORD", "secret"),
            ("PIP_INDEX_URL", "https://i"),
            ("CC", "clang"),
            ("HTTPS_PROXY", "http://p"),
            ("LC_ALL", "de_DE.UTF-8"),
            ("TZ", "Europe/Berlin"),
        ];
        let names = |groups: &[Pass]| {
            let mut v: Vec<String> = environment_on(HostLayout::Posix, caller, groups)
                .into_iter()
                .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()))
                .collect();
            v.sort();
            v
        };
        let pinned = [
            "LC_ALL=C.UTF-8",
            "PIP_DISABLE_PIP_VERSION_CHECK=1",
            "PYTHONDONTWRITEBYTECODE=1",
            "TZ=UTC",
        ];
        let cases: [(&[Pass], &[&str]); 3] = [
            (&[], &["PATH=/bin"]),
            (&[Pass::Pip], &["PATH=/bin", "PIP_INDEX_URL=https://i"]),
            (
                BUILD,
                &[
                    "CC=clang",
                    "HTTPS_PROXY=http://p",
                    "PATH=/bin",
                    "PIP_INDEX_URL=https://i",
                ],
            ),
        ];
        for (groups, want) in cases {
            let mut want: Vec<String> = want
                .iter()
                .chain(pinned.iter())
                .map(|s| s.to_string())
                .collect();
            want.sort();
            assert_eq!(names(groups), want, "{groups:?}");
        }
    }

    #[test]
    fn windows_children_keep_the_system_and_ignore_case() {
        let caller = [
            ("Path", r"C:\Windows\system32"),
            ("SystemRoot", r"C:\Windows"),
            ("TEMP", r"C:\t"),
            ("PATHEXT", ".COM;.EXE;.BAT"),
            ("ComSpec", r"C:\Windows\system32\cmd.exe"),
            ("ProgramFiles(x86)", r"C:\Program Files (x86)"),
            ("INCLUDE", r"C:\VC\include"),
            ("DISTUTILS_USE_SDK", "1"),
            ("pip_index_url", "https://i"),
            ("GITHUB_TOKEN", "secret"),
            ("HOME", "/c/Users/runner"),
            ("tz", "Europe/Berlin"),
        ];
        let names = |host: HostLayout, groups: &[Pass]| {
            let mut v: Vec<String> = environment_on(host, caller, groups)
                .into_iter()
                .map(|(k, _)| k.to_string_lossy().into_owned())
                .filter(|k| !PINNED.iter().any(|(p, _)| p == k))
                .collect();
            v.sort();
            v
        };
        let system = [
            "ComSpec",
            "PATHEXT",
            "Path",
            "ProgramFiles(x86)",
            "SystemRoot",
            "TEMP",
        ];
        assert_eq!(names(HostLayout::Windows, &[]), system);
        let mut build: Vec<&str> = system
            .iter()
            .copied()
            .chain(["DISTUTILS_USE_SDK", "INCLUDE", "pip_index_url"])
            .collect();
        build.sort();
        assert_eq!(names(HostLayout::Windows, BUILD), build);
        // The same caller on a POSIX host: names are case-sensitive, Windows' are not needed.
        assert_eq!(names(HostLayout::Posix, BUILD), ["HOME"]);
        // `tz` is Windows' `TZ`: the pinned value wins, not the caller's.
        let tz: Vec<_> = environment_on(HostLayout::Windows, caller, &[])
            .into_iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case("TZ"))
            .collect();
        assert_eq!(tz, [("TZ".into(), "UTC".into())]);
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail("a\nb\nc", 2), "b\nc");
        assert_eq!(tail("a", 5), "a");
    }

    #[test]
    fn run_reports_how_a_child_failed() {
        let mut ok = scrubbed("sh", &[]);
        ok.args(["-c", "echo out; echo err >&2"]);
        assert_eq!(run(ok, "sh", 5).unwrap(), "out\nerr\n");
        let mut bad = scrubbed("sh", &[]);
        bad.args(["-c", "echo 1; echo 2; echo 3; exit 3"]);
        match run(bad, "sh", 2) {
            Err(RunError::Exited { output_tail, .. }) => assert_eq!(output_tail, "2\n3"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            run(scrubbed("/nonexistent/vouch-test", &[]), "x", 2),
            Err(RunError::Spawn(_))
        ));
    }
}
