//! Issue 31's mutation pass: the `/test` commenter rule where the profile names none. The
//! CuPy profile spells its `trigger_associations` out, so its snapshots never see the default.

use std::path::Path;

use vouch_profile::Profile;
use vouch_workflows::{Options, generate};

/// The CuPy template without its `trigger_associations` line (and with a cache public key where
/// the template leaves one to the repository).
fn profile_without_associations() -> Profile {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../pyproject-templates/cupy/vouch.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let line = "trigger_associations = [\"OWNER\", \"MEMBER\"]\n";
    assert!(text.contains(line), "the template names its associations");
    let text = text.replace(line, "").replace(
        "# public_key = \"ed25519:<base64>\"",
        "public_key = \"ed25519:0RkOBSBE1Zm8j1K/foEzQao6LsBDpz3bnkfmllfrGno=\"",
    );
    Profile::parse(&text, "vouch.toml").expect("the CuPy profile loads")
}

#[test]
fn issue31_the_default_trigger_associations_are_owner_and_member() {
    let profile = profile_without_associations();
    let opts = Options::from_profile(&profile, "vouch.toml").unwrap();
    assert_eq!(opts.trigger_associations, ["OWNER", "MEMBER"]);
    let files = generate(&profile, &opts).unwrap();
    let trigger = files
        .iter()
        .find(|f| f.name == vouch_workflows::TRIGGER_FILE)
        .expect("the trigger workflow");
    assert!(
        trigger.contents.contains(
            "contains(fromJSON('[\"OWNER\", \"MEMBER\"]'), github.event.comment.author_association)"
        ),
        "{}",
        trigger.contents
    );
}

#[test]
fn issue31_an_empty_association_list_is_refused() {
    let profile = profile_without_associations();
    let mut opts = Options::from_profile(&profile, "vouch.toml").unwrap();
    opts.trigger_associations.clear();
    let err = generate(&profile, &opts).unwrap_err().to_string();
    assert!(err.contains("workflows.trigger_associations"), "{err}");
    assert!(
        err.contains("name at least one author association"),
        "{err}"
    );
}
