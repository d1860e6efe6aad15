//! `vouch demo`: the README's main command. The sample package is compiled into the binary so
//! the demo works from any directory with nothing but the toolchain.

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::cli::DemoArgs;
use crate::common::build_options;
use crate::{exit, output};

macro_rules! sample_files {
    ($($path:literal),* $(,)?) => {
        &[$(($path, include_bytes!(concat!("../../pyproject-templates/sample/", $path)) as &[u8])),*]
    };
}

/// The bundled sample, relative path and bytes.
pub const SAMPLE: &[(&str, &[u8])] = sample_files![
    "pyproject.toml",
    "setup.py",
    "MANIFEST.in",
    "src/vouch_sample/__init__.py",
    "csrc/_native.c",
    "csrc/checksum.c",
    "csrc/checksum.h",
    "src/vouch_sample/data/greeting.txt",
];

/// The demo's fixed epoch (2026-01-01T00:00:00Z): the embedded sample has no git history.
const DEMO_EPOCH: u64 = 1_767_225_600;

pub fn write_sample(dir: &Path) -> std::io::Result<()> {
    for (rel, bytes) in SAMPLE {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().expect("relative paths have parents"))?;
        std::fs::write(path, bytes)?;
    }
    Ok(())
}

#[derive(serde::Serialize)]
struct DemoReport {
    builds: Vec<vouch_build::BuildOutput>,
    identical: bool,
    bundle: Option<std::path::PathBuf>,
    verified: Option<vouch_verify::Verified>,
    /// What the installed sample printed on import.
    installed: Option<String>,
}

/// The sample's stand-in provenance: a local key, a local run context.
const DEMO_REPO: &str = "vouch-build/vouch-sample";
const DEMO_COMMIT: &str = "0000000000000000000000000000000000000000";
const DEMO_WORKFLOW: &str = ".github/workflows/ci.yml";
const DEMO_RUN: u64 = 1;

