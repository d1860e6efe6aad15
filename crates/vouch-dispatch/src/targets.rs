//! Which test tags an event asks for, read as CuPy's dispatcher reads them: an
//! `issue_comment` names them on its first line that is exactly `/test TAG[,TAG]...`; a push
//! asks for `@push`.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use crate::DispatchError;
use crate::pyjson::PyValue;

/// The events FlexCI is dispatched for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    IssueComment,
    Push,
}

impl Event {
    /// The name GitHub gives the event (`X-GitHub-Event`, the `rule=` of the webhook URL).
    pub fn as_str(self) -> &'static str {
        match self {
            Event::IssueComment => "issue_comment",
            Event::Push => "push",
        }
    }
}

/// The tag a push asks for.
pub const PUSH_TAG: &str = "@push";
/// Tags that, when no project carries them, dispatch nothing (only statuses are set).
pub const SKIP_TAG: &str = "skip";
pub const FORCE_SKIP_TAG: &str = "force-skip";
/// Who may ask for tests. FlexCI checks membership itself; this is for a clear refusal.
pub const ALLOWED_ASSOCIATIONS: &[&str] = &["OWNER", "MEMBER"];

/// The tags a comment body asks for, or `None` when no line is a test request.
///
/// The first line (as Python's `str.splitlines` cuts them) that matches
/// `/test ([\w,\- ]+)` in full, with Python's Unicode `\w` (letters, numbers, `_`), is split
/// on `,` and each part stripped of spaces; an empty part stays (`/test mini,` asks for
/// `mini` and `""`). A last word `@<7 to 40 lowercase hex>` names the commit the maintainer
/// vouches for (`/test mini @1a2b3c4`, read by the trigger); it is no tag, and the line is
/// still a request (CuPy's dispatcher, which predates it, would see none).
pub fn requested_tags(body: &str) -> Option<BTreeSet<String>> {
    // Python's `\w` on str is exactly Unicode categories L and N plus `_`; regex's own `\w`
    // also takes marks and connector punctuation, so the class is spelled out.
    static TEST_LINE: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r"\A/test ([\p{L}\p{N}_,\- ]+?)(?: +@[0-9a-f]{7,40})?\z")
            .expect("a valid pattern")
    });
    splitlines(body).into_iter().find_map(|line| {
        let group = TEST_LINE.captures(line)?.get(1)?.as_str();
        Some(
            group
                .split(',')
                .map(|t| t.trim_matches(' ').to_owned())
                .collect(),
        )
    })
}

/// Python's `str.splitlines()`: breaks at `\n`, `\r`, `\r\n`, `\v`, `\f`, `\x1c`-`\x1e`,
/// `\x85`, U+2028 and U+2029 (Rust's `lines` knows only the first three); no empty last line.
pub fn splitlines(s: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if !matches!(
            c,
            '\n' | '\r'
                | '\u{b}'
                | '\u{c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        ) {
            continue;
        }
        lines.push(&s[start..i]);
        let mut end = i + c.len_utf8();
        if c == '\r'
            && let Some(&(j, '\n')) = chars.peek()
        {
            chars.next();
            end = j + 1;
        }
        start = end;
    }
    if start < s.len() {
        lines.push(&s[start..]);
    }
    lines
}

/// What the event asks for: `None` when an `issue_comment` holds no test request (nothing is
/// to be done), else the tags. Checked in the order CuPy's dispatcher checks: the comment must
/// be `created`; tags that are all `external` become `skip`; then the commenter must be an
/// OWNER or MEMBER.
pub fn tags_for(
    event: Event,
    payload: &PyValue,
    external: &[String],
) -> Result<Option<BTreeSet<String>>, DispatchError> {
    match event {
        Event::Push => Ok(Some(BTreeSet::from([PUSH_TAG.to_owned()]))),
        Event::IssueComment => {
            let action = string_at(payload, &["action"])?;
            if action != "created" {
                return Err(DispatchError::Action(action.to_owned()));
            }
            let Some(mut tags) = requested_tags(string_at(payload, &["comment", "body"])?) else {
                return Ok(None);
            };
            if tags.iter().all(|t| external.contains(t)) {
                tracing::info!(?tags, "every requested tag is external");
                tags = BTreeSet::from([SKIP_TAG.to_owned()]);
            }
            let association = string_at(payload, &["comment", "author_association"])?;
            if !ALLOWED_ASSOCIATIONS.contains(&association) {
                return Err(DispatchError::NotAllowed(association.to_owned()));
            }
            Ok(Some(tags))
        }
    }
}

