//! Google Cloud Storage.
//!
//! Limits: an entry is one media upload (5 TiB at most), atomic and strongly consistent. The
//! fence is an IAM condition on the object-name prefix per PR (`cache grant` prints it). The
//! password file holds a service-account key (JSON) or an OAuth2 access token; without one,
//! credentials come from Google's default chain (GOOGLE_APPLICATION_CREDENTIALS, metadata).

use base64::Engine as _;
use opendal::Operator;
use opendal::services::Gcs;

use super::{Backend, Fence, Location, permission_denied, root};
use crate::StoreError;

pub(super) const BACKEND: Backend = Backend {
    name: "gcs",
    form: "gs://bucket[/prefix][?endpoint=URL]",
    takes: |spec| spec.starts_with("gs://"),
    check: |l| parse(l).map(|_| ()),
    build,
    no_secret: None,
    fence: Fence::Probe,
    denied: permission_denied,
    expiring: None,
};

pub(crate) struct GcsLocation {
    pub bucket: String,
    pub prefix: String,
    pub endpoint: Option<String>,
}

pub(crate) fn parse(l: &Location<'_>) -> Result<GcsLocation, StoreError> {
    let mut o = l.options(&["endpoint"])?;
    Ok(GcsLocation {
        bucket: l.bucket()?.to_owned(),
        prefix: l.prefix(),
        endpoint: o.remove("endpoint"),
    })
}

fn build(l: &Location<'_>) -> Result<(Operator, String), StoreError> {
    let g = parse(l)?;
    let mut b = Gcs::default().bucket(&g.bucket).root(&root(&g.prefix));
    if let Some(e) = &g.endpoint {
        b = b.endpoint(e);
    }
    match l.secret.map(str::trim) {
        Some(key) if key.starts_with('{') => {
            b = b.credential(&base64::engine::general_purpose::STANDARD.encode(key));
        }
        Some(token) => b = b.token(token.to_owned()),
        None => {}
    }
    let op = Operator::new(b).map_err(l.open_error(BACKEND.name))?;
    let at = g
        .endpoint
        .as_deref()
        .map_or(String::new(), |e| format!(" at {e}"));
    Ok((op, format!("gcs {}/{}{at}", g.bucket, g.prefix)))
}
