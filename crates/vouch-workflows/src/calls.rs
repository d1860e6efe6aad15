//! Every `vouch` command line the generated workflows run, with the flags each passes. The
//! workflows install one pinned vouch (`[workflows.source] rev`, or the PyPI wheel), which
//! must accept all of them: a flag renamed after that commit fails on the runner, not here.
//! The CLI's tests hold these calls to its grammar, and `scripts/install-route-source.sh`
//! holds them to the pinned commit's.

use serde::Serialize;
use yaml_rust2::{Yaml, YamlLoader};

use crate::{Error, GeneratedFile};

/// One `vouch …` command in a step's `run:` script.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VouchCall {
    /// The workflow file.
    pub file: String,
    /// The job's id.
    pub job: String,
    /// The words after `vouch` up to the first flag (the subcommand path, then positional
    /// arguments; which is which only the grammar knows).
    pub words: Vec<String>,
    /// Every `--flag` given, without its value, including those of a bash array the command
    /// expands (`"${args[@]}"`, built by `args=(…)`/`args+=(…)` in the same script).
    pub flags: Vec<String>,
}

/// The calls of every file, in file, job and step order.
pub fn vouch_calls(files: &[GeneratedFile]) -> Result<Vec<VouchCall>, Error> {
    let mut out = Vec::new();
    for f in files {
        let docs = YamlLoader::load_from_str(&f.contents).map_err(|e| Error::Yaml {
            file: f.name.clone(),
            message: e.to_string(),
        })?;
        for doc in &docs {
            let Yaml::Hash(jobs) = &doc["jobs"] else {
                continue;
            };
            for (id, job) in jobs {
                let job_id = id.as_str().unwrap_or_default();
                let Yaml::Array(steps) = &job["steps"] else {
                    continue;
                };
                for step in steps {
                    if let Some(script) = step["run"].as_str() {
                        out.extend(script_calls(script).into_iter().map(|(words, flags)| {
                            VouchCall {
                                file: f.name.clone(),
                                job: job_id.to_owned(),
                                words,
                                flags,
                            }
                        }));
                    }
                }
            }
        }
    }
    Ok(out)
}

/// The script's logical lines: continuations (`\` at the end) joined, comments dropped.
fn logical_lines(script: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in script.lines() {
        let trimmed = line.trim();
        if cur.is_empty() && trimmed.starts_with('#') {
            continue;
        }
        match trimmed.strip_suffix('\\') {
            Some(head) => {
                cur.push_str(head);
                cur.push(' ');
            }
            None => {
                cur.push_str(trimmed);
                out.push(std::mem::take(&mut cur));
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Shell words, quotes removed (no expansion): enough to find `vouch`, its words and flags.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => quote = Some(c),
            (None, c) if c.is_whitespace() || ";|&()".contains(c) => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                if ";|&()".contains(c) {
                    out.push(c.to_string());
                }
            }
            (None, c) => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn flag_of(word: &str) -> Option<String> {
    let name = word.strip_prefix("--")?.split('=').next()?;
    (!name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'))
        .then(|| format!("--{name}"))
}

/// `(words, flags)` of each `vouch` command in `script`.
fn script_calls(script: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let lines = logical_lines(script);
    // Flags a bash array collects, by the array's name.
    let mut arrays: Vec<(String, Vec<String>)> = Vec::new();
    for line in &lines {
        let Some((name, _)) = line.split_once("=(") else {
            continue;
        };
        let name = name.trim_end_matches('+');
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            continue;
        }
        let flags: Vec<String> = words(line).iter().filter_map(|w| flag_of(w)).collect();
        match arrays.iter_mut().find(|(n, _)| n == name) {
            Some((_, all)) => all.extend(flags),
            None => arrays.push((name.to_owned(), flags)),
        }
    }
    let mut out = Vec::new();
    for line in &lines {
        let ws = words(line);
        let starts: Vec<usize> = ws
            .iter()
            .enumerate()
            .filter(|(i, w)| {
                *w == "vouch"
                    && (*i == 0 || ["(", ";", "|", "&", "$"].contains(&ws[i - 1].as_str()))
            })
            .map(|(i, _)| i)
            .collect();
        for start in starts {
            let rest = &ws[start + 1..];
            let end = rest
                .iter()
                .position(|w| [";", "|", "&", ")"].contains(&w.as_str()))
                .unwrap_or(rest.len());
            let rest = &rest[..end];
            let lead: Vec<String> = rest
                .iter()
                .take_while(|w| !w.starts_with('-') && !w.starts_with('$'))
                .cloned()
                .collect();
            if lead.is_empty() {
                continue;
            }
            let mut flags: Vec<String> = rest.iter().filter_map(|w| flag_of(w)).collect();
            for w in rest {
                if let Some(name) = w.strip_prefix("${").and_then(|w| w.strip_suffix("[@]}"))
                    && let Some((_, more)) = arrays.iter().find(|(n, _)| n == name)
                {
                    flags.extend(more.iter().cloned());
                }
            }
            flags.dedup();
            out.push((lead, flags));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_calls_continuations_substitutions_and_arrays() {
        let script = r#"# vouch build --not-a-call
args=(--dist "$DIST" --python-version "$PY")
args+=(--pr "$PR")
name=$(vouch name render "${args[@]}" --sha "$SHA")
vouch build --profile p --cell "$CELL" \
  --out dist --python "$PYTHON"
echo "vouch is great" && vouch attest dist/*.whl --out=b.json
cargo install --locked --rev "$VOUCH_REV" vouch
"#;
        let calls = script_calls(script);
        assert_eq!(
            calls,
            vec![
                (
                    vec!["name".into(), "render".into()],
                    vec![
                        "--sha".into(),
                        "--dist".into(),
                        "--python-version".into(),
                        "--pr".into()
                    ]
                ),
                (
                    vec!["build".into()],
                    vec![
                        "--profile".into(),
                        "--cell".into(),
                        "--out".into(),
                        "--python".into()
                    ]
                ),
                (
                    vec!["attest".into(), "dist/*.whl".into()],
                    vec!["--out".into()]
                ),
            ]
        );
    }
}
