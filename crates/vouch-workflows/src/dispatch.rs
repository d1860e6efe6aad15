//! Where a finished, signed build is announced: the one place that knows the dispatch modes
//! and renders their steps. A push build dispatches in-run (after its own signing job); a
//! pull request's build is dispatched by the sign workflow, after it re-checked that the
//! pull request still points at the tested head and base.
//!
//! - `flexci`: what CuPy's dispatcher sends FlexCI (the recorded event re-serialised, the
//!   `/test` targets, HMAC-signed with `FLEXCI_WEBHOOK_SECRET`): `vouch dispatch flexci`. For a
//!   pull request the event is `$RUNNER_TEMP/request/event.json`, and `request.json` beside it
//!   (both written by the re-check just before) names the head the signer vouched for: the
//!   command appends it to the body as `vouch.commit`, so the farm can refuse a checkout of a
//!   head pushed after that re-check.
//!   With the App's token it then sets CuPy's commit statuses on the vouched or pushed commit
//!   (`<context> (dashboard)`, and "Skipped" for each project not dispatched).
//!   A `/test skip`, `/test force-skip` or a request for only `external_tags` builds nothing:
//!   the trigger's skip job runs [`Dispatch::skip_steps`] (statuses only, and the external
//!   targets to `vars.VOUCH_EXTERNAL_TEST_REPO` by `repository_dispatch`).
//! - `repository`: a `repository_dispatch` to `vars.VOUCH_TEST_FARM_REPO` with a GitHub App
//!   token: `vouch dispatch repository`. The payload is a hint; the farm verifies.
//! - `none`.

use vouch_profile::DispatchSpec;

use crate::Error;
use crate::render::{TOKEN_TO_FILE, fill};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dispatch {
    None,
    Repository,
    Flexci {
        /// The project → tags JSON, a path in the repository read at the trusted commit.
        projects: String,
        external_tags: Vec<String>,
        uri: Option<String>,
    },
}

/// Which run is announcing: the push build itself, or the sign workflow for a PR build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Announcer {
    PushBuild,
    PrSign,
}

fn bad(option: &'static str, value: &str, reason: &str) -> Error {
    Error::option(option, value, reason)
}

