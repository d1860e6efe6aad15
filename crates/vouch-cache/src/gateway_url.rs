//! The URL of a gateway, as `cache env`/`cache stats` take it and the compiler caches get it.
//! It ends up in shell code and `$GITHUB_ENV`, so only a plain loopback `http://` URL whose
//! every character is inert there is accepted.

use std::net::IpAddr;

#[derive(Debug, thiserror::Error)]
pub enum UrlError {
    #[error("gateway URL {url:?} does not parse; expected http://127.0.0.1:PORT[/PATH]")]
    Parse {
        url: String,
        #[source]
        source: url::ParseError,
    },
    #[error("gateway URL {url:?}: {problem}; expected http://127.0.0.1:PORT[/PATH]")]
    Invalid { url: String, problem: &'static str },
}

/// A validated gateway URL: `http://<loopback IP>[:port][/<path>]`, with no user, password,
/// query or fragment, and a path of `[A-Za-z0-9._-]` segments. Kept without a trailing slash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GatewayUrl(String);

fn path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "._-/".contains(c)
}

impl GatewayUrl {
    pub fn parse(raw: &str) -> Result<GatewayUrl, UrlError> {
        let invalid = |problem| UrlError::Invalid {
            url: raw.to_owned(),
            problem,
        };
        // The url crate silently drops tabs and newlines; look at the raw text first.
        if raw.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(invalid("it contains whitespace or a control character"));
        }
        let url = url::Url::parse(raw).map_err(|source| UrlError::Parse {
            url: raw.to_owned(),
            source,
        })?;
        if url.scheme() != "http" {
            return Err(invalid("the scheme is not http"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(invalid("it carries a user or password"));
        }
        // An IP literal, not a name: /etc/hosts or a resolver could send `localhost` elsewhere.
        let loopback = match url.host() {
            Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
            Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
            _ => false,
        };
        if !loopback {
            return Err(invalid(
                "the host is not a loopback IP address (127.0.0.0/8 or [::1])",
            ));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(invalid("it has a query or fragment"));
        }
        let path = url.path();
        if !path.chars().all(path_char) || path.split('/').any(|p| p == "." || p == "..") {
            return Err(invalid(
                "the path has characters other than letters, digits and `._-/`",
            ));
        }
        let text = url.as_str().trim_end_matches('/').to_owned();
        // Belt and braces: what comes out is only characters no shell or env file treats
        // specially, whatever the parser normalised.
        if !text.chars().all(|c| path_char(c) || ":[]".contains(c)) {
            return Err(invalid("it has characters outside `A-Za-z0-9._-/:[]`"));
        }
        Ok(GatewayUrl(text))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `<url>/<suffix>`.
    pub fn join(&self, suffix: &str) -> String {
        format!("{}/{}", self.0, suffix.trim_start_matches('/'))
    }

    /// Scheme, host and port only: safe for logs and error messages, since the path carries
    /// the gateway's secret.
    pub fn redacted(&self) -> String {
        match url::Url::parse(&self.0) {
            Ok(u) if u.path() != "/" => format!(
                "http://{}{}/…",
                u.host_str().unwrap_or_default(),
                u.port().map(|p| format!(":{p}")).unwrap_or_default()
            ),
            _ => self.0.clone(),
        }
    }
}

impl std::str::FromStr for GatewayUrl {
    type Err = UrlError;
    fn from_str(s: &str) -> Result<Self, UrlError> {
        GatewayUrl::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_loopback_http() {
        for (raw, want) in [
            ("http://127.0.0.1:4000", "http://127.0.0.1:4000"),
            ("http://127.0.0.1:4000/", "http://127.0.0.1:4000"),
            ("http://127.0.0.1:4000/ab12/", "http://127.0.0.1:4000/ab12"),
            ("http://[::1]:4000/x", "http://[::1]:4000/x"),
            ("http://127.1:4000", "http://127.0.0.1:4000"),
        ] {
            assert_eq!(GatewayUrl::parse(raw).unwrap().as_str(), want, "{raw}");
        }
    }

    #[test]
    fn issue12_refuses_hostile_or_remote_urls() {
        for raw in [
            "http://127.0.0.1:4000'; touch /tmp/pwned; '",
            "http://127.0.0.1:4000/$(touch /tmp/pwned)",
            "http://127.0.0.1:4000/`id`",
            "http://127.0.0.1:4000\nEVIL=1",
            "http://127.0.0.1:4000/a\tb",
            "http://127.0.0.1:4000/a b",
            "http://127.0.0.1:4000/%27",
            "http://127.0.0.1:4000/a?x=1",
            "http://127.0.0.1:4000/#x",
            "http://u:p@127.0.0.1:4000",
            "http://u@127.0.0.1:4000",
            "https://127.0.0.1:4000",
            "file:///etc/passwd",
            "http://localhost:4000",
            "http://10.0.0.1:4000",
            "http://0.0.0.0:4000",
            "http://[::]:4000",
            "http://example.com",
            "junk",
            "",
        ] {
            assert!(GatewayUrl::parse(raw).is_err(), "{raw:?} was accepted");
        }
    }

    #[test]
    fn redacts_the_path() {
        let u = GatewayUrl::parse("http://127.0.0.1:4000/0123abcd").unwrap();
        assert_eq!(u.redacted(), "http://127.0.0.1:4000/…");
        assert_eq!(u.join("ccache"), "http://127.0.0.1:4000/0123abcd/ccache");
    }
}