/// The consumer's side on one machine: publish build 1's wheel and bundle into a local
/// artifact store laid out like GitHub's, then `install` it (find, pin the run, verify, pip
/// install with the hash pinned) into a fresh venv, and import it.
fn publish_and_install(
    build: &vouch_build::BuildOutput,
    bundle: &Path,
    public_key: &str,
    out_root: &Path,
    scratch: &Path,
) -> anyhow::Result<String> {
    let store = out_root.join("store");
    let python = build
        .python
        .rsplitn(2, '.')
        .last()
        .unwrap_or(&build.python)
        .to_owned();
    let name = format!("vouch-sample-py{python}-linux-64-{DEMO_COMMIT}");
    let run = vouch_fetch::RunInfo {
        repo: DEMO_REPO.into(),
        run_id: DEMO_RUN,
        workflow_id: 1,
        workflow_path: DEMO_WORKFLOW.into(),
        event: "push".into(),
        head_sha: DEMO_COMMIT.into(),
        head_branch: Some("main".into()),
        pr: None,
        default_branch: "main".into(),
    };
    vouch_fetch::publish(
        &store,
        &name,
        &run,
        &[build.wheel.clone(), bundle.to_owned()],
    )?;
    let venv = scratch.join("venv");
    let st = std::process::Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .context("python3 -m venv")?;
    anyhow::ensure!(st.success(), "python3 -m venv failed");
    let exp = vouch_fetch::Expectation {
        repo: DEMO_REPO.into(),
        workflow: DEMO_WORKFLOW.into(),
        signer_workflow: vouch_fetch::DEFAULT_SIGNER_WORKFLOW.into(),
        event: "push".into(),
        sha: DEMO_COMMIT.into(),
        pr: None,
        artifact_name: name,
        cell: None,
        wait_for_run: Duration::ZERO,
        checkout: None,
    };
    let cfg = vouch_fetch::VerifyConfig {
        trust: vouch_verify::TrustSpec {
            root: vouch_verify::TrustRootSource::Production,
            accept: vouch_verify::Accept::Key(public_key.to_owned()),
        },
        runner: Some("local".into()),
        attestation_store: None,
    };
    let source = vouch_fetch::LocalStore { root: store };
    let rt = crate::common::runtime()?;
    let report = rt.block_on(vouch_fetch::fetch(
        &source,
        &exp,
        &cfg,
        &scratch.join("fetched"),
    ))?;
    let py = venv.join("bin/python");
    vouch_fetch::pip_install_verified(&py, &report, scratch, &["-q".to_owned()])?;
    let out = std::process::Command::new(&py)
        .args(["-c", "import vouch_sample; print(vouch_sample.greeting())"])
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "importing the installed sample failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Signs build 1's wheel with a fresh local key, then verifies build 2's wheel (built from
/// another directory) against that provenance: reproducibility is what lets it pass.
fn sign_and_cross_verify(
    builds: &[vouch_build::BuildOutput],
    out_root: &Path,
) -> anyhow::Result<(std::path::PathBuf, vouch_verify::Verified, String)> {
    let (private, public) = vouch_attest::generate_key()?;
    let key = vouch_attest::load_key(&private, "demo key")?;
    let ctx = vouch_attest::RunContext {
        server_url: "https://github.com".into(),
        repository: DEMO_REPO.into(),
        workflow_path: DEMO_WORKFLOW.into(),
        git_ref: "refs/heads/main".into(),
        sha: DEMO_COMMIT.into(),
        event_name: "push".into(),
        run_id: Some(DEMO_RUN.to_string()),
        runner_environment: Some("local".into()),
        ..Default::default()
    };
    let wheel = &builds[0].wheel;
    let name = wheel
        .file_name()
        .and_then(|n| n.to_str())
        .context("wheel file name")?;
    let statement = vouch_attest::statement_for(
        &ctx,
        vec![vouch_attest::Subject::sha256(name, &builds[0].sha256)],
        // Recorded so that `vouch rebuild` of the demo's wheel uses the same epoch.
        &vouch_attest::VouchClaims {
            source_date_epoch: Some(DEMO_EPOCH),
            ..Default::default()
        },
    );
    let bundle = vouch_attest::sign_with_key(&statement, &key)?;
    let bundle_path = out_root.join(format!("{name}.sigstore.json"));
    crate::common::write_atomically(&bundle_path, bundle.to_json_pretty()?.as_bytes())?;
    crate::common::write_atomically(&out_root.join("demo-key.pub"), public.as_bytes())?;

    let evidence =
        vouch_verify::parse_evidence(&std::fs::read_to_string(&bundle_path)?, "the demo bundle")?;
    let policy = vouch_verify::Policy {
        repository: Some(DEMO_REPO.into()),
        sha: Some(DEMO_COMMIT.into()),
        runner: Some("local".into()),
        ..Default::default()
    };
    let trust = vouch_verify::TrustSpec {
        root: vouch_verify::TrustRootSource::Production,
        accept: vouch_verify::Accept::Key(public.clone()),
    };
    let verified = trust
        .load()?
        .verify(&builds[1].sha256, &evidence[0], &policy)?;
    Ok((bundle_path, verified, public))
}

pub fn run(args: DemoArgs) -> anyhow::Result<ExitCode> {
    let scratch = tempfile::Builder::new()
        .prefix("vouch-demo-")
        .tempdir()
        .context("creating a scratch directory")?;
    let out_root = args
        .out
        .clone()
        .unwrap_or_else(|| scratch.path().join("out"));
    // Two source paths of different lengths and depths, so a leaked path would show.
    let sources = [
        scratch.path().join("a/sample"),
        scratch.path().join("b/deeper/checkout/of/sample"),
    ];
    let mut builds = Vec::new();
    let mut last_start: Option<Instant> = None;
    for (i, source) in sources.iter().enumerate() {
        write_sample(source).with_context(|| format!("writing the sample to {source:?}"))?;
        // At least 2 s apart, so a wall-clock time leaking into the wheel would show too.
        if let Some(t) = last_start {
            std::thread::sleep(Duration::from_secs(2).saturating_sub(t.elapsed()));
        }
        last_start = Some(Instant::now());
        let out = out_root.join(format!("build-{}", i + 1));
        output::note(format!("build {}: {}", i + 1, source.display()));
        // Each build also compiles in its own directory, so a leaked build path would show.
        let mut options = build_options(source, &out, Some(DEMO_EPOCH), &args.env)?;
        options.work_dir = Some(match &args.env.work_dir {
            Some(w) => std::path::absolute(w)?.join(format!("build-{}", i + 1)),
            None => source.with_file_name("work"),
        });
        let built = vouch_build::build_wheel(&options)
            .with_context(|| format!("building the sample from {source:?}"))?;
        output::note(format!(
            "  {}  {}  ({:.1} s)",
            built.sha256,
            built.wheel.display(),
            built.seconds
        ));
        builds.push(built);
    }
    let identical = builds[0].sha256 == builds[1].sha256;
    let (bundle, verified, installed) = if identical {
        let (b, v, public) = sign_and_cross_verify(&builds, &out_root)?;
        let greeting = publish_and_install(&builds[0], &b, &public, &out_root, scratch.path())
            .context("installing the sample from the local artifact store")?;
        (Some(b), Some(v), Some(greeting))
    } else {
        (None, None, None)
    };
    if args.common.json() {
        output::json(&DemoReport {
            builds,
            identical,
            bundle,
            verified,
            installed,
        });
    } else {
        for (i, b) in builds.iter().enumerate() {
            output::data(format!("build {}: {}", i + 1, b.sha256));
        }
        output::data(format!(
            "identical: {}",
            if identical { "yes" } else { "no" }
        ));
        if let Some(b) = &bundle {
            output::data(format!("signed build 1 (local key): {}", b.display()));
            output::data(
                "verified build 2 against that provenance: signature ok, statement ok, digest ok",
            );
        }
        if let Some(g) = &installed {
            output::data(format!(
                "installed from the local artifact store into a fresh venv (run pinned, verified, hash-pinned pip): import says {g:?}"
            ));
        }
    }
    if args.out.is_none() {
        output::note("(wheels were in a temporary directory; pass --out DIR to keep them)");
    }
    Ok(ExitCode::from(if identical {
        exit::SUCCESS
    } else {
        exit::DIFFERENT
    }))
}
