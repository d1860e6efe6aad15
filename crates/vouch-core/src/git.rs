//! The questions vouch asks git, each asked one way, through [`crate::command::scrubbed`].

use std::path::Path;
use std::process::Command;

use crate::command::{Pass, scrubbed};

/// `git -C <dir>` with the scrubbed environment: `GIT_DIR` and friends from the caller's
/// environment never point git at another repository.
pub fn command(dir: &Path) -> Command {
    let mut cmd = scrubbed("git", &[Pass::System]);
    cmd.arg("-C").arg(dir);
    cmd
}

/// Trimmed stdout of a successful `git -C <dir> <args>`; `None` when git is missing, `dir` is
/// not in a repository, or git fails.
pub fn output(dir: &Path, args: &[&str]) -> Option<String> {
    let out = command(dir).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The commit checked out at `dir` (`git rev-parse HEAD`).
pub fn head(dir: &Path) -> Option<String> {
    output(dir, &["rev-parse", "HEAD"])
}

/// The committer time of the last commit that touched `dir` (and below).
pub fn last_commit_time(dir: &Path) -> Option<u64> {
    output(dir, &["log", "-1", "--format=%ct", "--", "."])?
        .parse()
        .ok()
}