fn string_at<'a>(payload: &'a PyValue, path: &[&str]) -> Result<&'a str, DispatchError> {
    let field = || path.join(".");
    match payload.at(path) {
        Some(PyValue::Str(s)) => Ok(s),
        Some(other) => Err(DispatchError::Field {
            field: field(),
            problem: format!("is {}, expected a string", other.kind()),
        }),
        None => Err(DispatchError::Field {
            field: field(),
            problem: "is missing".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(tags: &[&str]) -> Option<BTreeSet<String>> {
        Some(tags.iter().map(|t| (*t).to_owned()).collect())
    }

    /// Each body and the tags CuPy's `extract_requested_tags` returns for it
    /// (`python_reads_the_table_alike` asks CPython's `re` the same).
    fn target_cases() -> Vec<(&'static str, Option<BTreeSet<String>>)> {
        vec![
            ("/test mini,windows", set(&["mini", "windows"])),
            ("/test  mini , windows ", set(&["mini", "windows"])),
            ("/test mini,", set(&["mini", ""])),
            ("/test ,", set(&[""])),
            ("/test full", set(&["full"])),
            ("/test skip", set(&["skip"])),
            ("/test force-skip", set(&["force-skip"])),
            ("/test cuda_130", set(&["cuda_130"])),
            ("/test Ünïcödé,日本,²", set(&["Ünïcödé", "日本", "²"])),
            ("/testing", None),
            ("/testing mini", None),
            ("/test", None),
            ("/test ", None),
            ("/test\tmini", None),
            ("/Test mini", None),
            (" /test mini", None),
            ("/test mini!", None),
            ("/test mini.linux", None),
            // A combining mark is no \w in Python (regex's own \w would take it).
            ("/test e\u{301}", None),
            ("please\n/test mini", set(&["mini"])),
            ("/test mini\r\nthanks", set(&["mini"])),
            ("/test mini\rthanks", set(&["mini"])),
            ("x\u{2028}/test mini", set(&["mini"])),
            ("x\u{2029}/test mini", set(&["mini"])),
            ("x\u{85}/test mini", set(&["mini"])),
            ("x\u{b}/test mini\u{c}y", set(&["mini"])),
            ("x\u{1c}/test a\u{1d}/test b", set(&["a"])),
            ("x\u{1e}/test mini", set(&["mini"])),
            ("/test a\n/test b", set(&["a"])),
            ("/testing\n/test b", set(&["b"])),
            ("/test a!\n/test b", set(&["b"])),
            ("", None),
        ]
    }

    /// Issue 31: the commit a maintainer names (`@<sha>`, the last word) is no tag, and does
    /// not make the line something other than a request.
    #[test]
    fn a_named_commit_is_no_tag() {
        let cases = [
            ("/test mini,windows @1a2b3c4", set(&["mini", "windows"])),
            (
                "/test mini @0123456789abcdef0123456789abcdef01234567",
                set(&["mini"]),
            ),
            ("/test mini  @1a2b3c4", set(&["mini"])),
            ("/test @1a2b3c4", None),
            ("/test mini @1a2b3c", None),
            ("/test mini @1A2B3C4", None),
            ("/test mini @1a2b3c4 x", None),
            ("/test mini@1a2b3c4", None),
        ];
        for (body, want) in cases {
            assert_eq!(requested_tags(body), want, "{body:?}");
        }
    }

    #[test]
    fn targets_are_read_as_cupy_reads_them() {
        for (body, want) in target_cases() {
            assert_eq!(requested_tags(body), want, "{body:?}");
        }
    }

    /// The same table through CPython's `str.splitlines`, `re.fullmatch` and `str.strip`, the
    /// functions CuPy's dispatcher uses, where python3 exists.
    #[test]
    fn python_reads_the_table_alike() {
        let cases = target_cases();
        let bodies: Vec<&str> = cases.iter().map(|(b, _)| *b).collect();
        let script = r#"
import json, re, sys
out = []
for body in json.load(sys.stdin):
    tags = None
    for line in body.splitlines():
        m = re.fullmatch(r'/test ([\w,\- ]+)', line)
        if m is not None:
            tags = sorted({x.strip() for x in m.group(1).split(',')})
            break
    out.append(tags)
print(json.dumps(out))
"#;
        let Some(stdout) = crate::testutil::python(script, &serde_json::to_vec(&bodies).unwrap())
        else {
            return;
        };
        let python: Vec<Option<BTreeSet<String>>> = serde_json::from_str(&stdout).unwrap();
        for ((body, want), got) in cases.iter().zip(python) {
            assert_eq!(&got, want, "CPython disagrees on {body:?}");
        }
    }

    #[test]
    fn splitlines_is_pythons() {
        let cases: &[(&str, &[&str])] = &[
            ("", &[]),
            ("a", &["a"]),
            ("a\n", &["a"]),
            ("a\n\nb", &["a", "", "b"]),
            ("a\r\nb\rc\n", &["a", "b", "c"]),
            ("a\r\r\nb", &["a", "", "b"]),
            ("a\u{2028}b\u{85}c", &["a", "b", "c"]),
            ("\n", &[""]),
        ];
        for (input, want) in cases {
            assert_eq!(splitlines(input), *want, "{input:?}");
        }
    }

    fn comment(action: &str, body: &str, association: &str) -> PyValue {
        PyValue::Object(vec![
            ("action".into(), PyValue::Str(action.into())),
            (
                "comment".into(),
                PyValue::Object(vec![
                    ("body".into(), PyValue::Str(body.into())),
                    (
                        "author_association".into(),
                        PyValue::Str(association.into()),
                    ),
                ]),
            ),
        ])
    }

    #[test]
    fn event_rules_in_cupys_order() {
        let ext = vec!["jenkins".to_owned(), "rocm".to_owned()];
        type Want = Result<Option<BTreeSet<String>>, &'static str>;
        let cases: Vec<(Event, PyValue, Want)> = vec![
            (Event::Push, PyValue::Object(vec![]), Ok(set(&["@push"]))),
            (
                Event::IssueComment,
                comment("created", "/test mini", "MEMBER"),
                Ok(set(&["mini"])),
            ),
            (
                Event::IssueComment,
                comment("created", "/test mini", "OWNER"),
                Ok(set(&["mini"])),
            ),
            (
                Event::IssueComment,
                comment("created", "/test jenkins,rocm", "MEMBER"),
                Ok(set(&["skip"])),
            ),
            (
                Event::IssueComment,
                comment("created", "/test jenkins,mini", "MEMBER"),
                Ok(set(&["jenkins", "mini"])),
            ),
            // No request is checked before the commenter: nothing to refuse.
            (
                Event::IssueComment,
                comment("created", "LGTM", "CONTRIBUTOR"),
                Ok(None),
            ),
            (
                Event::IssueComment,
                comment("created", "/test mini", "CONTRIBUTOR"),
                Err("CONTRIBUTOR"),
            ),
            (
                Event::IssueComment,
                comment("edited", "/test mini", "MEMBER"),
                Err("edited"),
            ),
            (
                Event::IssueComment,
                PyValue::Object(vec![("action".into(), PyValue::Str("created".into()))]),
                Err("comment.body is missing"),
            ),
            (
                Event::IssueComment,
                PyValue::Object(vec![("action".into(), PyValue::Int(1))]),
                Err("action is an integer, expected a string"),
            ),
        ];
        for (event, payload, want) in cases {
            let got = tags_for(event, &payload, &ext).map_err(|e| e.to_string());
            match (&got, &want) {
                (Ok(g), Ok(w)) => assert_eq!(g, w, "{payload:?}"),
                (Err(g), Err(w)) => assert!(g.contains(w), "{g}"),
                _ => panic!("{payload:?}: got {got:?}, want {want:?}"),
            }
        }
    }
}
