//! The escape hatch: steps an adopter declares in the profile (`[[workflows.steps.before_build]]`,
//! `[[workflows.steps.after_build]]`), rendered into both build jobs around `vouch build`.
//!
//! Declared steps, not calls to reusable workflows, because they are written *into* the
//! generated file: `check` still compares every byte of it, and the trust audit and the
//! linters read them like any other step (an unpinned `uses:` or a `${{ }}` in `run:` is
//! refused at generation). A reusable workflow is opaque to both and would run with whatever
//! its own file asks for.

use vouch_profile::StepSpec;

use crate::Error;

fn bad(value: &str, reason: &str) -> Error {
    Error::Option {
        option: "workflows.steps",
        value: value.to_owned(),
        reason: reason.to_owned(),
    }
}

/// A YAML double-quoted scalar (JSON's string syntax is valid YAML).
fn quoted(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

fn plain_key(k: &str) -> bool {
    !k.is_empty()
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-".contains(&b))
}

/// The steps as YAML list items indented for a job's `steps:`, each marked as the
/// adopter's, in declaration order.
pub(crate) fn render(steps: &[StepSpec], when: &str) -> Result<String, Error> {
    let mut out = String::new();
    for s in steps {
        if s.name.trim().is_empty() || s.name.contains(['\n', '\r']) {
            return Err(bad(&s.name, "a step needs a one-line name"));
        }
        out.push_str(&format!(
            "      # Declared in the profile ([workflows.steps] {when}).\n      - name: {}\n",
            quoted(&s.name)
        ));
        match (&s.run, &s.uses) {
            (Some(run), None) => {
                if run.starts_with([' ', '\t']) || run.contains('\t') || run.trim().is_empty() {
                    return Err(bad(
                        &s.name,
                        "`run` must be non-empty, without tabs, and its first line must not start with a space",
                    ));
                }
                if !s.with.is_empty() {
                    return Err(bad(&s.name, "`with` belongs to a `uses` step"));
                }
                render_env(&s.env, &s.name, &mut out)?;
                out.push_str("        run: |\n");
                for line in run.trim_end_matches('\n').lines() {
                    if line.is_empty() {
                        out.push('\n');
                    } else {
                        out.push_str(&format!("          {line}\n"));
                    }
                }
            }
            (None, Some(uses)) => {
                if uses.contains(['\n', ' ', '#']) {
                    return Err(bad(uses, "`uses` must be OWNER/REPO[/PATH]@COMMIT"));
                }
                out.push_str(&format!("        uses: {uses}\n"));
                if !s.with.is_empty() {
                    out.push_str("        with:\n");
                    for (k, v) in &s.with {
                        if !plain_key(k) {
                            return Err(bad(k, "a `with` key must be letters, digits, `_`, `-`"));
                        }
                        out.push_str(&format!("          {k}: {}\n", quoted(v)));
                    }
                }
                render_env(&s.env, &s.name, &mut out)?;
            }
            _ => return Err(bad(&s.name, "a step has exactly one of `run` and `uses`")),
        }
    }
    Ok(out)
}

fn render_env(
    env: &std::collections::BTreeMap<String, String>,
    name: &str,
    out: &mut String,
) -> Result<(), Error> {
    if env.is_empty() {
        return Ok(());
    }
    out.push_str("        env:\n");
    for (k, v) in env {
        if !plain_key(k) || k.starts_with("GITHUB_") {
            return Err(bad(
                &format!("{name}: {k}"),
                "an env name must be letters, digits, `_`, `-`, not GITHUB_*",
            ));
        }
        out.push_str(&format!("          {k}: {}\n", quoted(v)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(name: &str, run: Option<&str>, uses: Option<&str>) -> StepSpec {
        StepSpec {
            name: name.into(),
            run: run.map(str::to_owned),
            uses: uses.map(str::to_owned),
            with: Default::default(),
            env: Default::default(),
        }
    }

    #[test]
    fn renders_and_refuses() {
        let mut s = step(
            "Free disk: \"big\" builds",
            Some("df -h\n\nsudo rm -rf /opt/x\n"),
            None,
        );
        s.env.insert("KEEP".into(), "a: b".into());
        let text = render(&[s], "before_build").unwrap();
        assert_eq!(
            text,
            "      # Declared in the profile ([workflows.steps] before_build).\n      - name: \"Free disk: \\\"big\\\" builds\"\n        env:\n          KEEP: \"a: b\"\n        run: |\n          df -h\n\n          sudo rm -rf /opt/x\n"
        );
        let err = |s: StepSpec| render(&[s], "after_build").unwrap_err().to_string();
        assert!(err(step("x", None, None)).contains("exactly one"));
        assert!(err(step("x", Some("a"), Some("b@c"))).contains("exactly one"));
        assert!(err(step("x", Some("  indented"), None)).contains("first line"));
        assert!(err(step("a\nb", Some("x"), None)).contains("one-line name"));
        assert!(err(step("x", None, Some("a/b@v1 # c"))).contains("OWNER/REPO"));
        let mut s = step("x", Some("true"), None);
        s.env.insert("GITHUB_PATH".into(), "/x".into());
        assert!(err(s).contains("GITHUB_"));
    }
}
