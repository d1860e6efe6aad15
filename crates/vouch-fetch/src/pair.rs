//! Pair: which bundle speaks for which extracted wheel.

use std::path::PathBuf;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pair {
    pub wheel: PathBuf,
    /// `None` only when evidence may be found by digest instead (see `by_digest`).
    pub bundle: Option<PathBuf>,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PairError {
    #[error("the artifact holds no wheel")]
    NoWheel,
    #[error("no bundle for {}", .0.display())]
    NoBundle(PathBuf),
    /// Two bundles name the wheel and differ (the message says which).
    #[error("{0}")]
    Ambiguous(String),
}

/// Each wheel with its bundle, by the rule `audit` follows too ([`vouch_verify::bundle_for`]):
/// its own `<wheel>.sigstore.json`, or the one named after its artifact, or else the
/// artifact's only bundle (one bundle may cover several wheels). With `by_digest`, a wheel
/// without one is paired with none, for the attestation store to supply.
pub(crate) fn pair(files: &[PathBuf], by_digest: bool) -> Result<Vec<Pair>, PairError> {
    let wheels: Vec<&PathBuf> = files
        .iter()
        .filter(|f| f.extension().is_some_and(|x| x == "whl"))
        .collect();
    if wheels.is_empty() {
        return Err(PairError::NoWheel);
    }
    wheels
        .into_iter()
        .map(
            |w| match vouch_verify::bundle_for(w, files, vouch_verify::BundleScope::Artifact) {
                Ok(Some(bundle)) => Ok(Pair {
                    wheel: w.clone(),
                    bundle: Some(bundle),
                }),
                Ok(None) if by_digest => Ok(Pair {
                    wheel: w.clone(),
                    bundle: None,
                }),
                Ok(None) => Err(PairError::NoBundle(w.clone())),
                Err(e) => Err(PairError::Ambiguous(e.to_string())),
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairing() {
        let p = |names: &[&str]| names.iter().map(PathBuf::from).collect::<Vec<_>>();
        let ok = |w: &str, b: &str| Pair {
            wheel: w.into(),
            bundle: Some(b.into()),
        };
        type Case<'a> = (&'a [&'a str], Result<Vec<Pair>, PairError>);
        let cases: &[Case] = &[
            (&[], Err(PairError::NoWheel)),
            (&["a.whl.sigstore.json"], Err(PairError::NoWheel)),
            (&["x/a.whl"], Err(PairError::NoBundle("x/a.whl".into()))),
            (
                &["x/a.whl", "x/a.whl.sigstore.json"],
                Ok(vec![ok("x/a.whl", "x/a.whl.sigstore.json")]),
            ),
            (
                &["x/a.whl", "x/b.whl", "x/all.sigstore.json"],
                Ok(vec![
                    ok("x/a.whl", "x/all.sigstore.json"),
                    ok("x/b.whl", "x/all.sigstore.json"),
                ]),
            ),
            (
                &["x/a.whl", "x/b.whl", "x/b.whl.sigstore.json"],
                Ok(vec![
                    ok("x/a.whl", "x/b.whl.sigstore.json"),
                    ok("x/b.whl", "x/b.whl.sigstore.json"),
                ]),
            ),
            (
                &["x/a.whl", "x/b.whl.sigstore.json", "x/c.sigstore.json"],
                Err(PairError::NoBundle("x/a.whl".into())),
            ),
            // Among several bundles, the one named after the wheel's artifact.
            (
                &[
                    "x/c-1-cp312-cp312-win_amd64.whl",
                    "x/c-py3.12-linux-64-1111111111111111111111111111111111111111.sigstore.json",
                    "x/c-py3.12-win-64-pr7-1111111111111111111111111111111111111111.sigstore.json",
                ],
                Ok(vec![ok(
                    "x/c-1-cp312-cp312-win_amd64.whl",
                    "x/c-py3.12-win-64-pr7-1111111111111111111111111111111111111111.sigstore.json",
                )]),
            ),
        ];
        for (files, want) in cases {
            assert_eq!(&pair(&p(files), false), want, "{files:?}");
        }
        // Looking up by digest: a wheel without a bundle waits for the store's.
        assert_eq!(
            pair(&p(&["x/a.whl"]), true),
            Ok(vec![Pair {
                wheel: "x/a.whl".into(),
                bundle: None
            }])
        );
    }
}
