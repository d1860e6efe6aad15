//! One store-URL syntax, parsed here and nowhere else.

use secrecy::{ExposeSecret as _, SecretString};

use super::backends::{self, Backend, Location};
use super::{AnyStore, StoreError};

/// A store as named on the command line, plus the secret from its password file. Never
/// printed whole: [`StoreSpec::display`] is what logs and records show.
#[derive(Clone)]
pub struct StoreSpec {
    spec: String,
    backend: &'static Backend,
    secret: Option<SecretString>,
}

impl std::fmt::Debug for StoreSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreSpec")
            .field("spec", &self.display())
            .field("secret", &self.secret.as_ref().map(|_| "…"))
            .finish()
    }
}

/// `spec` with any password cut out, for messages. A spec that does not parse as a URL
/// (a password with `/` or `?` in it breaks the authority) loses everything up to its last
/// `@`, which is where a password would end.
pub(crate) fn redact(spec: &str) -> String {
    let Some((scheme, rest)) = spec.split_once("://") else {
        return spec.to_owned();
    };
    if let Ok(mut u) = url::Url::parse(spec) {
        if u.password().is_some() {
            let _ = u.set_password(None);
        }
        return u.to_string();
    }
    match rest.rsplit_once('@') {
        Some((_, host)) => format!("{scheme}://…@{host}"),
        None => spec.to_owned(),
    }
}

impl StoreSpec {
    /// Picks the backend `spec` names and checks its form; opens nothing.
    pub fn parse(spec: &str) -> Result<StoreSpec, StoreError> {
        let backend = backends::BACKENDS
            .iter()
            .find(|b| !spec.is_empty() && (b.takes)(spec))
            .ok_or_else(|| StoreError::BadSpec(redact(spec)))?;
        let spec = StoreSpec {
            spec: spec.to_owned(),
            backend,
            secret: None,
        };
        (backend.check)(&spec.location()?)?;
        Ok(spec)
    }

    /// Adds the secret read from a password file (a Redis password, an S3 secret access key,
    /// a GCS service-account key or access token). Only backends with a credential take one.
    pub fn with_secret(mut self, secret: String) -> Result<StoreSpec, StoreError> {
        if let Some(why) = self.backend.no_secret {
            return Err(StoreError::SecretNotTaken {
                backend: self.backend.name,
                spec: self.display(),
                why,
            });
        }
        if self.location()?.url_password().is_some() {
            return Err(StoreError::SecretTwice(self.display()));
        }
        self.secret = Some(SecretString::from(secret));
        Ok(self)
    }

    /// The backend's name (`directory`, `redis`, `s3`, `gcs`, `gha`).
    pub fn backend(&self) -> &'static str {
        self.backend.name
    }

    /// Who fences what a credential for this store may write.
    pub fn fence(&self) -> backends::Fence {
        self.backend.fence
    }

    /// The spec without any password, for logs and records.
    pub fn display(&self) -> String {
        redact(&self.spec)
    }

    pub(crate) fn location(&self) -> Result<Location<'_>, StoreError> {
        Location::new(&self.spec, self.secret())
    }

    /// The secret from the password file, for the code that opens the store only.
    pub(crate) fn secret(&self) -> Option<&str> {
        self.secret.as_ref().map(|s| s.expose_secret())
    }

    pub(crate) fn redis_location(
        &self,
    ) -> Result<(backends::redis::RedisLocation, url::Url), StoreError> {
        let l = self.location()?;
        let r = backends::redis::parse(&l)?;
        Ok((r, l.url.expect("redis stores are URLs")))
    }

    pub(crate) fn s3_location(&self) -> Result<backends::s3::S3Location, StoreError> {
        backends::s3::parse(&self.location()?)
    }

    pub(crate) fn gcs_location(&self) -> Result<backends::gcs::GcsLocation, StoreError> {
        backends::gcs::parse(&self.location()?)
    }

    pub(crate) fn open(&self) -> Result<AnyStore, StoreError> {
        // OpenDAL's HTTP services need a process-wide transport (reqwest with rustls); safe
        // to call on every open.
        opendal::install_default();
        let location = self.location()?;
        let (op, display) = (self.backend.build)(&location)?;
        // A blackholed endpoint (a dropped route, a TCP connection stuck in ESTAB) would
        // otherwise hang every compile waiting on the gateway: 60 s per call, 10 s per read or
        // write of a body chunk (OpenDAL's defaults).
        let op = op.layer(opendal::layers::TimeoutLayer::new());
        Ok(AnyStore {
            op,
            backend: self.backend,
            display,
        })
    }

    /// The store with writes that expire after `ttl`, if the backend can expire a write.
    pub(crate) fn open_expiring(
        &self,
        ttl: std::time::Duration,
    ) -> Result<Option<AnyStore>, StoreError> {
        let Some(expiring) = self.backend.expiring else {
            return Ok(None);
        };
        let mut store = self.open()?;
        let location = self.location()?;
        store.op = expiring(&location, ttl)?.layer(opendal::layers::TimeoutLayer::new());
        Ok(Some(store))
    }
}

