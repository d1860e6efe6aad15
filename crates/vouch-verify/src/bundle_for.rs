//! Which Sigstore bundle speaks for a distribution file. The one rule `audit` (files in a
//! directory) and `fetch` (files of one artifact) both follow:
//!
//! 1. `<file>.sigstore.json`, the file's own (what `vouch fetch` writes next to a wheel);
//! 2. beside a wheel, `<artifact>.sigstore.json` where `<artifact>` is a CI artifact name
//!    (`<dist>-py<X.Y>-<plat>[-pr<N>]-<sha>`, see [`vouch_core::ArtifactName`]) for that
//!    wheel's distribution, Python and platform: what the generated workflows sign into, so a
//!    downloaded artifact audits as it came;
//! 3. within one artifact only ([`BundleScope::Artifact`]), its only bundle, whatever its name
//!    (a bundle may cover every wheel of the artifact).
//!
//! When 1 and 2 (or two of 2) both exist, they must hold the same bytes: vouch never picks one
//! of two different bundles silently. The name only chooses what to verify; the signature and
//! the statement's subjects decide.

use std::path::{Path, PathBuf};

use vouch_core::ArtifactName;
use vouch_wheel::WheelFilename;

use crate::{ErrorKind, VerifyError, open_regular};

pub const BUNDLE_SUFFIX: &str = ".sigstore.json";

/// Where the candidate files come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BundleScope {
    /// A directory of release files: only names tie a bundle to a file.
    Directory,
    /// The files of one CI artifact: its only bundle speaks for all its wheels.
    Artifact,
}

fn file_name(p: &Path) -> &str {
    p.file_name().and_then(|n| n.to_str()).unwrap_or_default()
}

/// Whether `bundle` is named after an artifact that `wheel` could have been built in.
fn names_artifact_of(bundle: &str, wheel: &WheelFilename) -> bool {
    bundle
        .strip_suffix(BUNDLE_SUFFIX)
        .and_then(|stem| stem.parse::<ArtifactName>().ok())
        .is_some_and(|a| a.dist == wheel.normalized_name() && wheel.fits_cell(a.python, a.platform))
}

