//! Telling a test farm about a build.
//!
//! - [`flexci`]: FlexCI's signed webhook, byte for byte what CuPy's
//!   `.github/workflows/scripts/flexci_dispatcher.py` sends for the same recorded event:
//!   the tags a `/test` comment asks for ([`targets`]), the projects that carry all of them
//!   ([`projects`]), the event re-serialised as Python's `json.dumps` writes it ([`pyjson`]),
//!   and its HMAC signatures.
//!   A pull request's dispatch also names the commit the signer vouched for ([`vouched`]), so
//!   the farm can refuse a checkout of any other head.
//! - [`repository`]: a GitHub `repository_dispatch`, for a farm that is a GitHub repository.
//! - [`statuses`]: the commit statuses CuPy's dispatcher sets beside a dispatch or a
//!   `/test skip`.
//!
//! Both POST once and never retry: the far side may have started jobs before its answer was
//! lost. The secret and the token only ever go into the request (a signature, a header), never
//! into a log line or an error.

pub mod endpoint;
pub mod flexci;
pub mod projects;
pub mod pyjson;
pub mod repository;
pub mod statuses;
pub mod targets;
pub mod vouched;

#[cfg(test)]
mod testutil;

use std::path::{Path, PathBuf};

pub use endpoint::Endpoint;
pub use flexci::{Job, WebhookRequest, signatures};
pub use projects::{Decision, ProjectTags};
pub use pyjson::PyValue;
pub use repository::RepositoryDispatch;
pub use targets::{Event, requested_tags, tags_for};
pub use vouched::Vouched;

#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    #[error("reading {path:?}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path:?} is not valid JSON for a dispatch")]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("the event's {field} {problem}")]
    Field { field: String, problem: String },
    #[error(
        "the issue_comment event's action is {0:?}, expected \"created\" (only a new comment requests tests)"
    )]
    Action(String),
    #[error(
        "tests cannot be requested by a commenter whose author_association is {0:?}; expected OWNER or MEMBER"
    )]
    NotAllowed(String),
    #[error("the projects file {source_name}: {message}")]
    Projects {
        source_name: String,
        message: String,
    },
    #[error(
        "no project carries every requested tag {tags:?} (a project is dispatched only when it has all of them)"
    )]
    NoProject { tags: Vec<String> },
    #[error("{flag} {url}: {reason}")]
    Endpoint {
        flag: &'static str,
        url: String,
        reason: String,
    },
    #[error("POST {url}: no answer")]
    Unanswered {
        url: String,
        #[source]
        source: vouch_http::HttpError,
    },
    #[error("POST {url}: HTTP {status}: {reason}")]
    Reply {
        url: String,
        status: u16,
        reason: String,
    },
    #[error("POST {url} failed with HTTP {status}{detail}")]
    Status {
        url: String,
        status: u16,
        detail: String,
    },
    #[error("FlexCI refused the webhook: {0}")]
    Refused(String),
    #[error("--repo {0:?}: expected OWNER/NAME")]
    Repo(String),
    #[error("--event-type {0:?}: expected 1 to 100 characters")]
    EventType(String),
    #[error("the client payload: {0}")]
    Payload(String),
    #[error("setting the commit statuses")]
    Github(#[from] vouch_github::GithubError),
}

/// Reads a JSON file Python's way (see [`pyjson`]): an event to re-serialise.
pub fn load_event(path: &Path) -> Result<PyValue, DispatchError> {
    let bytes = read(path)?;
    PyValue::parse(&bytes).map_err(|source| DispatchError::Json {
        path: path.to_owned(),
        source,
    })
}

/// Reads a projects file (see [`ProjectTags`]).
pub fn load_projects(path: &Path) -> Result<ProjectTags, DispatchError> {
    ProjectTags::parse(&read(path)?, &format!("{path:?}"))
}

/// Reads a plain JSON file (a `repository_dispatch` payload).
pub fn load_json(path: &Path) -> Result<serde_json::Value, DispatchError> {
    serde_json::from_slice(&read(path)?).map_err(|source| DispatchError::Json {
        path: path.to_owned(),
        source,
    })
}

fn read(path: &Path) -> Result<Vec<u8>, DispatchError> {
    std::fs::read(path).map_err(|source| DispatchError::Read {
        path: path.to_owned(),
        source,
    })
}
