//! `vouch demo`: the README's main command. The sample package is compiled into the binary so
//! the demo works from any directory with nothing but the toolchain.

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::cli::{DemoArgs, build_options};
use crate::{exit, output};

macro_rules! sample_files {
    ($($path:literal),* $(,)?) => {
        &[$(($path, include_bytes!(concat!("../pyproject-templates/sample/", $path)) as &[u8])),*]
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
        let built =
            vouch_build::build_wheel(&build_options(source, &out, Some(DEMO_EPOCH), &args.env))
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
    if args.common.json {
        output::json(&DemoReport { builds, identical });
    } else {
        for (i, b) in builds.iter().enumerate() {
            output::data(format!("build {}: {}", i + 1, b.sha256));
        }
        output::data(format!(
            "identical: {}",
            if identical { "yes" } else { "no" }
        ));
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
