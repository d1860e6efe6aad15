//! Rebuilding a released wheel or sdist from the source its provenance names, and comparing the
//! bytes.
//! The provenance must verify first: a rebuild of an unproven claim proves nothing.

use std::path::{Path, PathBuf};

use serde::Serialize;
use vouch_core::Sha256Digest;
use vouch_core::progress::Reporter;
use vouch_verify::{Policy, Trust, VerifyError};

/// What a rebuild found.
#[derive(Debug, Serialize)]
pub struct RebuildReport {
    pub reproduced: bool,
    pub original: Sha256Digest,
    pub rebuilt: Sha256Digest,
    /// The commit the provenance names.
    pub source_commit: Option<String>,
    /// The epoch the provenance records; the rebuild used it.
    pub source_date_epoch: Option<u64>,
    /// What the rebuild had to assume.
    pub notes: Vec<String>,
    /// Member by member, when the bytes differ.
    pub diff: Option<vouch_wheel::WheelDiff>,
}

#[derive(Debug, thiserror::Error)]
pub enum RebuildError {
    #[error("{what} {path:?}")]
    Read {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Verify(#[from] VerifyError),
    /// The source is checked out at another commit than the provenance names.
    #[error(
        "{source_dir:?} is at commit {head}, the provenance names {commit}; check out that commit"
    )]
    WrongCommit {
        source_dir: PathBuf,
        head: String,
        commit: String,
    },
    #[error("creating a scratch directory")]
    Scratch(#[source] std::io::Error),
    #[error("rebuilding")]
    Build(#[source] Box<vouch_build::BuildError>),
    #[error(transparent)]
    Diff(#[from] vouch_wheel::WheelError),
    #[error(transparent)]
    SdistDiff(#[from] vouch_wheel::SdistError),
}

/// A released wheel or sdist (`*.tar.gz`), the evidence for it, and how to build it again.
pub struct Rebuild<'a> {
    pub wheel: &'a Path,
    pub bundle: &'a Path,
    pub policy: &'a Policy,
    pub trust: &'a Trust,
    /// The build's options: its source, interpreter, cache directory and work directory. The
    /// epoch, the output directory and the trust level are decided here.
    pub options: vouch_build::BuildOptions,
}

fn read(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> RebuildError {
    let path = path.to_owned();
    move |source| RebuildError::Read { what, path, source }
}

/// Verifies the file's provenance, builds its source again with the recorded epoch, and
/// compares the two files: a wheel by building a wheel, an sdist by building an sdist.
pub fn rebuild(job: Rebuild<'_>, reporter: &dyn Reporter) -> Result<RebuildReport, RebuildError> {
    let Rebuild {
        wheel,
        bundle,
        policy,
        trust,
        mut options,
    } = job;
    let file = vouch_verify::open_regular(wheel).map_err(read("opening", wheel))?;
    let (digest, _) = Sha256Digest::of_reader(file).map_err(read("reading", wheel))?;
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut vouch_verify::open_regular(bundle).map_err(read("opening", bundle))?,
        &mut text,
    )
    .map_err(read("reading", bundle))?;
    let evidence = vouch_verify::parse_evidence(&text, &bundle.display().to_string())?;
    let ev = evidence.first().ok_or_else(|| {
        VerifyError::new(
            vouch_verify::ErrorKind::Bundle,
            format!("{bundle:?} holds no evidence"),
        )
    })?;
    let verified = trust.verify(&digest, ev, policy)?;
    let epoch = verified.statement.claims.source_date_epoch;
    let commit = verified.signer.sha.clone();

    let mut notes = Vec::new();
    match (vouch_core::git::head(&options.source), &commit) {
        (Some(head), Some(c)) if &head != c => {
            return Err(RebuildError::WrongCommit {
                source_dir: options.source.clone(),
                head,
                commit: c.clone(),
            });
        }
        (None, Some(c)) => notes.push(format!(
            "the source is not a git checkout; it is taken to be commit {c}"
        )),
        _ => {}
    }
    if epoch.is_none() {
        notes.push("the provenance records no source_date_epoch; using the source's own".into());
    }

    let scratch = tempfile::Builder::new()
        .prefix("vouch-rebuild-")
        .tempdir()
        .map_err(RebuildError::Scratch)?;
    options.out_dir = scratch.path().join("out");
    options.source_date_epoch = epoch;
    // No work directory of its own: the canonical one is where the release was built, and a
    // CUDA wheel reproduces only there (see `vouch_build::canonical_work_dir`).
    // Someone else's release runs its own build code: never next to a trusted build's tools.
    options.trust = vouch_build::TrustLevel::Untrusted;
    let name = wheel
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    reporter.note(&format!(
        "rebuilding {name} from {}",
        options.source.display()
    ));
    let build = |e| RebuildError::Build(Box::new(e));
    let (rebuilt, diff) = if name.ends_with(".tar.gz") {
        let built = vouch_build::build_sdist(&options).map_err(build)?;
        let diff = (built.sha256 != digest)
            .then(|| vouch_wheel::diff_sdists(wheel, &built.sdist))
            .transpose()?;
        (built.sha256, diff)
    } else {
        let built = vouch_build::build_wheel(&options).map_err(build)?;
        let diff = (built.sha256 != digest)
            .then(|| vouch_wheel::diff_wheels(wheel, &built.wheel))
            .transpose()?;
        (built.sha256, diff)
    };
    let reproduced = rebuilt == digest;
    Ok(RebuildReport {
        reproduced,
        original: digest,
        rebuilt,
        source_commit: commit,
        source_date_epoch: epoch,
        notes,
        diff,
    })
}
