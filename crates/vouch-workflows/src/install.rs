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
//!
//! With `source`, a run compiles vouch once per kind of machine its jobs run on ([`Builders`]:
//! one job per platform of the matrix, the Linux one also serving the `ubuntu-24.04` jobs) and
//! hands the binary to its other jobs as an artifact of that same run. A consuming job checks
//! the binary against the sha256 the building job reported as a job output, never against
//! anything in the artifact: every job of the run can upload an artifact of that name, and in
//! a pull request's run one of them runs the pull request's code. So a run's trusted jobs
//! (a push's `attest`) take vouch only from their own run, and `vouch-sign.yml` (workflow_run)
//! builds its own instead of taking the pull request run's.

use std::collections::{BTreeMap, BTreeSet};

use vouch_profile::{InstallMode, Platform, WorkflowsSpec};

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

/// The runner label jobs outside the matrix run on (plan, sdist, attest, dispatch, sign).
pub const TOOL_JOB_RUNNER: &str = "ubuntu-24.04";

/// A kind of machine the build jobs of one platform run on: the profile's runner label and,
/// on Linux, its cell image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    pub platform: Platform,
    pub runner: String,
    pub container: Option<String>,
}

/// One job that compiles vouch for the rest of its run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Builder {
    /// Its job id, which consumers name in `needs:`.
    pub id: String,
    /// The artifact it uploads the binary in.
    pub artifact: String,
    pub machine: Machine,
    /// Whether the matrix's build jobs take theirs from it (not so a builder for the tool
    /// jobs alone).
    pub matrix: bool,
}

/// The jobs that compile vouch for one run: one per platform of the matrix, and the one the
/// `ubuntu-24.04` jobs take theirs from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Builders {
    pub jobs: Vec<Builder>,
    /// Index into `jobs` of the one that serves the jobs outside the matrix.
    tools: usize,
}

/// The job id prefix of the builders; `vouch-<platform>`, or `vouch-tools`.
const BUILDER_PREFIX: &str = "vouch-";
/// The artifact prefix of the binaries: `vouch-bin-<platform>`, or `vouch-bin-tools`.
const BINARY_ARTIFACT_PREFIX: &str = "vouch-bin-";
/// Where a consumer downloads the artifact (its workspace is still empty: the fetch steps
/// come before any checkout, which would wipe them) before moving it under `RUNNER_TEMP`.
const DOWNLOAD_DIR: &str = "vouch-download";

impl Builders {
    /// The builders for build jobs on `machines`. A Linux x86_64 cell image (manylinux: an
    /// older glibc than any runner's) or the tool jobs' own runner makes a binary that also runs
    /// on [`TOOL_JOB_RUNNER`]; otherwise the tool jobs get a builder of their own.
    pub fn for_matrix(machines: &[Machine]) -> Builders {
        let mut jobs: Vec<Builder> = machines
            .iter()
            .map(|m| Builder {
                id: format!("{BUILDER_PREFIX}{}", m.platform),
                artifact: format!("{BINARY_ARTIFACT_PREFIX}{}", m.platform),
                machine: m.clone(),
                matrix: true,
            })
            .collect();
        let tools = jobs.iter().position(|b| {
            b.machine.platform.as_str() == TOOL_JOB_PLATFORM
                && (b.machine.container.is_some() || b.machine.runner == TOOL_JOB_RUNNER)
        });
        let tools = tools.unwrap_or_else(|| {
            jobs.push(Builder {
                id: format!("{BUILDER_PREFIX}tools"),
                artifact: format!("{BINARY_ARTIFACT_PREFIX}tools"),
                machine: Machine::tools(),
                matrix: false,
            });
            jobs.len() - 1
        });
        Builders { jobs, tools }
    }

    /// One builder on [`TOOL_JOB_RUNNER`], for a run without a matrix (`vouch-sign.yml`).
    pub fn tools_only(id: &str) -> Builders {
        Builders {
            jobs: vec![Builder {
                id: id.to_owned(),
                artifact: format!("{BINARY_ARTIFACT_PREFIX}tools"),
                machine: Machine::tools(),
                matrix: false,
            }],
            tools: 0,
        }
    }

    pub fn tools(&self) -> &Builder {
        &self.jobs[self.tools]
    }
}

impl Machine {
    fn tools() -> Machine {
        Machine {
            platform: TOOL_JOB_PLATFORM.parse().expect("a platform"),
            runner: TOOL_JOB_RUNNER.to_owned(),
            container: None,
        }
    }
}

