//! Reading a version a project's own checkout names (`cuda_follows`): a scalar at a dotted key
//! of a YAML file, such as CuPy's `ci/versions.yml#cuda.build.version`.

use yaml_rust2::{Yaml, YamlLoader};

/// The scalar at `key` (`a.b.c`) in the YAML `text`, as text (`13.3.1`; a number such as
/// `13.0` is given as written).
pub(crate) fn lookup(text: &str, key: &str) -> Result<String, String> {
    let docs = YamlLoader::load_from_str(text).map_err(|e| format!("not YAML: {e}"))?;
    let mut node = docs.first().ok_or("an empty YAML file")?;
    for part in key.split('.') {
        node = match node {
            Yaml::Hash(h) => h
                .get(&Yaml::String(part.to_owned()))
                .ok_or_else(|| format!("no `{part}` in `{key}`"))?,
            _ => return Err(format!("`{key}`: `{part}` is not inside a mapping")),
        };
    }
    match node {
        Yaml::String(s) | Yaml::Real(s) => Ok(s.clone()),
        Yaml::Integer(i) => Ok(i.to_string()),
        _ => Err(format!("`{key}` is not a version (a string or a number)")),
    }
}

#[cfg(test)]
mod tests {
    use super::lookup;

    const CUPY: &str =
        "cuda:\n  build:\n    version: \"13.3.1\"\n  prev_build:\n    version: \"12.9.2\"\n";

    #[test]
    fn reads_the_scalar_at_a_dotted_key() {
        assert_eq!(lookup(CUPY, "cuda.build.version").unwrap(), "13.3.1");
        assert_eq!(lookup(CUPY, "cuda.prev_build.version").unwrap(), "12.9.2");
        assert_eq!(lookup("cuda: 13.0\n", "cuda").unwrap(), "13.0");
    }

    #[test]
    fn says_which_part_of_the_key_is_missing() {
        assert_eq!(
            lookup(CUPY, "cuda.next.version").unwrap_err(),
            "no `next` in `cuda.next.version`"
        );
        assert_eq!(
            lookup(CUPY, "cuda.build").unwrap_err(),
            "`cuda.build` is not a version (a string or a number)"
        );
        assert!(lookup(": : :\n\t", "a").is_err());
    }
}
