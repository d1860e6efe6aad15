//! Pair: which bundle speaks for which extracted wheel.

use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pair {
    pub wheel: PathBuf,
    pub bundle: PathBuf,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PairError {
    #[error("the artifact holds no wheel")]
    NoWheel,
    #[error("no bundle for {}", .0.display())]
    NoBundle(PathBuf),
}

/// Each wheel with its own `<wheel>.sigstore.json`, or else the artifact's only bundle (one
/// bundle may cover several wheels).
pub(crate) fn pair(files: &[PathBuf]) -> Result<Vec<Pair>, PairError> {
    let is_bundle = |f: &Path| f.to_string_lossy().ends_with(".sigstore.json");
    let wheels: Vec<&PathBuf> = files
        .iter()
        .filter(|f| f.extension().is_some_and(|x| x == "whl"))
        .collect();
    let bundles: Vec<&PathBuf> = files.iter().filter(|f| is_bundle(f)).collect();
    if wheels.is_empty() {
        return Err(PairError::NoWheel);
    }
    wheels
        .into_iter()
        .map(|w| {
            let own = PathBuf::from(format!("{}.sigstore.json", w.display()));
            let bundle = if files.contains(&own) {
                own
            } else if let [only] = bundles.as_slice() {
                (*only).clone()
            } else {
                return Err(PairError::NoBundle(w.clone()));
            };
            Ok(Pair {
                wheel: w.clone(),
                bundle,
            })
        })
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
            bundle: b.into(),
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
        ];
        for (files, want) in cases {
            assert_eq!(&pair(&p(files)), want, "{files:?}");
        }
    }
}
