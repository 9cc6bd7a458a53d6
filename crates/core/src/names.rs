//! Tool names (SPEC §2).
//!
//! Agents and LLM providers accept only short, plain names (`^[a-z0-9_-]{1,64}$`), while pages name
//! tools the way people do ("Get Cart", "Créer tâche!"). [`normalize`] maps one to the other, and
//! [`NameTable`] keeps the mapping unique: a *different* original name that normalizes to a taken
//! name gets the smallest free numeric suffix.

use std::collections::HashMap;

use crate::CoreError;

/// The longest normalized name, in characters (all ASCII, so also bytes).
pub const MAX_NAME_LEN: usize = 64;

/// Lowercase, replace every character outside `a-z0-9_-` by one `_`, cut to 64 characters.
pub fn normalize(original: &str) -> Result<String, CoreError> {
    if original.is_empty() {
        return Err(CoreError::EmptyName);
    }
    Ok(original
        .to_lowercase()
        .chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '_' | '-' => c,
            _ => '_',
        })
        .take(MAX_NAME_LEN)
        .collect())
}

/// Whether `name` is already in normalized form (what agents accept).
pub fn is_normalized(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .bytes()
            .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-'))
}

/// The unique normalized names in use, and which original name owns each.
#[derive(Debug, Default, Clone)]
pub struct NameTable {
    by_normalized: HashMap<String, String>,
    by_original: HashMap<String, String>,
}

impl NameTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// The normalized name for `original`: the one it already holds, or a newly reserved unique one.
    pub fn assign(&mut self, original: &str) -> Result<String, CoreError> {
        if let Some(existing) = self.by_original.get(original) {
            return Ok(existing.clone());
        }
        let base = normalize(original)?;
        let name = if self.by_normalized.contains_key(&base) {
            self.first_free_suffixed(&base)
        } else {
            base
        };
        self.by_normalized.insert(name.clone(), original.to_owned());
        self.by_original.insert(original.to_owned(), name.clone());
        Ok(name)
    }

    /// Frees the name held by `original`; returns it.
    pub fn release(&mut self, original: &str) -> Option<String> {
        let name = self.by_original.remove(original)?;
        self.by_normalized.remove(&name);
        Some(name)
    }

    pub fn normalized_of(&self, original: &str) -> Option<&str> {
        self.by_original.get(original).map(String::as_str)
    }

    pub fn original_of(&self, normalized: &str) -> Option<&str> {
        self.by_normalized.get(normalized).map(String::as_str)
    }

    fn first_free_suffixed(&self, base: &str) -> String {
        (2u64..)
            .map(|n| {
                let suffix = format!("_{n}");
                // `base` is ASCII after normalization, so byte slicing is character slicing.
                let keep = base.len().min(MAX_NAME_LEN - suffix.len());
                format!("{}{suffix}", &base[..keep])
            })
            .find(|candidate| !self.by_normalized.contains_key(candidate))
            .expect("some suffix is always free")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn spec_table() {
        assert_eq!(normalize("Get Cart").unwrap(), "get_cart");
        assert_eq!(normalize("read_board_tasks").unwrap(), "read_board_tasks");
        assert_eq!(normalize("search-cars").unwrap(), "search-cars");
        assert_eq!(normalize("Créer tâche!").unwrap(), "cr_er_t_che_");
        assert_eq!(normalize(&"a".repeat(70)).unwrap(), "a".repeat(64));

        let mut table = NameTable::new();
        assert_eq!(
            table.assign("read_board_tasks").unwrap(),
            "read_board_tasks"
        );
        assert_eq!(
            table.assign("Read_board_tasks").unwrap(),
            "read_board_tasks_2"
        );

        let mut table = NameTable::new();
        assert_eq!(table.assign(&"a".repeat(70)).unwrap(), "a".repeat(64));
        assert_eq!(
            table.assign(&"a".repeat(65)).unwrap(),
            format!("{}_2", "a".repeat(62))
        );
    }

    #[test]
    fn empty_name_is_an_error() {
        assert_eq!(normalize(""), Err(CoreError::EmptyName));
        assert_eq!(NameTable::new().assign(""), Err(CoreError::EmptyName));
    }

    #[test]
    fn one_underscore_per_scalar_value_no_collapsing() {
        assert_eq!(normalize("a  b").unwrap(), "a__b");
        assert_eq!(normalize("😀").unwrap(), "_");
        // 'İ' lowercases to two scalar values ('i' + combining dot): step 2 sees both.
        assert_eq!(normalize("İ").unwrap(), "i_");
    }

    #[test]
    fn same_original_keeps_its_name_and_release_frees_it() {
        let mut table = NameTable::new();
        assert_eq!(table.assign("Get Cart").unwrap(), "get_cart");
        assert_eq!(table.assign("Get Cart").unwrap(), "get_cart");
        assert_eq!(table.assign("get cart").unwrap(), "get_cart_2");
        assert_eq!(table.assign("GET CART").unwrap(), "get_cart_3");
        assert_eq!(table.release("get cart").as_deref(), Some("get_cart_2"));
        assert_eq!(table.assign("Get-Cart?").unwrap(), "get-cart_");
        assert_eq!(table.assign("get  cart").unwrap(), "get__cart");
        assert_eq!(table.assign("get_Cart").unwrap(), "get_cart_2");
        assert_eq!(table.original_of("get_cart_3"), Some("GET CART"));
    }

    #[test]
    fn a_suffix_never_takes_a_name_held_by_another_tool() {
        let mut table = NameTable::new();
        table.assign("x_2").unwrap();
        table.assign("x").unwrap();
        assert_eq!(table.assign("X").unwrap(), "x_3");
    }

    proptest! {
        #[test]
        fn output_is_always_agent_safe(original in "\\PC{1,100}") {
            let name = normalize(&original).unwrap();
            prop_assert!(is_normalized(&name), "{name:?}");
        }

        #[test]
        fn normal_names_are_fixed_points(name in "[a-z0-9_-]{1,64}") {
            prop_assert_eq!(normalize(&name).unwrap(), name);
        }

        #[test]
        fn assigned_names_never_collide_and_map_back(
            originals in proptest::collection::vec("[a-zA-Z _-]{1,70}", 1..40)
        ) {
            let mut table = NameTable::new();
            let mut seen = std::collections::HashMap::new();
            for original in &originals {
                let name = table.assign(original).unwrap();
                prop_assert!(is_normalized(&name), "{name:?}");
                if let Some(owner) = seen.insert(name.clone(), original.clone()) {
                    prop_assert_eq!(&owner, original, "two originals got {}", name);
                }
                // The allow-list matches original names: the mapping must lead back to them.
                prop_assert_eq!(table.original_of(&name), Some(original.as_str()));
                prop_assert_eq!(table.normalized_of(original), Some(name.as_str()));
            }
        }
    }
}
