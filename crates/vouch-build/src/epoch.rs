use std::path::Path;

use serde::Serialize;

use crate::BuildError;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EpochSource {
    /// Given by the caller (flag or `SOURCE_DATE_EPOCH`).
    Given,
    /// The committer time of the last commit that touched the source directory.
    GitCommit,
    /// The source is not in git: zip's earliest time.
    Default,
    /// The source is an sdist: the newest modification time among its members.
    Sdist,
}

/// The epoch a build stamps everywhere: the caller's, else the last commit touching `source`
/// (so unrelated commits in a monorepo do not change the wheel), else a fixed default.
pub fn source_date_epoch(
    source: &Path,
    given: Option<u64>,
) -> Result<(u64, EpochSource), BuildError> {
    if let Some(e) = given {
        return Ok((e, EpochSource::Given));
    }
    if let Some(e) = vouch_core::git::last_commit_time(source) {
        return Ok((e, EpochSource::GitCommit));
    }
    Ok((vouch_wheel::DEFAULT_EPOCH, EpochSource::Default))
}

/// Parses a `SOURCE_DATE_EPOCH` value.
pub fn parse_epoch(s: &str) -> Result<u64, BuildError> {
    s.trim()
        .parse()
        .map_err(|_| BuildError::Epoch(s.to_owned()))
}
