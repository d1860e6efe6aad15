//! How the generated workflows get vouch onto a runner: the one place that knows the install
//! routes. A new route is a variant here, its check, and its step text.
//!
//! - `source` (the default, and the only route that works before a release exists):
//!   `cargo install --locked` from a pinned commit of vouch's repository, cached by that
//!   commit. Every GitHub-hosted runner image (Linux x86_64 and arm64, Windows, macOS) carries
//!   a Rust toolchain, so one route serves the whole matrix.
//! - `pypi`: a released wheel, installed with `--require-hashes`. pip picks the runner's wheel,
//!   so there must be a hash for the wheel of *every* platform a job runs on, or that job
//!   fails at its first step; [`Install::check_covers`] refuses such a profile.

use std::collections::{BTreeMap, BTreeSet};

use vouch_profile::{InstallMode, WorkflowsSpec};

use crate::Error;
use crate::render::fill;

/// rustup-init's release, and the sha256 of its Linux binaries as the rustup project publishes
/// them (`rustup-init.sha256` next to each binary under static.rust-lang.org/rustup/archive/;
/// the same values pin rustup in rust-lang/docker-rust's Dockerfiles).
const RUSTUP_VERSION: &str = "1.28.2";
const RUSTUP_SHA256: [(&str, &str); 2] = [
    (
        "x86_64",
        "20a06e644b0d9bd2fbdbfd52d42540bdde820ea7df86e92e533c073da0cdd43c",
    ),
    (
        "aarch64",
        "e3853c5a252fca15252d07cb23a1bdd9377a8c6f3efa01531109281ae47f841c",
    ),
];
/// The Rust that builds vouch in an image: a fixed release, not whatever `stable` is that day.
const RUST_VERSION: &str = "1.95.0";

const RUST_IN_IMAGE: &str = r#"      - name: Rust in the image, for vouch's source install
        if: matrix.container != ''
        run: | # zizmor: ignore[github-env] -- PATH gets $HOME/.cargo/bin, nothing an event controls
          echo "$HOME/.cargo/bin" >> "$GITHUB_PATH"
          export PATH="$HOME/.cargo/bin:$PATH"
          if command -v vouch >/dev/null || command -v cargo >/dev/null; then exit 0; fi
          arch=$(uname -m)
          case "$arch" in
            x86_64) sha=@@SHA_X86_64@@ ;;
            aarch64) sha=@@SHA_AARCH64@@ ;;
            *) echo "::error::no pinned rustup-init for $arch"; exit 1 ;;
          esac
          init="$RUNNER_TEMP/rustup-init"
          curl --proto '=https' --tlsv1.2 -fsSL -o "$init" \
            "https://static.rust-lang.org/rustup/archive/@@RUSTUP@@/$arch-unknown-linux-gnu/rustup-init"
          echo "$sha  $init" | sha256sum -c -
          chmod +x "$init"
          "$init" -y --no-modify-path --profile minimal --default-toolchain @@RUST@@
"#;

/// vouch's own repository, where `source` installs from unless the profile names a fork.
pub const DEFAULT_GIT: &str = "https://github.com/vouch-build/vouch";
/// The PyPI distribution `pypi` installs unless the profile names another.
pub const DEFAULT_PACKAGE: &str = "vouch-build";
/// The platform of the jobs that run on `ubuntu-24.04` whatever the matrix (plan, attest,
/// sign, dispatch): a PyPI pin must always cover it.
pub const TOOL_JOB_PLATFORM: &str = "linux-64";

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Install {
    Source {
        git: String,
        rev: String,
    },
    Pypi {
        package: String,
        version: String,
        /// Platform name → lowercase sha256 of that platform's wheel.
        sha256: BTreeMap<String, String>,
    },
}

fn bad(option: &'static str, value: &str, reason: &str) -> Error {
    Error::option(option, value, reason)
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit())
}

