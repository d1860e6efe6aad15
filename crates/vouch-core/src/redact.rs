//! What may be logged about a child process or a URL: never an environment, never the
//! userinfo of a URL (`https://user:token@host` is how pip and proxies carry credentials).

use std::process::Command;

/// `text` with the userinfo of every `scheme://userinfo@host` in it replaced by `***`.
pub fn redact_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        // The authority ends at the first '/', '?', '#' or whitespace; userinfo is what comes
        // before its last '@'.
        let end = tail
            .find(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace())
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) => {
                out.push_str("***");
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// The program and its arguments, userinfo redacted: what a log line may say about a child.
/// The environment is deliberately left out: it carries index URLs, proxies and tokens.
pub fn command_line(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| redact_userinfo(&a.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_never_survives() {
        assert_eq!(
            redact_userinfo("--index-url=https://user:s3cret@pypi.example/simple x"),
            "--index-url=https://***@pypi.example/simple x"
        );
        assert_eq!(
            redact_userinfo("http://proxy:8080 and redis://:pw@h:6379/0"),
            "http://proxy:8080 and redis://***@h:6379/0"
        );
        assert_eq!(redact_userinfo("no url here"), "no url here");
        let mut c = Command::new("pip");
        c.args(["install", "--index-url", "https://u:tok@x/simple"])
            .env("PIP_INDEX_URL", "https://u:tok@x/simple");
        let line = command_line(&c);
        assert_eq!(line, "pip install --index-url https://***@x/simple");
    }
}
