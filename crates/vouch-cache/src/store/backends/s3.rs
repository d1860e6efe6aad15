//! S3 and S3-compatible object stores (AWS, MinIO, Cloudflare R2, Ceph RGW).
//!
//! Limits: an entry is one PutObject (5 GiB at most; the gateway caps entries far lower), so
//! it is atomic; AWS S3 reads are strongly consistent after a write (other implementations
//! may not be). The fence is an IAM policy per PR prefix (`cache grant` prints it). Without
//! `access_key_id` and a password file, credentials come from the AWS default chain
//! (environment, profile, web identity, instance metadata).

use opendal::Operator;
use opendal::services::S3;

use super::{Backend, Fence, Location, permission_denied, root};
use crate::StoreError;

pub(super) const BACKEND: Backend = Backend {
    name: "s3",
    form: "s3://bucket[/prefix][?region=R&endpoint=URL&access_key_id=ID]",
    takes: |spec| spec.starts_with("s3://"),
    check: |l| parse(l).map(|_| ()),
    build,
    no_secret: None,
    fence: Fence::Probe,
    denied: permission_denied,
    expiring: None,
};

pub(crate) struct S3Location {
    pub bucket: String,
    pub prefix: String,
    pub region: Option<String>,
    pub endpoint: Option<String>,
    pub access_key_id: Option<String>,
}

pub(crate) fn parse(l: &Location<'_>) -> Result<S3Location, StoreError> {
    let mut o = l.options(&["region", "endpoint", "access_key_id"])?;
    Ok(S3Location {
        bucket: l.bucket()?.to_owned(),
        prefix: l.prefix(),
        region: o.remove("region"),
        endpoint: o.remove("endpoint"),
        access_key_id: o.remove("access_key_id"),
    })
}

fn build(l: &Location<'_>) -> Result<(Operator, String), StoreError> {
    let s = parse(l)?;
    let mut b = S3::default().bucket(&s.bucket).root(&root(&s.prefix));
    if let Some(r) = &s.region {
        b = b.region(r);
    }
    if let Some(e) = &s.endpoint {
        b = b.endpoint(e);
    }
    match (&s.access_key_id, l.secret) {
        (Some(id), Some(secret)) => b = b.access_key_id(id).secret_access_key(secret),
        (None, None) => {}
        (Some(_), None) => {
            return Err(l.bad(
                "access_key_id",
                "needs the secret access key in the password file",
            ));
        }
        (None, Some(_)) => {
            return Err(l.bad(
                "access_key_id",
                "is missing: a password file holds the secret of a named access key",
            ));
        }
    }
    let op = Operator::new(b).map_err(l.open_error(BACKEND.name))?;
    let at = s
        .endpoint
        .as_deref()
        .map_or(String::new(), |e| format!(" at {e}"));
    Ok((op, format!("s3 {}/{}{at}", s.bucket, s.prefix)))
}