impl Dispatch {
    pub fn from_spec(spec: Option<&DispatchSpec>) -> Result<Dispatch, Error> {
        let Some(spec) = spec else {
            return Ok(Dispatch::None);
        };
        match spec.mode.as_str() {
            "none" => Ok(Dispatch::None),
            "repository" => Ok(Dispatch::Repository),
            "flexci" => {
                let projects = spec.projects.clone().ok_or_else(|| {
                    bad(
                        "workflows.dispatch.projects",
                        "",
                        "mode = \"flexci\" needs the project-to-tags JSON file (e.g. .pfnci/config.tags.json)",
                    )
                })?;
                if !crate::plain_relative_path(&projects) {
                    return Err(bad(
                        "workflows.dispatch.projects",
                        &projects,
                        "must be a plain relative path in the repository",
                    ));
                }
                for t in &spec.external_tags {
                    if t.is_empty()
                        || !t
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
                    {
                        return Err(bad(
                            "workflows.dispatch.external_tags",
                            t,
                            "must be letters, digits, `.`, `_` or `-`",
                        ));
                    }
                }
                if let Some(u) = &spec.uri
                    && (!u.starts_with("https://")
                        || !u
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"._-/:".contains(&b)))
                {
                    return Err(bad(
                        "workflows.dispatch.uri",
                        u,
                        "must be an https:// URL without a query",
                    ));
                }
                Ok(Dispatch::Flexci {
                    projects,
                    external_tags: spec.external_tags.clone(),
                    uri: spec.uri.clone(),
                })
            }
            other => Err(bad(
                "workflows.dispatch.mode",
                other,
                "must be flexci, repository or none",
            )),
        }
    }

    pub fn is_none(&self) -> bool {
        matches!(self, Dispatch::None)
    }

    /// The job's `permissions:` lines (indented six spaces), beyond what the announcer's
    /// own steps need.
    pub(crate) fn permissions(&self) -> &'static str {
        match self {
            Dispatch::Flexci { .. } => {
                "      contents: read # read the FlexCI project list at the trusted commit\n"
            }
            Dispatch::Repository | Dispatch::None => "",
        }
    }

    /// The record job's lines (inside `if [[ "$targets" =~ <skip> ]]; then ... fi`) that make
    /// a request for only external tags build nothing (`skip=external`): FlexCI would run
    /// none of it, and the other CI builds for itself.
    pub(crate) fn external_check(&self) -> String {
        let Dispatch::Flexci { external_tags, .. } = self else {
            return String::new();
        };
        if external_tags.is_empty() {
            return String::new();
        }
        fill(
            r#"          else
            # Every target another CI serves (as CuPy's dispatcher splits and strips them):
            # FlexCI is told to skip, and the targets go to vars.VOUCH_EXTERNAL_TEST_REPO.
            external=",@@TAGS@@,"
            all=true
            while IFS= read -r t; do
              t=$(sed -E 's/^ +//; s/ +$//' <<<"$t")
              if [[ -z "$t" || "$external" != *",$t,"* ]]; then all=false; fi
            done < <(tr ',' '\n' <<<"$targets")
            if [ "$all" = true ]; then
              skip=external
              echo "targets=$targets" >> "$GITHUB_OUTPUT"
            fi
"#,
            &[("TAGS", &external_tags.join(","))],
        )
    }

    /// Whether a `/test` of only these tags is handed to another CI.
    pub(crate) fn has_external(&self) -> bool {
        matches!(self, Dispatch::Flexci { external_tags, .. } if !external_tags.is_empty())
    }

    /// The skip job's `permissions:` lines.
    pub(crate) fn skip_permissions(&self) -> &'static str {
        match self {
            Dispatch::Flexci { .. } => {
                "      contents: read # read the FlexCI project list at the default branch\n"
            }
            Dispatch::Repository | Dispatch::None => "      {}\n",
        }
    }

    /// The trigger's skip job steps after its App token (`steps.token`): for FlexCI, the
    /// statuses CuPy's dispatcher sets when nothing is dispatched, on the commit the request
    /// named (`needs.record.outputs.head_sha`), and the external targets' dispatch. `install`
    /// installs vouch.
    pub(crate) fn skip_steps(&self, install: &str) -> String {
        let Dispatch::Flexci { projects, uri, .. } = self else {
            return String::new();
        };
        let mut text = install.to_owned();
        text.push_str(&projects_step(projects));
        text.push_str(&fill(
            r#"      - name: FlexCI statuses (nothing is dispatched)
        env:
          GH_TOKEN: ${{ steps.token.outputs.token }}
          REPO: ${{ github.repository }}
          HEAD_SHA: ${{ needs.record.outputs.head_sha }}
        run: |
          @@TOKEN_TO_FILE@@
          # No --password-file: a request that would dispatch fails here instead.
          vouch dispatch flexci --event issue_comment --webhook "$GITHUB_EVENT_PATH"             --projects "$RUNNER_TEMP/projects.json" --token-file "$tok" --repo "$REPO"             --commit "$HEAD_SHA"@@FLAGS@@
"#,
            &[
                ("TOKEN_TO_FILE", TOKEN_TO_FILE),
                ("FLAGS", &self.flexci_flags(uri)),
            ],
        ));
        if self.has_external() {
            text.push_str(&fill(
                r#"      - name: External test repository
        id: external
        if: needs.record.outputs.skip == 'external'
        env:
          EXTERNAL_REPO: ${{ vars.VOUCH_EXTERNAL_TEST_REPO }}
        run: |
          if ! [[ "$EXTERNAL_REPO" =~ ^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$ ]]; then
            echo "::error::vars.VOUCH_EXTERNAL_TEST_REPO must be OWNER/NAME"
            exit 1
          fi
          echo "owner=${EXTERNAL_REPO%%/*}" >> "$GITHUB_OUTPUT"
          echo "name=${EXTERNAL_REPO#*/}" >> "$GITHUB_OUTPUT"
@@APP_TOKEN@@      - name: Send the external targets (repository_dispatch)
        if: needs.record.outputs.skip == 'external'
        env:
          GH_TOKEN: ${{ steps.external-token.outputs.token }}
          EXTERNAL_REPO: ${{ vars.VOUCH_EXTERNAL_TEST_REPO }}
          SOURCE_REPO: ${{ github.repository }}
          RUN_ID: ${{ github.run_id }}
          HEAD_SHA: ${{ needs.record.outputs.head_sha }}
          PR_NUMBER: ${{ github.event.issue.number }}
          COMMENT_ID: ${{ github.event.comment.id }}
          TARGETS: ${{ needs.record.outputs.targets }}
        run: |
          # The commit the comment named and the record job checked: the farm tests exactly it.
          jq -n --arg repository "$SOURCE_REPO" --arg run_id "$RUN_ID" --arg head_sha "$HEAD_SHA"             --arg pr "$PR_NUMBER" --arg comment "$COMMENT_ID" --arg targets "$TARGETS"             '{repository: $repository, run_id: ($run_id | tonumber), event: "issue_comment",
              head_sha: $head_sha, pr: ($pr | tonumber), comment_id: ($comment | tonumber),
              targets: ($targets | split(",") | map(gsub("^ +| +$"; "")))}'             > "$RUNNER_TEMP/payload.json"
          @@TOKEN_TO_FILE@@
          vouch dispatch repository --repo "$EXTERNAL_REPO" --token-file "$tok"             --event-type vouch-external-test --payload-file "$RUNNER_TEMP/payload.json"
"#,
                &[
                    ("APP_TOKEN", &crate::render::app_token_step("GitHub App token for the external test repository", "external-token", Some("needs.record.outputs.skip == 'external'"), &["owner: ${{ steps.external.outputs.owner }}", "repositories: ${{ steps.external.outputs.name }}", "permission-contents: write"])),
                    ("TOKEN_TO_FILE", TOKEN_TO_FILE),
                ],
            ));
        }
        text
    }

    fn flexci_flags(&self, uri: &Option<String>) -> String {
        let mut flags = String::new();
        if let Some(u) = uri {
            flags.push_str(&format!(" --flexci-uri '{u}'"));
        }
        if let Dispatch::Flexci { external_tags, .. } = self {
            for t in external_tags {
                flags.push_str(&format!(" --external-tag '{t}'"));
            }
        }
        flags
    }

    /// The steps that announce the build. For [`Announcer::PrSign`] the recorded request is
    /// in `$RUNNER_TEMP/request` (written by `vouch pr-run pin` just before).
    pub(crate) fn steps(&self, who: Announcer) -> String {
        match self {
            Dispatch::None => String::new(),
            Dispatch::Flexci { projects, uri, .. } => {
                let (event, webhook, commit) = match who {
                    Announcer::PushBuild => ("push", "$GITHUB_EVENT_PATH", "${{ github.sha }}"),
                    Announcer::PrSign => (
                        "issue_comment",
                        "$RUNNER_TEMP/request/event.json",
                        "${{ github.event.workflow_run.head_sha }}",
                    ),
                };
                projects_step(projects)
                    + &fill(
                        r#"@@APP_TOKEN@@      - name: Dispatch to FlexCI
        env:
          FLEXCI_WEBHOOK_SECRET: ${{ secrets.FLEXCI_WEBHOOK_SECRET }}
          GH_TOKEN: ${{ steps.statuses-token.outputs.token }}
          REPO: ${{ github.repository }}
          COMMIT: @@COMMIT@@
        run: |
          secret="$RUNNER_TEMP/flexci-secret"
          @@TOKEN_TO_FILE@@
          trap 'rm -f "$secret" "$tok"' EXIT
          (umask 077 && printf '%s' "$FLEXCI_WEBHOOK_SECRET" > "$secret")
          unset FLEXCI_WEBHOOK_SECRET
          # Then the statuses CuPy's dispatcher sets, on this commit: the dashboard, and
          # "Skipped" for each project not dispatched.
          vouch dispatch flexci --event @@EVENT@@ --webhook "@@WEBHOOK@@" \
            --projects "$RUNNER_TEMP/projects.json" --password-file "$secret" \
            --token-file "$tok" --repo "$REPO" --commit "$COMMIT"@@FLAGS@@
"#,
                        &[
                            (
                                "APP_TOKEN",
                                &crate::render::app_token_step(
                                    "GitHub App token for the commit statuses",
                                    "statuses-token",
                                    None,
                                    &["permission-statuses: write"],
                                ),
                            ),
                            ("TOKEN_TO_FILE", TOKEN_TO_FILE),
                            ("COMMIT", commit),
                            ("EVENT", event),
                            ("WEBHOOK", webhook),
                            ("FLAGS", &self.flexci_flags(uri)),
                        ],
                    )
            }
            Dispatch::Repository => {
                let (run, event, sha, pr) = match who {
                    Announcer::PushBuild => {
                        ("${{ github.run_id }}", "push", "${{ github.sha }}", "''")
                    }
                    Announcer::PrSign => (
                        "${{ github.run_id }}",
                        "pull_request",
                        "${{ github.event.workflow_run.head_sha }}",
                        "'@request'",
                    ),
                };
                fill(
                    r#"      - name: Test-farm repository
        id: farm
        env:
          FARM_REPO: ${{ vars.VOUCH_TEST_FARM_REPO }}
        run: |
          if ! [[ "$FARM_REPO" =~ ^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$ ]]; then
            echo "::error::vars.VOUCH_TEST_FARM_REPO must be OWNER/NAME"
            exit 1
          fi
          echo "owner=${FARM_REPO%%/*}" >> "$GITHUB_OUTPUT"
          echo "name=${FARM_REPO#*/}" >> "$GITHUB_OUTPUT"
@@APP_TOKEN@@      - name: Send repository_dispatch
        env:
          GH_TOKEN: ${{ steps.farm-token.outputs.token }}
          FARM_REPO: ${{ vars.VOUCH_TEST_FARM_REPO }}
          SOURCE_REPO: ${{ github.repository }}
          RUN_ID: @@RUN@@
          EVENT: @@EVENT@@
          HEAD_SHA: @@SHA@@
          PR: @@PR@@
        run: |
          pr=""
          if [ "$PR" = @request ]; then pr=$(jq -r '.pr' "$RUNNER_TEMP/request/request.json"); fi
          jq -n --arg repository "$SOURCE_REPO" --arg run_id "$RUN_ID" --arg event "$EVENT" \
            --arg head_sha "$HEAD_SHA" --arg pr "$pr" \
            '{repository: $repository, run_id: ($run_id | tonumber), event: $event,
              head_sha: $head_sha, pr: (if $pr == "" then null else ($pr | tonumber) end)}' \
            > "$RUNNER_TEMP/payload.json"
          @@TOKEN_TO_FILE@@
          vouch dispatch repository --repo "$FARM_REPO" --token-file "$tok" \
            --event-type vouch-build-completed --payload-file "$RUNNER_TEMP/payload.json"
"#,
                    &[
                        (
                            "APP_TOKEN",
                            &crate::render::app_token_step(
                                "GitHub App token for the test farm",
                                "farm-token",
                                None,
                                &[
                                    "owner: ${{ steps.farm.outputs.owner }}",
                                    "repositories: ${{ steps.farm.outputs.name }}",
                                    "permission-contents: write",
                                ],
                            ),
                        ),
                        ("RUN", run),
                        ("EVENT", event),
                        ("SHA", sha),
                        ("PR", pr),
                        ("TOKEN_TO_FILE", TOKEN_TO_FILE),
                    ],
                )
            }
        }
    }
}

