//! The farm's checkout: the tests that run after `vouch install` come from it, so it must be
//! the commit the wheel was built from, or a wheel of one commit is tested with the test files
//! of another (a pull request's job that checked out `refs/pull/<N>/merge` while the wheel was
//! built from the vouched head). The built commit comes from the verified statement, never
//! from the artifact's name or the job's variables.

use std::path::{Path, PathBuf};

use crate::FetchError;
use crate::verify::VerifiedFile;

/// Where the tests will run from, and the commit checked out there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkout {
    pub dir: PathBuf,
    /// `git rev-parse HEAD` at `dir`: the commit itself, never a parent of a merge.
    pub commit: String,
}

impl Checkout {
    /// The checkout at `dir`; `None` when `dir` is not a git checkout (nothing to compare).
    pub fn at(dir: &Path) -> Option<Checkout> {
        vouch_core::git::head(dir).map(|commit| Checkout {
            dir: dir.to_owned(),
            commit,
        })
    }
}

/// Every verified wheel must have been built from the checkout's commit.
pub(crate) fn check(verified: &[VerifiedFile], checkout: &Checkout) -> Result<(), FetchError> {
    for f in verified {
        let built = f.verified.built_commit();
        if built != Some(checkout.commit.as_str()) {
            return Err(FetchError::WrongCheckout {
                dir: checkout.dir.clone(),
                checkout: checkout.commit.clone(),
                wheel: f
                    .pair
                    .wheel
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                built: built.map(str::to_owned),
            });
        }
    }
    Ok(())
}