impl Install {
    /// The route `[workflows]` asks for, its values checked (not yet against the matrix).
    pub fn from_spec(spec: &WorkflowsSpec) -> Result<Install, Error> {
        match spec.install {
            InstallMode::Source => {
                let Some(src) = &spec.source else {
                    return Err(bad(
                        "workflows.source",
                        "",
                        "install = \"source\" needs `[workflows.source] rev = \"<40-hex commit>\"`",
                    ));
                };
                let git = src.git.clone().unwrap_or_else(|| DEFAULT_GIT.to_owned());
                if !git.starts_with("https://")
                    || !git
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"._-/:".contains(&b))
                {
                    return Err(bad(
                        "workflows.source.git",
                        &git,
                        "must be an https:// URL (letters, digits, `.`, `_`, `-`, `/`)",
                    ));
                }
                if !is_hex(&src.rev, 40) {
                    return Err(bad(
                        "workflows.source.rev",
                        &src.rev,
                        "must be a full 40-hex commit (a branch or tag can move)",
                    ));
                }
                Ok(Install::Source {
                    git,
                    rev: src.rev.to_ascii_lowercase(),
                })
            }
            InstallMode::Pypi => {
                let Some(p) = &spec.pypi else {
                    return Err(bad(
                        "workflows.pypi",
                        "",
                        "install = \"pypi\" needs `[workflows.pypi]` with version and sha256",
                    ));
                };
                let package = p
                    .package
                    .clone()
                    .unwrap_or_else(|| DEFAULT_PACKAGE.to_owned());
                if package.is_empty()
                    || !package.bytes().all(|b| {
                        b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b)
                    })
                {
                    return Err(bad(
                        "workflows.pypi.package",
                        &package,
                        "must be a normalized distribution name",
                    ));
                }
                let v = &p.version;
                if !v.starts_with(|c: char| c.is_ascii_digit())
                    || !v
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"._+!-".contains(&b))
                {
                    return Err(bad(
                        "workflows.pypi.version",
                        v,
                        "must be a PEP 440 version",
                    ));
                }
                let mut sha256 = BTreeMap::new();
                for (platform, h) in &p.sha256 {
                    if platform.parse::<vouch_core::Platform>().is_err() {
                        return Err(bad(
                            "workflows.pypi.sha256",
                            platform,
                            &format!("is not a platform ({})", vouch_core::Platform::names()),
                        ));
                    }
                    if !is_hex(h, 64) {
                        return Err(bad("workflows.pypi.sha256", h, "must be 64 hex digits"));
                    }
                    sha256.insert(platform.clone(), h.to_ascii_lowercase());
                }
                Ok(Install::Pypi {
                    package,
                    version: v.clone(),
                    sha256,
                })
            }
        }
    }

    /// Refuses a PyPI pin that leaves a runner platform without a hash: pip would find no
    /// allowed wheel there and the job would fail at its first step.
    pub fn check_covers(&self, platforms: &BTreeSet<String>) -> Result<(), Error> {
        let Install::Pypi { sha256, .. } = self else {
            return Ok(());
        };
        let mut needed = platforms.clone();
        needed.insert(TOOL_JOB_PLATFORM.to_owned());
        let missing: Vec<&str> = needed
            .iter()
            .filter(|p| !sha256.contains_key(*p))
            .map(String::as_str)
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(bad(
                "workflows.pypi.sha256",
                &missing.join(", "),
                "no wheel hash for these runner platforms; every platform a job runs on needs one (jobs outside the matrix run on linux-64)",
            ))
        }
    }

    /// The workflow-level `env:` lines the install step reads (indented two spaces).
    pub(crate) fn env(&self) -> String {
        match self {
            Install::Source { git, rev } => {
                format!("  VOUCH_GIT: '{git}'\n  VOUCH_REV: '{rev}'\n")
            }
            Install::Pypi {
                package,
                version,
                sha256,
            } => {
                let hashes: BTreeSet<&String> = sha256.values().collect();
                let mut line = format!("{package}=={version}");
                for h in hashes {
                    line.push_str(" --hash=sha256:");
                    line.push_str(h);
                }
                format!("  VOUCH_REQUIREMENT: '{line}'\n  PIP_DISABLE_PIP_VERSION_CHECK: '1'\n")
            }
        }
    }

    /// The step(s) that put `vouch` on `PATH`. `python` is the interpreter the `pypi` route
    /// makes its venv with.
    pub(crate) fn steps(&self, python: &str) -> String {
        self.steps_with(python, "", "")
    }

    /// [`Install::steps`] for a build job, whose cell may run in a manylinux image
    /// (`matrix.container`). A vouch built on the runner needs the runner's newer glibc, so
    /// one built in an image is cached under a key of its own; the image has no Rust, so the
    /// `source` route first installs it there.
    pub(crate) fn steps_in_matrix(&self, python: &str) -> String {
        self.steps_with(
            python,
            "${{ matrix.container != '' && '-manylinux' || '' }}",
            &fill(
                RUST_IN_IMAGE,
                &[
                    ("RUSTUP", RUSTUP_VERSION),
                    ("RUST", RUST_VERSION),
                    ("SHA_X86_64", RUSTUP_SHA256[0].1),
                    ("SHA_AARCH64", RUSTUP_SHA256[1].1),
                ],
            ),
        )
    }

    fn steps_with(&self, python: &str, key_suffix: &str, before_install: &str) -> String {
        match self {
            Install::Source { .. } => fill(
                r#"      # A pull request's job may take vouch from the cache; a trusted run's job never
      # restores one (another workflow's entry in the default branch's scope could be
      # poisoned), builds from the pinned commit, and saves the result for pull requests.
      - name: Restore vouch (pull requests only)
        if: github.event_name == 'pull_request'
        uses: @@RESTORE@@
        with:
          path: |
            ~/.cargo/bin/vouch
            ~/.cargo/bin/vouch.exe
          key: vouch-source-${{ env.VOUCH_REV }}-${{ runner.os }}-${{ runner.arch }}@@KEY@@
@@BEFORE@@@@INSTALL@@      - name: Save vouch for pull requests' builds
        if: github.event_name != 'pull_request'
        uses: @@SAVE@@
        with:
          path: |
            ~/.cargo/bin/vouch
            ~/.cargo/bin/vouch.exe
          key: vouch-source-${{ env.VOUCH_REV }}-${{ runner.os }}-${{ runner.arch }}@@KEY@@
"#,
                &[
                    ("RESTORE", &crate::pins::CACHE.sub("restore")),
                    ("KEY", key_suffix),
                    ("BEFORE", before_install),
                    ("INSTALL", &self.install_step(python, "")),
                    ("SAVE", &crate::pins::CACHE.sub("save")),
                ],
            ),
            Install::Pypi { .. } => self.install_step(python, ""),
        }
    }

    /// The install step alone, without the Actions cache, run only `if: <condition>`: for
    /// jobs of `issue_comment`/`pull_request_target` workflows, which must not touch the
    /// cache (their writes land in the default branch's scope).
    pub(crate) fn steps_uncached(&self, python: &str, condition: &str) -> String {
        self.install_step(python, &format!("        if: {condition}\n"))
    }

    /// The step that installs vouch; `condition` is its `if:` line, or empty.
    fn install_step(&self, python: &str, condition: &str) -> String {
        match self {
            Install::Source { .. } => fill(
                r#"      - name: Install vouch (cargo install --locked, pinned commit)
@@IF@@        run: |
          # ~/.cargo/bin is on PATH on every GitHub-hosted runner image.
          if ! command -v vouch >/dev/null; then
            cargo install --locked --git "$VOUCH_GIT" --rev "$VOUCH_REV" vouch
          fi
          vouch --version
"#,
                &[("IF", condition)],
            ),
            Install::Pypi { .. } => fill(
                r#"      - name: Install vouch (hash-pinned wheel)
@@IF@@        env:
          PYTHON: @@PYTHON@@
        run: | # zizmor: ignore[github-env] -- PATH gets a fixed directory under RUNNER_TEMP, nothing an event controls
          venv="$RUNNER_TEMP/vouch-venv"
          "$PYTHON" -m venv "$venv"
          bin="$venv/bin"
          if [ -d "$venv/Scripts" ]; then bin="$venv/Scripts"; fi
          printf '%s\n' "$VOUCH_REQUIREMENT" > "$RUNNER_TEMP/vouch-requirements.txt"
          "$bin/python" -m pip install --no-deps --only-binary :all: --require-hashes \
            -r "$RUNNER_TEMP/vouch-requirements.txt"
          "$bin/vouch" --version
          echo "$bin" >> "$GITHUB_PATH"
"#,
                &[("PYTHON", python), ("IF", condition)],
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vouch_profile::{PypiInstall, SourceInstall};

    fn pypi(hashes: &[(&str, &str)]) -> WorkflowsSpec {
        WorkflowsSpec {
            install: InstallMode::Pypi,
            pypi: Some(PypiInstall {
                package: None,
                version: "0.2.0".into(),
                sha256: hashes
                    .iter()
                    .map(|(p, h)| ((*p).to_owned(), (*h).to_owned()))
                    .collect(),
            }),
            ..WorkflowsSpec::default()
        }
    }

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn pypi_must_cover_every_runner_platform() {
        let a = "a".repeat(64);
        let b = "b".repeat(64);
        let c = "c".repeat(64);
        let matrix = set(&["linux-64", "linux-aarch64", "win-64"]);
        type Hashes<'a> = &'a [(&'a str, &'a str)];
        let cases: &[(Hashes, Option<&str>)] = &[
            (&[("linux-64", &a)], Some("linux-aarch64, win-64")),
            (&[("linux-64", &a), ("win-64", &c)], Some("linux-aarch64")),
            (
                &[("linux-64", &a), ("linux-aarch64", &b), ("win-64", &c)],
                None,
            ),
        ];
        for (hashes, missing) in cases {
            let got = Install::from_spec(&pypi(hashes))
                .unwrap()
                .check_covers(&matrix);
            match missing {
                None => assert!(got.is_ok(), "{hashes:?}: {got:?}"),
                Some(m) => {
                    let e = got.unwrap_err().to_string();
                    assert!(e.contains(m) && e.contains("no wheel hash"), "{e}");
                }
            }
        }
        // A Windows-only matrix still needs the Linux wheel: plan and sign run on Linux.
        let e = Install::from_spec(&pypi(&[("win-64", &c)]))
            .unwrap()
            .check_covers(&set(&["win-64"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"linux-64\""), "{e}");
    }

    #[test]
    fn values_are_checked() {
        let err = |spec: WorkflowsSpec| Install::from_spec(&spec).unwrap_err().to_string();
        assert!(err(pypi(&[("mac-64", &"a".repeat(64))])).contains("is not a platform"));
        assert!(err(pypi(&[("linux-64", "abc")])).contains("64 hex digits"));
        let source = |git: Option<&str>, rev: &str| WorkflowsSpec {
            source: Some(SourceInstall {
                git: git.map(str::to_owned),
                rev: rev.to_owned(),
            }),
            ..WorkflowsSpec::default()
        };
        assert!(err(source(None, "main")).contains("40-hex"));
        assert!(err(source(Some("git@github.com:x/y"), &"a".repeat(40))).contains("https://"));
        assert!(err(WorkflowsSpec::default()).contains("[workflows.source]"));
        let ok = Install::from_spec(&source(None, &"A".repeat(40))).unwrap();
        assert_eq!(
            ok,
            Install::Source {
                git: DEFAULT_GIT.into(),
                rev: "a".repeat(40)
            }
        );
        // The source route runs on every platform.
        ok.check_covers(&set(&["win-64"])).unwrap();
    }
}