impl std::str::FromStr for StoreSpec {
    type Err = StoreError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        StoreSpec::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_pick_one_backend() {
        let cases = [
            ("/var/cache/vouch", Some("directory")),
            ("relative/dir", Some("directory")),
            ("file:///var/cache/vouch", Some("directory")),
            ("redis://h:6379", Some("redis")),
            ("rediss://u:p@h:6380/1", Some("redis")),
            ("s3://bucket", Some("s3")),
            (
                "s3://bucket/vouch?region=us-east-1&endpoint=http://127.0.0.1:9000",
                Some("s3"),
            ),
            ("gs://bucket/prefix", Some("gcs")),
            ("gha", Some("gha")),
            ("gha://cupy", Some("gha")),
            ("", None),
            ("https://u:p@h/x", None),
            ("ftp://h/x", None),
        ];
        for (spec, want) in cases {
            assert_eq!(
                StoreSpec::parse(spec).ok().map(|s| s.backend()),
                want,
                "{spec}"
            );
        }
        assert_eq!(
            StoreSpec::parse("https://u:p@h/x").unwrap_err().to_string(),
            "store \"https://u@h/x\": expected a directory path or file:///path, \
             redis://[user@]host:port[/db], s3://bucket[/prefix][?region=R&endpoint=URL&access_key_id=ID], \
             gs://bucket[/prefix][?endpoint=URL] or gha[://prefix]"
        );
    }

    #[test]
    fn bad_forms_name_the_option_at_fault() {
        let cases = [
            (
                "s3://bucket/p?regio=x",
                "store \"s3://bucket/p?regio=x\": option \"regio\" is not one of region, endpoint, access_key_id",
            ),
            (
                "s3://bucket?endpoint=localhost:9000",
                "store \"s3://bucket?endpoint=localhost:9000\": option \"endpoint\" must be an http:// or https:// URL without user info",
            ),
            (
                "gs://?endpoint=http://x",
                "store \"gs://?endpoint=http://x\": option \"bucket\" is missing (the URL's host)",
            ),
            (
                "redis://u@h:1/x",
                "store \"redis://u@h:1/x\": option \"db\" must be a number (the URL's path)",
            ),
        ];
        for (spec, want) in cases {
            assert_eq!(StoreSpec::parse(spec).unwrap_err().to_string(), want);
        }
    }

    #[test]
    fn redaction_never_shows_a_password() {
        for (spec, want) in [
            ("redis://u:pw@h:6379/1", "redis://u@h:6379/1"),
            ("redis://u:ab/cd@h:6379", "redis://…@h:6379"),
            ("redis://u:a?b@h:6379", "redis://…@h:6379"),
            ("redis://:pw@h:1", "redis://h:1"),
            ("s3://b/p?region=r", "s3://b/p?region=r"),
            ("/srv/cache", "/srv/cache"),
        ] {
            assert_eq!(redact(spec), want, "{spec}");
        }
        let err = StoreSpec::parse("redis://u:ab/cd@h:6379")
            .unwrap_err()
            .to_string();
        assert!(!err.contains("ab/cd"), "{err}");
    }

    #[test]
    fn scheme_typos_are_not_directories() {
        for spec in ["redis:h:6379", "s3:/bucket", "gs:bucket"] {
            let err = StoreSpec::parse(spec).unwrap_err().to_string();
            assert!(err.contains("expected a directory path"), "{spec}: {err}");
        }
        assert_eq!(
            StoreSpec::parse("C:\\cache").unwrap().backend(),
            "directory"
        );
        assert_eq!(StoreSpec::parse("./gha").unwrap().backend(), "directory");
    }

    #[test]
    fn secrets_go_only_where_a_credential_is_taken() {
        let ok = StoreSpec::parse("redis://ci@127.0.0.1:6379")
            .unwrap()
            .with_secret("p@ss".into())
            .unwrap();
        assert_eq!(ok.display(), "redis://ci@127.0.0.1:6379");
        assert!(!format!("{ok:?}").contains("p@ss"));
        let twice = StoreSpec::parse("redis://ci:old@127.0.0.1:6379").unwrap();
        assert_eq!(twice.display(), "redis://ci@127.0.0.1:6379");
        assert_eq!(
            twice.with_secret("new".into()).unwrap_err().to_string(),
            "the store URL \"redis://ci@127.0.0.1:6379\" already has a password; give it only in the file"
        );
        for spec in ["/srv/cache", "gha"] {
            let err = StoreSpec::parse(spec)
                .unwrap()
                .with_secret("x".into())
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("a password file does not apply to"),
                "{err}"
            );
        }
    }
}
