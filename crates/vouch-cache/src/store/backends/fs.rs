//! A directory: the store for one machine, or a mount several share.
//!
//! Limits: entries are files under `<root>/<scope>/@/<key>`, written to `<root>/.vouch-tmp` and
//! renamed into place, so a reader never sees a short entry; the temp directory sits under the
//! root so the rename never crosses a filesystem. Who may write what is up to file modes,
//! which `cache check` probes like any credential.

use opendal::Operator;
use opendal::services::Fs;

use super::{Backend, Fence, Location, permission_denied};

pub(super) const BACKEND: Backend = Backend {
    name: "directory",
    form: "a directory path or file:///path",
    takes: |spec| spec.starts_with("file://") || (!spec.contains("://") && is_path(spec)),
    check: |l| root_dir(l).map(|_| ()),
    build,
    no_secret: Some("a directory has no credential; file modes decide who writes"),
    fence: Fence::Probe,
    denied: permission_denied,
    expiring: None,
};

/// `gha` names the GitHub cache (a directory of that name is `./gha`), and `redis:h:6379` or
/// `s3:/b` is a mistyped URL, not a directory to create (a Windows drive letter is a path).
fn is_path(spec: &str) -> bool {
    let scheme_like = spec.split_once(':').is_some_and(|(s, _)| {
        s.len() > 1
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+.-".contains(&b))
    });
    spec != "gha" && !scheme_like
}

fn root_dir(l: &Location<'_>) -> Result<String, crate::StoreError> {
    match &l.url {
        None => Ok(l.spec.to_owned()),
        Some(u) if u.host_str().is_none_or(str::is_empty) && u.query().is_none() => u
            .to_file_path()
            .map(|p| p.display().to_string())
            .map_err(|()| l.bad("path", "must be file:///absolute/path")),
        Some(_) => Err(l.bad(
            "path",
            "must be file:///absolute/path (no host, no options)",
        )),
    }
}

fn build(l: &Location<'_>) -> Result<(Operator, String), crate::StoreError> {
    let root = root_dir(l)?;
    let tmp = std::path::Path::new(&root).join(".vouch-tmp");
    let builder = Fs::default()
        .root(&root)
        .atomic_write_dir(&tmp.to_string_lossy());
    let op = Operator::new(builder).map_err(l.open_error(BACKEND.name))?;
    Ok((op, format!("directory {root}")))
}