/// Which vouch a consuming job takes.
#[derive(Clone, Copy)]
pub(crate) enum Consumer {
    /// A job on [`TOOL_JOB_RUNNER`].
    Tools,
    /// A build job of the matrix: its cell's platform's builder.
    Matrix,
}

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
                    if platform.parse::<Platform>().is_err() {
                        return Err(bad(
                            "workflows.pypi.sha256",
                            platform,
                            &format!("is not a platform ({})", Platform::names()),
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

    /// The job ids a consumer must wait for: the builders it takes vouch from (none with
    /// `pypi`, whose every job installs its own wheel).
    pub(crate) fn needs(&self, builders: &Builders, consumer: Consumer) -> Vec<String> {
        match (self, consumer) {
            (Install::Pypi { .. }, _) => Vec::new(),
            (Install::Source { .. }, Consumer::Tools) => vec![builders.tools().id.clone()],
            (Install::Source { .. }, Consumer::Matrix) => builders
                .jobs
                .iter()
                .filter(|b| b.matrix)
                .map(|b| b.id.clone())
                .collect(),
        }
    }

    /// The jobs that compile vouch for the run (`source`), each run `if: <when>` after
    /// `needs` (may be empty); nothing with `pypi`.
    pub(crate) fn builder_jobs(&self, builders: &Builders, needs: &str, when: &str) -> String {
        if !matches!(self, Install::Source { .. }) {
            return String::new();
        }
        builders
            .jobs
            .iter()
            .map(|b| self.builder_job(b, needs, when))
            .collect()
    }

    fn builder_job(&self, b: &Builder, needs: &str, when: &str) -> String {
        let in_image = b.machine.container.is_some();
        let container = match &b.machine.container {
            Some(image) => format!(
                "    # The cells' image: a vouch built on the runner would need its newer glibc.\n    container: {image}\n"
            ),
            None => String::new(),
        };
        let rust = if in_image {
            fill(
                RUST_IN_IMAGE,
                &[
                    ("RUSTUP", RUSTUP_VERSION),
                    ("RUST", RUST_VERSION),
                    ("SHA_X86_64", RUSTUP_SHA256[0].1),
                    ("SHA_AARCH64", RUSTUP_SHA256[1].1),
                ],
            )
            .replace("        if: matrix.container != ''\n", "")
        } else {
            String::new()
        };
        let needs = if needs.is_empty() {
            String::new()
        } else {
            format!("    needs: {needs}\n")
        };
        fill(
            r#"  @@ID@@:
    name: build vouch (@@WHAT@@)
@@NEEDS@@    if: @@WHEN@@
    runs-on: @@RUNNER@@
@@CONTAINER@@    # Compiled once for the whole run; its other jobs take this binary, checked by sha256.
    timeout-minutes: 45
    permissions: {}
    outputs:
      sha256: ${{ steps.binary.outputs.sha256 }}
    steps:
@@STEPS@@      - name: The binary and its sha256, for this run's other jobs
        id: binary
        run: |
          exe="$HOME/.cargo/bin/vouch"
          if [ -f "$exe.exe" ]; then exe="$exe.exe"; fi
          mkdir -p vouch-out
          cp "$exe" vouch-out/
          sha=$(sha256sum "vouch-out/${exe##*/}" | cut -d' ' -f1)
          echo "vouch sha256: $sha"
          echo "sha256=$sha" >> "$GITHUB_OUTPUT"
      - name: Upload vouch for this run's other jobs
        uses: @@UPLOAD@@
        with:
          name: @@ARTIFACT@@
          path: vouch-out/
          if-no-files-found: error
          overwrite: true
          retention-days: 1

"#,
            &[
                ("ID", &b.id),
                (
                    "WHAT",
                    &if b.matrix {
                        b.machine.platform.to_string()
                    } else {
                        "tool jobs".to_owned()
                    },
                ),
                ("NEEDS", &needs),
                ("WHEN", when),
                ("RUNNER", &b.machine.runner),
                ("CONTAINER", &container),
                (
                    "STEPS",
                    &self.steps_with("python3", if in_image { "-manylinux" } else { "" }, &rust),
                ),
                ("UPLOAD", &crate::pins::UPLOAD_ARTIFACT.uses()),
                ("ARTIFACT", &b.artifact),
            ],
        )
    }

    /// The steps that give a job vouch, before anything else of the job (a checkout would
    /// wipe the download): with `source`, the run's binary from its builder, checked against the
    /// sha256 that builder reported; with `pypi`, the hash-pinned wheel.
    pub(crate) fn fetch_steps(
        &self,
        python: &str,
        builders: &Builders,
        consumer: Consumer,
    ) -> String {
        if let Install::Pypi { .. } = self {
            return self.install_step(python, "");
        }
        let (artifact, sha, from) = match consumer {
            Consumer::Tools => {
                let b = builders.tools();
                (
                    b.artifact.clone(),
                    format!("${{{{ needs.{}.outputs.sha256 }}}}", b.id),
                    format!("this run's {} job", b.id),
                )
            }
            Consumer::Matrix => {
                let arms: Vec<String> = builders
                    .jobs
                    .iter()
                    .filter(|b| b.matrix)
                    .map(|b| {
                        format!(
                            "matrix.platform == '{}' && needs.{}.outputs.sha256",
                            b.machine.platform, b.id
                        )
                    })
                    .collect();
                (
                    format!("{BINARY_ARTIFACT_PREFIX}${{{{ matrix.platform }}}}"),
                    format!("${{{{ {} || '' }}}}", arms.join(" || ")),
                    format!("this run's {BUILDER_PREFIX}<platform> job"),
                )
            }
        };
        fill(
            r#"      - name: Download vouch (built by @@FROM@@)
        uses: @@DOWNLOAD@@
        with:
          name: @@ARTIFACT@@
          path: @@DIR@@
      - name: Check vouch's sha256 and put it on PATH
        env:
          # The building job's output, never anything in the artifact: every job of this run
          # can upload an artifact of that name, and in a pull request's run one of them runs
          # the pull request's code.
          VOUCH_SHA256: @@SHA@@
        run: | # zizmor: ignore[github-env] -- PATH gets a fixed directory under RUNNER_TEMP, nothing an event controls
          dir="$RUNNER_TEMP/vouch-bin"
          rm -rf "$dir"
          mv @@DIR@@ "$dir"
          exe="$dir/vouch"
          if [ -f "$exe.exe" ]; then exe="$exe.exe"; fi
          if ! [[ "$VOUCH_SHA256" =~ ^[0-9a-f]{64}$ ]]; then
            echo "::error::the job that built vouch reported no sha256"
            exit 1
          fi
          got=$(sha256sum "$exe" | cut -d' ' -f1)
          if [ "$got" != "$VOUCH_SHA256" ]; then
            echo "::error::vouch in the artifact has sha256 $got; the job that built it reported $VOUCH_SHA256"
            exit 1
          fi
          chmod +x "$exe"
          "$exe" --version
          echo "$dir" >> "$GITHUB_PATH"
"#,
            &[
                ("FROM", &from),
                ("DOWNLOAD", &crate::pins::DOWNLOAD_ARTIFACT.uses()),
                ("ARTIFACT", &artifact),
                ("DIR", DOWNLOAD_DIR),
                ("SHA", &sha),
            ],
        )
    }

    /// The steps that put `vouch` on `PATH` in a builder job (`source`: from the cache for a
    /// pull request, else compiled and saved; `before_install` prepares the machine) or in any
    /// job (`pypi`). `python` is the interpreter the `pypi` route makes its venv with.
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

    /// One builder per platform; the tool jobs share the linux-64 one only where its binary
    /// runs on their runner (built in an image with an older glibc, or on that runner itself).
    #[test]
    fn builders_per_platform_and_for_the_tool_jobs() {
        let m = |p: &str, runner: &str, image: Option<&str>| Machine {
            platform: p.parse().unwrap(),
            runner: runner.into(),
            container: image.map(str::to_owned),
        };
        let ids = |b: &Builders| -> (Vec<String>, String) {
            (
                b.jobs.iter().map(|j| j.id.clone()).collect(),
                b.tools().id.clone(),
            )
        };
        let cases = [
            (
                vec![
                    m("linux-64", "ubuntu-24.04", Some("img@sha256:0")),
                    m("win-64", "windows-2022", None),
                ],
                (vec!["vouch-linux-64", "vouch-win-64"], "vouch-linux-64"),
            ),
            (
                vec![m("linux-64", "ubuntu-24.04", None)],
                (vec!["vouch-linux-64"], "vouch-linux-64"),
            ),
            (
                vec![m("linux-64", "ubuntu-26.04", None)],
                (vec!["vouch-linux-64", "vouch-tools"], "vouch-tools"),
            ),
            (
                vec![m("win-64", "windows-2022", None)],
                (vec!["vouch-win-64", "vouch-tools"], "vouch-tools"),
            ),
        ];
        for (machines, (jobs, tools)) in cases {
            let b = Builders::for_matrix(&machines);
            assert_eq!(
                ids(&b),
                (
                    jobs.iter().map(|s| s.to_string()).collect(),
                    tools.to_owned()
                )
            );
            let source = Install::Source {
                git: DEFAULT_GIT.into(),
                rev: "a".repeat(40),
            };
            // The matrix waits for the platforms' builders only, never for the tools' own.
            let matrix = source.needs(&b, Consumer::Matrix);
            assert!(!matrix.contains(&"vouch-tools".to_owned()), "{matrix:?}");
            assert_eq!(matrix.len(), machines.len());
        }
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