/// The FlexCI project list, read at the run's commit: the default branch's (or a push's
/// own) copy, never a pull request's: the list says which contexts a skip marks green and
/// which projects a request reaches, and a pull request must not redefine either.
fn projects_step(projects: &str) -> String {
    fill(
        r#"      - name: FlexCI projects (at the trusted commit)
        env:
          GH_TOKEN: ${{ github.token }}
          REPO: ${{ github.repository }}
          SHA: ${{ github.sha }}
          PROJECTS: '@@PROJECTS@@'
        run: |
          gh api -H 'Accept: application/vnd.github.raw' \
            "repos/$REPO/contents/$PROJECTS?ref=$SHA" > "$RUNNER_TEMP/projects.json"
"#,
        &[("PROJECTS", projects)],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(mode: &str, projects: Option<&str>, tags: &[&str]) -> DispatchSpec {
        DispatchSpec {
            mode: mode.into(),
            projects: projects.map(str::to_owned),
            external_tags: tags.iter().map(|t| (*t).to_owned()).collect(),
            uri: None,
        }
    }

    #[test]
    fn modes() {
        assert_eq!(Dispatch::from_spec(None).unwrap(), Dispatch::None);
        assert_eq!(
            Dispatch::from_spec(Some(&spec("repository", None, &[]))).unwrap(),
            Dispatch::Repository
        );
        let err = |s: DispatchSpec| Dispatch::from_spec(Some(&s)).unwrap_err().to_string();
        assert!(err(spec("flexci", None, &[])).contains("project-to-tags"));
        assert!(err(spec("flexci", Some("../x.json"), &[])).contains("plain relative path"));
        assert!(err(spec("flexci", Some("x.json"), &["a b"])).contains("\"a b\""));
        assert!(err(spec("webhook", None, &[])).contains("flexci, repository or none"));
        let mut s = spec("flexci", Some("x.json"), &[]);
        s.uri = Some("http://ci".into());
        assert!(err(s).contains("https://"));
    }
}
