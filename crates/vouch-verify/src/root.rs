use std::path::PathBuf;

use sigstore_trust_root::{SigstoreInstance, TrustedRoot};

use crate::tuf::CachedRoot;
use crate::{ErrorKind, VerifyError};

/// Which Sigstore instance's keys and CAs to trust. Production and staging roots are compiled
/// in, so verification works with no network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrustRootSource {
    Production,
    Staging,
    File(PathBuf),
    /// A root `vouch trust update` fetched, already re-verified offline from the TUF cache.
    TufCache(Box<CachedRoot>),
}

impl TrustRootSource {
    /// A root file when one is given, else the embedded staging or production root.
    pub fn choose(file: Option<PathBuf>, staging: bool) -> Self {
        match (file, staging) {
            (Some(p), _) => TrustRootSource::File(p),
            (None, true) => TrustRootSource::Staging,
            (None, false) => TrustRootSource::Production,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            TrustRootSource::Production => "Sigstore production (embedded)".into(),
            TrustRootSource::Staging => "Sigstore staging (embedded)".into(),
            TrustRootSource::File(p) => format!("{}", p.display()),
            TrustRootSource::TufCache(c) => c.describe(),
        }
    }

    pub fn load(&self) -> Result<TrustedRoot, VerifyError> {
        let loaded = match self {
            TrustRootSource::Production => TrustedRoot::from_embedded(SigstoreInstance::PublicGood),
            TrustRootSource::Staging => TrustedRoot::from_embedded(SigstoreInstance::Staging),
            TrustRootSource::File(p) => TrustedRoot::from_file(p),
            TrustRootSource::TufCache(c) => TrustedRoot::from_json(&c.json),
        };
        loaded.map_err(|e| {
            VerifyError::with_source(
                ErrorKind::TrustRoot,
                format!("cannot load trust root {}", self.describe()),
                e,
            )
        })
    }
}
