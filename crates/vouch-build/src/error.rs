use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("cannot access {path:?}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{link:?} links to {target:?}, outside the source tree; a build copies only what the source holds"
    )]
    LinkOutside { link: PathBuf, target: PathBuf },
    #[error("{path:?} is not a PEP 517 project: {reason}")]
    Project { path: PathBuf, reason: String },
    #[error("no Python interpreter found: {0}")]
    NoPython(String),
    #[error("cannot start {what}")]
    Spawn {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{what} failed ({status}); last lines of its output:\n{output_tail}")]
    Failed {
        what: String,
        status: String,
        output_tail: String,
    },
    #[error("the build produced {found} wheels; expected exactly one")]
    WheelCount { found: usize },
    #[error("the build produced {found} `.tar.gz` sdists; expected exactly one")]
    SdistCount { found: usize },
    #[error(
        "invalid SOURCE_DATE_EPOCH {0:?}: expected seconds since 1970 as a non-negative integer"
    )]
    Epoch(String),
    #[error("sdist {path:?}: {message}")]
    Sdist { path: PathBuf, message: String },
    #[error("template: {0}")]
    Template(String),
    #[error(transparent)]
    Wheel(#[from] vouch_wheel::WheelError),
    #[error(transparent)]
    SdistNormalize(#[from] vouch_wheel::SdistError),
    /// A sealed tree (the build venv) could not be checked, copied or recorded.
    #[error("build venv")]
    Sealed(#[source] vouch_fs::seal::SealError),
    /// A release wheel needs a repair tool the build venv does not have.
    #[error("repairing {wheel}: {reason}")]
    RepairTool { wheel: String, reason: String },
    /// The repair ran and its result is not a release wheel (still `linux_*`, unreadable).
    #[error("repairing {wheel}: {reason}")]
    Repair { wheel: String, reason: String },
    /// The build tools' lock: missing, stale, or a file the index served that it does not list.
    #[error(transparent)]
    Lock(#[from] crate::lock::LockError),
    /// `--work-dir` would wipe something vouch did not make.
    #[error("work directory {path:?}: {reason}")]
    WorkDir { path: PathBuf, reason: String },
}
