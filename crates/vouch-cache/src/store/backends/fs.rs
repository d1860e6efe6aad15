//! A directory: the store for one machine, or a mount several share.
//!
//! Limits: entries are files under `<root>/<scope>/<key>`, written to `<root>/.vouch-tmp` and
//! renamed into place, so a reader never sees a short entry; the temp directory sits under the
//! root so the rename never crosses a filesystem. Who may write what is up to file modes,
//! which `cache check` probes like any credential.

use opendal::Operator;
use opendal::services::Fs;

use super::{Backend, Fence, Location, permission_denied};

pub(super) const BACKEND: Backend = Backend {
    name: "directory",
    form: "a directory path or file:///path",
    // `gha` names the GitHub cache; a directory of that name is `./gha`.
    takes: |spec| (!spec.contains("://") && spec != "gha") || spec.starts_with("file://"),
    check: |l| root_dir(l).map(|_| ()),
    build,
    no_secret: Some("a directory has no credential; file modes decide who writes"),
    fence: Fence::Probe,
    denied: permission_denied,
};

fn root_dir(l: &Location<'_>) -> Result<String, crate::StoreError> {
    match &l.url {
        None => Ok(l.spec.to_owned()),
        Some(u) if u.host_str().is_none_or(str::is_empty) && u.query().is_none() => {
            Ok(u.path().to_owned())
        }
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