/// The bundle for `file` among `siblings` (paths of the other files in its directory or
/// artifact, `file` may be among them), or `None` when no rule names one. Two candidates that
/// differ, or that cannot be read to compare, are an error naming both.
pub fn bundle_for(
    file: &Path,
    siblings: &[PathBuf],
    scope: BundleScope,
) -> Result<Option<PathBuf>, VerifyError> {
    let dir = file.parent().unwrap_or(Path::new(""));
    let own = PathBuf::from(format!("{}{BUNDLE_SUFFIX}", file.display()));
    let wheel = file_name(file).parse::<WheelFilename>().ok();
    let mut candidates: Vec<&PathBuf> = Vec::new();
    if siblings.contains(&own) {
        candidates.push(&own);
    }
    if let Some(wheel) = &wheel {
        let mut by_artifact: Vec<&PathBuf> = siblings
            .iter()
            .filter(|s| {
                s.parent().unwrap_or(Path::new("")) == dir
                    && **s != own
                    && names_artifact_of(file_name(s), wheel)
            })
            .collect();
        by_artifact.sort();
        candidates.extend(by_artifact);
    }
    match candidates.as_slice() {
        [] => {}
        [one] => return Ok(Some((*one).clone())),
        [first, rest @ ..] => {
            let bytes = |p: &Path| -> Result<Vec<u8>, VerifyError> {
                let mut data = Vec::new();
                open_regular(p)
                    .and_then(|mut f| std::io::Read::read_to_end(&mut f, &mut data))
                    .map_err(|e| {
                        VerifyError::with_source(
                            ErrorKind::Bundle,
                            format!("cannot read evidence {} to compare it", p.display()),
                            e,
                        )
                    })?;
                Ok(data)
            };
            let want = bytes(first)?;
            for other in rest {
                if bytes(other)? != want {
                    let names: Vec<String> =
                        candidates.iter().map(|c| c.display().to_string()).collect();
                    return Err(VerifyError::new(
                        ErrorKind::Bundle,
                        format!(
                            "{} and {} both name {} and differ; vouch does not choose between bundles: remove the one that does not belong",
                            names[..names.len() - 1].join(", "),
                            names[names.len() - 1],
                            file.display()
                        ),
                    ));
                }
            }
            return Ok(Some((*first).clone()));
        }
    }
    if scope == BundleScope::Artifact {
        let mut all = siblings
            .iter()
            .filter(|s| file_name(s).ends_with(BUNDLE_SUFFIX));
        if let (Some(only), None) = (all.next(), all.next()) {
            return Ok(Some(only.clone()));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "1111111111111111111111111111111111111111";
    const WHEEL: &str = "d/cupy_cuda13x-14.2.0-cp312-cp312-manylinux_2_28_x86_64.whl";

    fn art(rest: &str) -> String {
        format!("d/cupy-cuda13x-{rest}-{SHA}{BUNDLE_SUFFIX}")
    }

    /// The naming rule, with every bundle holding the same bytes.
    #[test]
    fn naming_table() {
        let own = format!("{WHEEL}{BUNDLE_SUFFIX}");
        let pr = art("py3.12-linux-64-pr7");
        let push = art("py3.12-linux-64");
        type Case = (Vec<String>, BundleScope, Option<String>);
        let cases: Vec<Case> = vec![
            (vec![], BundleScope::Directory, None),
            (vec![own.clone()], BundleScope::Directory, Some(own.clone())),
            (vec![pr.clone()], BundleScope::Directory, Some(pr.clone())),
            (
                vec![push.clone()],
                BundleScope::Directory,
                Some(push.clone()),
            ),
            // Own first when both exist (and agree).
            (
                vec![pr.clone(), own.clone()],
                BundleScope::Directory,
                Some(own.clone()),
            ),
            // Another cell's, another distribution's, another directory's: not this wheel's.
            (vec![art("py3.13-linux-64")], BundleScope::Directory, None),
            (vec![art("py3.12-win-64")], BundleScope::Directory, None),
            (vec![art("py3.12t-linux-64")], BundleScope::Directory, None),
            (
                vec![format!(
                    "d/cupy-cuda12x-py3.12-linux-64-{SHA}{BUNDLE_SUFFIX}"
                )],
                BundleScope::Directory,
                None,
            ),
            (
                vec![format!(
                    "e/cupy-cuda13x-py3.12-linux-64-{SHA}{BUNDLE_SUFFIX}"
                )],
                BundleScope::Directory,
                None,
            ),
            // Not an artifact name at all: only an artifact's only bundle.
            (
                vec!["d/all.sigstore.json".into()],
                BundleScope::Directory,
                None,
            ),
            (
                vec!["d/all.sigstore.json".into()],
                BundleScope::Artifact,
                Some("d/all.sigstore.json".into()),
            ),
            (
                vec!["d/all.sigstore.json".into(), "d/b.sigstore.json".into()],
                BundleScope::Artifact,
                None,
            ),
            (
                vec![art("py3.13-linux-64")],
                BundleScope::Artifact,
                Some(art("py3.13-linux-64")),
            ),
        ];
        let root = tempfile::tempdir().unwrap();
        for (present, scope, want) in cases {
            let at = |p: &str| root.path().join(p);
            let mut siblings = vec![at(WHEEL)];
            for p in &present {
                std::fs::create_dir_all(at(p).parent().unwrap()).unwrap();
                std::fs::write(at(p), b"same bundle").unwrap();
                siblings.push(at(p));
            }
            let got = bundle_for(&at(WHEEL), &siblings, scope).unwrap();
            assert_eq!(got, want.as_deref().map(at), "{present:?} {scope:?}");
            for p in &present {
                std::fs::remove_file(at(p)).unwrap();
            }
        }
    }

    #[test]
    fn two_different_bundles_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let d = root.path().join("d");
        std::fs::create_dir_all(&d).unwrap();
        let wheel = root.path().join(WHEEL);
        let own = PathBuf::from(format!("{}{BUNDLE_SUFFIX}", wheel.display()));
        let pr = root.path().join(art("py3.12-linux-64-pr7"));
        std::fs::write(&own, b"one").unwrap();
        std::fs::write(&pr, b"another").unwrap();
        let siblings = vec![wheel.clone(), own.clone(), pr.clone()];
        for scope in [BundleScope::Directory, BundleScope::Artifact] {
            let e = bundle_for(&wheel, &siblings, scope).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Bundle);
            assert_eq!(
                e.to_string(),
                format!(
                    "bundle check failed: {} and {} both name {} and differ; vouch does not choose between bundles: remove the one that does not belong",
                    own.display(),
                    pr.display(),
                    wheel.display()
                )
            );
        }
    }
}
