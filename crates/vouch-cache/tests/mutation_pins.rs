//! Issue 31's mutation pass: refusals the crate's own tests reached only through a later,
//! broader rule. Each case names the reason it must be refused for, so switching the rule off
//! (and leaving the refusal to the catch-all character check) fails here.

use vouch_cache::{GatewayUrl, UrlError};

#[test]
fn issue31_gateway_url_refusals_name_their_rule() {
    for (raw, rule) in [
        ("http://u:p@127.0.0.1:4000", "it carries a user or password"),
        ("http://u@127.0.0.1:4000/x", "it carries a user or password"),
        ("http://127.0.0.1:4000/a?x=1", "it has a query or fragment"),
        ("http://127.0.0.1:4000/#x", "it has a query or fragment"),
        ("https://127.0.0.1:4000", "the scheme is not http"),
    ] {
        match GatewayUrl::parse(raw) {
            Err(UrlError::Invalid { problem, .. }) => assert_eq!(problem, rule, "{raw}"),
            other => panic!("{raw}: {other:?}"),
        }
    }
}
