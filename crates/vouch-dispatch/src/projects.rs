//! The FlexCI projects and their tags (CuPy's `.pfnci/config.tags.json`), and which of them a
//! request selects.

use std::collections::BTreeSet;

use crate::DispatchError;
use crate::pyjson::PyValue;
use crate::targets::{FORCE_SKIP_TAG, SKIP_TAG};

/// `{"project": ["tag", ...], ...}` in the file's order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectTags {
    projects: Vec<(String, BTreeSet<String>)>,
}

/// What a request comes to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Send the webhook for these projects; the others are `skipped`.
    Dispatch {
        projects: Vec<String>,
        skipped: Vec<String>,
    },
    /// `/test skip` or `/test force-skip` that no project carries: nothing is sent, and every
    /// project is `skipped` (CuPy then marks their statuses; `force` also overrides failures).
    Skip { force: bool, skipped: Vec<String> },
}

impl ProjectTags {
    /// Parses the projects file; `source` names it in messages.
    pub fn parse(bytes: &[u8], source: &str) -> Result<ProjectTags, DispatchError> {
        let invalid = |message: String| DispatchError::Projects {
            source_name: source.to_owned(),
            message,
        };
        let value = PyValue::parse(bytes).map_err(|e| invalid(e.to_string()))?;
        let PyValue::Object(entries) = value else {
            return Err(invalid(format!(
                "is {}, expected an object of project name to a list of tags",
                value.kind()
            )));
        };
        let mut projects = Vec::with_capacity(entries.len());
        for (name, tags) in entries {
            // The names go into the webhook URL's query as they are, as CuPy's dispatcher puts
            // them: a character that needs escaping there would change what FlexCI reads.
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
            {
                return Err(invalid(format!(
                    "project name {name:?}: expected ASCII letters, digits, '.', '_' or '-'"
                )));
            }
            let PyValue::Array(items) = tags else {
                return Err(invalid(format!(
                    "project {name:?}: its tags are {}, expected a list of strings",
                    tags.kind()
                )));
            };
            let mut set = BTreeSet::new();
            for item in items {
                match item {
                    PyValue::Str(tag) => {
                        set.insert(tag);
                    }
                    other => {
                        return Err(invalid(format!(
                            "project {name:?}: a tag is {}, expected a string",
                            other.kind()
                        )));
                    }
                }
            }
            projects.push((name, set));
        }
        Ok(ProjectTags { projects })
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.projects.iter().map(|(n, _)| n.as_str())
    }

    /// A project is selected when it carries every requested tag (`/test mini,windows` picks
    /// the projects tagged both `mini` and `windows`). When none is: `skip` and `force-skip`
    /// dispatch nothing, any other request is an error (it would test nothing).
    pub fn decide(&self, requested: &BTreeSet<String>) -> Result<Decision, DispatchError> {
        let (projects, skipped): (Vec<_>, Vec<_>) = self
            .projects
            .iter()
            .partition(|(_, tags)| requested.is_subset(tags));
        let names = |v: Vec<&(String, BTreeSet<String>)>| -> Vec<String> {
            v.into_iter().map(|(n, _)| n.clone()).collect()
        };
        let (projects, skipped) = (names(projects), names(skipped));
        if !projects.is_empty() {
            return Ok(Decision::Dispatch { projects, skipped });
        }
        let only = |tag: &str| requested.len() == 1 && requested.contains(tag);
        if only(SKIP_TAG) {
            Ok(Decision::Skip {
                force: false,
                skipped,
            })
        } else if only(FORCE_SKIP_TAG) {
            Ok(Decision::Skip {
                force: true,
                skipped,
            })
        } else {
            Err(DispatchError::NoProject {
                tags: requested.iter().cloned().collect(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TAGS: &str = r#"{
        "cupy.linux.cuda130": ["@push", "full", "mini", "linux", "cuda130"],
        "cupy.linux.cuda129.multi": ["full", "multi", "linux", "cuda129"],
        "cupy.win.cuda130": ["@push", "full", "mini", "windows", "cuda130"],
        "cupy.win.cuda129": ["full", "mini", "windows", "cuda129"],
        "cupy.linux.skipper": ["skip-me", "linux"]
    }"#;

    fn tags(t: &[&str]) -> BTreeSet<String> {
        t.iter().map(|s| (*s).to_owned()).collect()
    }

    fn dispatch(p: &[&str]) -> Result<Decision, String> {
        let all = ProjectTags::parse(TAGS.as_bytes(), "t").unwrap();
        Ok(Decision::Dispatch {
            projects: p.iter().map(|s| (*s).to_owned()).collect(),
            skipped: all
                .names()
                .filter(|n| !p.contains(n))
                .map(str::to_owned)
                .collect(),
        })
    }

    #[test]
    fn selection_needs_every_requested_tag() {
        let all = ProjectTags::parse(TAGS.as_bytes(), "t").unwrap();
        let everyone: Vec<String> = all.names().map(str::to_owned).collect();
        let cases: Vec<(&[&str], Result<Decision, String>)> = vec![
            (
                &["mini", "windows"],
                dispatch(&["cupy.win.cuda130", "cupy.win.cuda129"]),
            ),
            (
                &["@push"],
                dispatch(&["cupy.linux.cuda130", "cupy.win.cuda130"]),
            ),
            (
                &["linux"],
                dispatch(&[
                    "cupy.linux.cuda130",
                    "cupy.linux.cuda129.multi",
                    "cupy.linux.skipper",
                ]),
            ),
            (
                &["multi", "cuda129"],
                dispatch(&["cupy.linux.cuda129.multi"]),
            ),
            (
                &["skip"],
                Ok(Decision::Skip {
                    force: false,
                    skipped: everyone.clone(),
                }),
            ),
            (
                &["force-skip"],
                Ok(Decision::Skip {
                    force: true,
                    skipped: everyone.clone(),
                }),
            ),
            // An empty tag (`/test mini,`) is carried by no project.
            (&["mini", ""], Err("mini".into())),
            (&["mini", "rocm"], Err("rocm".into())),
            (&["skip", "mini"], Err("skip".into())),
        ];
        for (requested, want) in cases {
            let got = all.decide(&tags(requested)).map_err(|e| e.to_string());
            match (&got, &want) {
                (Err(g), Err(w)) => {
                    assert!(g.contains(w) && g.contains("no project carries"), "{g}")
                }
                _ => assert_eq!(got, want, "{requested:?}"),
            }
        }
    }

    #[test]
    fn malformed_project_files_are_refused() {
        for (text, says) in [
            ("[]", "is an array, expected an object"),
            (r#"{"p": "mini"}"#, "its tags are a string"),
            (r#"{"p": [1]}"#, "a tag is an integer"),
            (r#"{"a&b": []}"#, "project name \"a&b\""),
            (r#"{"": []}"#, "project name \"\""),
            ("{", "EOF"),
            (r#"{"p": [1.5]}"#, "float"),
        ] {
            let err = ProjectTags::parse(text.as_bytes(), "tags.json")
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(says) && err.contains("tags.json"),
                "{text}: {err}"
            );
        }
    }
}
