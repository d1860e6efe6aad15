//! Every store vouch can open, one module each. A backend says what its URLs look like, what
//! secret it takes, who fences its credentials, and how it builds an OpenDAL operator.

mod fs;
pub(crate) mod gcs;
mod gha;
pub(crate) mod redis;
pub(crate) mod s3;

use std::collections::BTreeMap;

use opendal::Operator;
use serde::Serialize;

use super::StoreError;
use super::spec::redact;

/// Who stops a pull request's credential from writing a scope it must not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fence {
    /// The credential's own permissions (ACL user, IAM policy, file modes): `cache check`
    /// writes a probe into each forbidden scope and removes it.
    Probe,
    /// The platform scopes writes by the run's trigger (the GitHub cache): nothing to probe,
    /// and nothing could be removed; `cache check` judges the trigger.
    Platform,
}

pub(crate) struct Backend {
    pub name: &'static str,
    /// What its specs look like, for the message that lists what a spec may be.
    pub form: &'static str,
    /// Whether `spec` names this backend; no two backends take one spec.
    pub takes: fn(&str) -> bool,
    /// Checks the spec's form without touching the service.
    pub check: fn(&Location<'_>) -> Result<(), StoreError>,
    /// The operator, and how the store may be shown (never with a secret).
    pub build: fn(&Location<'_>) -> Result<(Operator, String), StoreError>,
    /// Why a password file does not apply, for backends without a credential of their own.
    pub no_secret: Option<&'static str>,
    pub fence: Fence,
    /// Whether an error means "the credential may not" rather than "the service failed".
    pub denied: fn(&opendal::Error) -> bool,
    /// An operator whose writes expire on their own after the given time, where the service
    /// can do that on the write itself: `cache check`'s probes then never outlive a
    /// credential that may write but not delete. `None`: deletion is the only cleanup (object
    /// stores expire objects only through bucket-wide lifecycle rules).
    pub expiring: Option<ExpiringFn>,
}

/// Builds an operator whose writes expire after the given time.
pub(crate) type ExpiringFn = fn(&Location<'_>, std::time::Duration) -> Result<Operator, StoreError>;

/// Every store vouch can open. A new backend is a module and one entry here.
pub(crate) const BACKENDS: &[Backend] = &[
    fs::BACKEND,
    redis::BACKEND,
    s3::BACKEND,
    gcs::BACKEND,
    gha::BACKEND,
];

pub(crate) fn forms() -> String {
    let forms: Vec<&str> = BACKENDS.iter().map(|b| b.form).collect();
    match forms.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => forms.concat(),
    }
}

fn permission_denied(e: &opendal::Error) -> bool {
    e.kind() == opendal::ErrorKind::PermissionDenied
}

/// A spec taken apart: a URL (for `scheme://` forms) and the secret from the password file.
pub(crate) struct Location<'a> {
    pub spec: &'a str,
    pub url: Option<url::Url>,
    pub secret: Option<&'a str>,
}

impl<'a> Location<'a> {
    pub fn new(spec: &'a str, secret: Option<&'a str>) -> Result<Location<'a>, StoreError> {
        let url = if spec.contains("://") {
            Some(url::Url::parse(spec).map_err(|e| StoreError::BadOption {
                spec: redact(spec),
                option: "url".into(),
                problem: format!("does not parse: {e}"),
            })?)
        } else {
            None
        };
        Ok(Location { spec, url, secret })
    }

    fn bad(&self, option: &str, problem: impl Into<String>) -> StoreError {
        StoreError::BadOption {
            spec: redact(self.spec),
            option: option.into(),
            problem: problem.into(),
        }
    }

    fn url(&self) -> &url::Url {
        self.url.as_ref().expect("URL-form backends take only URLs")
    }

    /// The URL's host, required: a bucket name.
    fn bucket(&self) -> Result<&str, StoreError> {
        self.url()
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| self.bad("bucket", "is missing (the URL's host)"))
    }

    /// The URL's path as a key prefix (`""` for none).
    fn prefix(&self) -> String {
        self.url().path().trim_matches('/').to_owned()
    }

    /// The password in the URL's userinfo, percent-decoded.
    pub fn url_password(&self) -> Option<String> {
        let p = self.url.as_ref()?.password()?;
        Some(
            percent_encoding::percent_decode_str(p)
                .decode_utf8_lossy()
                .into_owned(),
        )
    }

    /// The query options, each one of `allowed`.
    fn options(&self, allowed: &[&str]) -> Result<BTreeMap<String, String>, StoreError> {
        let mut out = BTreeMap::new();
        for (k, v) in self.url().query_pairs() {
            if !allowed.contains(&k.as_ref()) {
                return Err(self.bad(&k, format!("is not one of {}", allowed.join(", "))));
            }
            if k == "endpoint" {
                let ok = url::Url::parse(&v).is_ok_and(|u| {
                    matches!(u.scheme(), "http" | "https")
                        && u.username().is_empty()
                        && u.password().is_none()
                });
                if !ok {
                    // Credentials go in the password file, never in a URL that is shown.
                    return Err(
                        self.bad(&k, "must be an http:// or https:// URL without user info")
                    );
                }
            }
            if out.insert(k.clone().into_owned(), v.into_owned()).is_some() {
                return Err(self.bad(&k, "is given twice"));
            }
        }
        Ok(out)
    }

    fn open_error(&self, backend: &'static str) -> impl FnOnce(opendal::Error) -> StoreError {
        let spec = redact(self.spec);
        move |source| StoreError::Open {
            backend,
            spec,
            source: Box::new(source),
        }
    }
}

/// `prefix` as an OpenDAL root (`/` for none): entries then live at `<prefix>/<scope>/@/<key>`.
fn root(prefix: &str) -> String {
    format!("/{prefix}")
}
