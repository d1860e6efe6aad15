use std::path::Path;
use std::process::Command;

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
    let out = Command::new("git")
        .arg("-C")
        .arg(source)
        .args(["log", "-1", "--format=%ct", "--", "."])
        .env_remove("GIT_DIR")
        .output();
    if let Ok(out) = out
        && out.status.success()
    {
        let text = String::from_utf8_lossy(&out.stdout);
        if let Ok(e) = text.trim().parse::<u64>() {
            return Ok((e, EpochSource::GitCommit));
        }
    }
    Ok((vouch_wheel::DEFAULT_EPOCH, EpochSource::Default))
}

/// Parses a `SOURCE_DATE_EPOCH` value.
pub fn parse_epoch(s: &str) -> Result<u64, BuildError> {
    s.trim()
        .parse()
        .map_err(|_| BuildError::Epoch(s.to_owned()))
}
