//! `metadata.generateName`: a prefix and 5 characters, as kube-apiserver
//! makes names for objects created without one (EndpointSlices,
//! `kubectl create` with `generateName`), but from a counter instead of a
//! random generator, so the same inputs always give the same names.

/// The characters Kubernetes draws generated suffixes from (no vowels, no
/// look-alike digits).
const ALPHABET: &[u8; 27] = b"bcdfghjklmnpqrstvwxz2456789";

/// Length of a generated suffix.
const SUFFIX_LEN: usize = 5;

/// Number of distinct suffixes: 27^5.
const SUFFIXES: u64 = 14_348_907;

/// Multiplier spreading consecutive counters over the suffixes; coprime
/// with 27, so counters 0..27^5 map to distinct suffixes.
const STRIDE: u64 = 7_368_787;

/// Offset, so that counter 0 does not read `bbbbb`.
const OFFSET: u64 = 4_711_002;

/// Longest base kept before the suffix, so the name fits in 63 characters.
const MAX_BASE_LEN: usize = 63 - SUFFIX_LEN;

/// The `n`th generated name for `prefix` (a `generateName`, such as
/// `web-`): the prefix cut to 58 characters, then a 5-character suffix.
/// Counters below 27^5 give distinct suffixes.
pub fn generated_name(prefix: &str, n: u64) -> String {
    let prefix: String = prefix.chars().take(MAX_BASE_LEN).collect();
    let mut value = (n % SUFFIXES * STRIDE + OFFSET) % SUFFIXES;
    let mut suffix = [0u8; SUFFIX_LEN];
    for slot in suffix.iter_mut().rev() {
        // `value % 27` is below 27, a valid index into ALPHABET.
        *slot = ALPHABET[(value % 27) as usize];
        value /= 27;
    }
    // Every byte comes from the ASCII ALPHABET.
    let suffix: String = suffix.iter().map(|b| char::from(*b)).collect();
    format!("{prefix}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collections::SortedSet;

    #[test]
    fn names_look_like_kubernetes_and_do_not_repeat() {
        let names: SortedSet<String> = (0..5000).map(|n| generated_name("web-", n)).collect();
        assert_eq!(names.len(), 5000);
        for name in &names {
            let suffix = name.strip_prefix("web-").unwrap();
            assert_eq!(suffix.len(), 5);
            assert!(suffix.bytes().all(|b| ALPHABET.contains(&b)), "{name}");
        }
        assert_eq!(generated_name("web-", 7), generated_name("web-", 7));
    }

    #[test]
    fn long_service_names_are_cut_to_fit() {
        let long = "a".repeat(64);
        let name = generated_name(&long, 0);
        assert_eq!(name.len(), 63);
        assert!(name.starts_with(&"a".repeat(58)));
    }
}
