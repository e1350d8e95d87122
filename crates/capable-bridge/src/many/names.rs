//! Names every host accepts. A merged tool or prompt is named `SERVER__NAME` (the
//! separator is the bridge's, `__` by default), held to the function-name rule the
//! model providers apply, `^[a-zA-Z0-9_-]{1,64}$`:
//!
//! - a character outside the rule (`.`, `/`, a space, any non-ASCII) becomes `_`;
//! - a name past 64 characters is cut to 55 and ends in `_` and 8 hex digits of the
//!   SHA-256 of the whole original (`server`, a `/`, the name): the same every time;
//! - two entries whose names come out the same (`a.b` and `a_b`) are both named the
//!   second way, each after its own original, and the bridge says so once.
//!
//! So a name depends only on its server's name, its own, and the names it collides
//! with: the same across restarts. The original is kept in the entry's `_meta`
//! (`capable/origin`: `{"server", "name"}`) and is what the server is called with.

use std::collections::{BTreeMap, HashMap};

use sha2::{Digest, Sha256};

/// The longest name the rule allows.
pub const MAX: usize = 64;

/// The `_meta` key of an entry's original server and name.
pub const ORIGIN: &str = "capable/origin";

/// `text` with every character outside `[a-zA-Z0-9_-]` made `_`.
fn held_to_rule(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' => c,
            _ => '_',
        })
        .collect()
}

/// The name of `(server, name)` cut to leave room for a hash of the whole, and that
/// hash: always within the rule.
fn hashed(plain: &str, server: &str, name: &str) -> String {
    let digest = Sha256::new()
        .chain_update(server.as_bytes())
        .chain_update(b"/")
        .chain_update(name.as_bytes())
        .finalize();
    let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    // `plain` is ASCII: cut at any byte.
    let keep = plain.len().min(MAX - 1 - hex.len());
    format!("{}_{hex}", &plain[..keep])
}

/// The names of one list's entries, and the collisions they resolved.
#[derive(Debug, Default)]
pub struct Named {
    /// For each entry, in the order given: its name, or `None` when even its hash
    /// collided (left out, and said).
    pub names: Vec<Option<String>>,
    /// What to say: each collision, once per list.
    pub said: Vec<String>,
}

/// The names of `entries` (server, name), joined by `separator` (see the module
/// documentation).
pub fn assign(entries: &[(&str, &str)], separator: &str) -> Named {
    let plain: Vec<String> = entries
        .iter()
        .map(|(server, name)| {
            let plain = format!("{}{separator}{}", held_to_rule(server), held_to_rule(name));
            match plain.len() > MAX {
                true => hashed(&plain, server, name),
                false => plain,
            }
        })
        .collect();
    let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, name) in plain.iter().enumerate() {
        groups.entry(name).or_default().push(i);
    }
    let mut named = Named::default();
    let mut names: Vec<String> = plain.clone();
    for (name, members) in &groups {
        if members.len() < 2 {
            continue;
        }
        let originals: Vec<String> = members
            .iter()
            .map(|&i| format!("{}/{}", entries[i].0, entries[i].1))
            .collect();
        named.said.push(format!(
            "{} would all be named {name:?}: each is named with a hash of its whole name instead",
            originals.join(", ")
        ));
        for &i in members {
            let (server, original) = entries[i];
            names[i] = hashed(&plain[i], server, original);
        }
    }
    // A hash that still meets another name (one in four billion) leaves the later out.
    let mut taken: HashMap<&str, usize> = HashMap::new();
    for (i, name) in names.iter().enumerate() {
        match taken.get(name.as_str()) {
            Some(_) => {
                let (server, original) = entries[i];
                named.said.push(format!(
                    "{server}/{original} is left out: its name {name:?} is another's"
                ));
                named.names.push(None);
            }
            None => {
                taken.insert(name, i);
                named.names.push(Some(name.clone()));
            }
        }
    }
    named
}

/// Whether `separator` keeps names within the rule: 1 to 8 characters of it.
pub fn valid_separator(separator: &str) -> bool {
    (1..=8).contains(&separator.len()) && held_to_rule(separator) == separator
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(name: &str) -> bool {
        (1..=MAX).contains(&name.len()) && held_to_rule(name) == name
    }

    #[test]
    fn names_keep_to_the_rule_and_stay_as_they_were_when_they_can() {
        let long = "t".repeat(80);
        let entries = [
            ("docs", "search"),
            ("git", "log/oneline"),
            ("x", long.as_str()),
        ];
        let named = assign(&entries, "__");
        let names: Vec<&str> = named.names.iter().map(|n| n.as_deref().unwrap()).collect();
        assert_eq!(names[0], "docs__search");
        assert_eq!(names[1], "git__log_oneline");
        assert_eq!(names[2].len(), MAX);
        assert!(names[2].starts_with("x__ttt"));
        assert!(names.iter().all(|n| rule(n)), "{names:?}");
        assert!(named.said.is_empty());
        // The same every time.
        assert_eq!(assign(&entries, "__").names, named.names);
    }

    #[test]
    fn a_collision_is_resolved_by_each_ones_hash_in_any_order_and_said() {
        let one = assign(&[("a", "x.y"), ("a", "x_y"), ("b", "z")], "__");
        let other = assign(&[("b", "z"), ("a", "x_y"), ("a", "x.y")], "__");
        let (xy, x_y) = (one.names[0].clone().unwrap(), one.names[1].clone().unwrap());
        assert_ne!(xy, x_y);
        assert!(xy.starts_with("a__x_y_") && rule(&xy), "{xy}");
        assert_eq!(other.names[2].as_deref(), Some(xy.as_str()));
        assert_eq!(other.names[1].as_deref(), Some(x_y.as_str()));
        assert_eq!(one.names[2].as_deref(), Some("b__z"));
        assert_eq!(one.said.len(), 1);
        assert!(one.said[0].contains("a/x.y, a/x_y"), "{:?}", one.said);
    }

    #[test]
    fn a_separator_must_keep_to_the_rule() {
        assert!(valid_separator("__") && valid_separator("-") && valid_separator("_x_"));
        assert!(!valid_separator("/") && !valid_separator("") && !valid_separator("a.b"));
    }
}
