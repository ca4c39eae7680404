//! Walks over the entry tree: the path from a leaf to the root.

use super::error::{InputError, Violation};
use super::{truncate_for_message, Session};

/// Where the walk starts.
#[derive(Debug, Clone, Copy)]
pub enum Leaf<'q> {
    /// The last entry of the input (pi's default).
    Last,
    Id(&'q str),
}

impl<'a> Session<'a> {
    /// Positions (into `entries`) of the entries from the root to the leaf.
    ///
    /// A `parentId` that names no entry ends the walk, as in pi. A cycle is an error.
    pub fn path(&self, leaf: Leaf<'_>, leaf_pointer: &str) -> Result<Vec<usize>, InputError> {
        let start = match leaf {
            Leaf::Last => match self.entries.len() {
                0 => return Ok(Vec::new()),
                n => n - 1,
            },
            Leaf::Id(id) => self.position(id).ok_or_else(|| {
                InputError::invalid(Violation {
                    pointer: leaf_pointer.to_string(),
                    message: format!("no entry has the id {:?}", truncate_for_message(id)),
                    line: None,
                })
            })?,
        };
        self.walk_to_root(start)
    }

    /// Positions from the root down to `start`.
    pub(crate) fn walk_to_root(&self, start: usize) -> Result<Vec<usize>, InputError> {
        let mut path = Vec::new();
        // A walk longer than the entry count has revisited an entry: a cycle.
        let mut current = Some(start);
        while let Some(i) = current {
            if path.len() >= self.entries.len() {
                return Err(self.cycle_error(i));
            }
            path.push(i);
            // An empty parentId is "no parent" to pi (it tests truthiness).
            current = self.entries[i]
                .parent_id
                .as_deref()
                .filter(|p| !p.is_empty())
                .and_then(|p| self.position(p));
        }
        path.reverse();
        Ok(path)
    }

    fn cycle_error(&self, at: usize) -> InputError {
        let e = &self.entries[at];
        InputError::invalid(e.origin.violation(
            "/parentId",
            format!(
                "parentId links form a cycle through entry {:?}",
                truncate_for_message(e.id().unwrap_or_default())
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_from_leaf_and_stops_at_unknown_parent() {
        let body = r#"{"type":"session","version":3,"id":"s"}
{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"x"}}
{"type":"message","id":"b","parentId":"a","message":{"role":"user","content":"y"}}
{"type":"message","id":"c","parentId":"a","message":{"role":"user","content":"z"}}
{"type":"label","id":"d","parentId":"zz"}"#;
        let s = Session::from_jsonl(body).unwrap();
        assert_eq!(s.path(Leaf::Id("b"), "/leafId").unwrap(), vec![0, 1]);
        assert_eq!(s.path(Leaf::Id("c"), "/leafId").unwrap(), vec![0, 2]);
        assert_eq!(s.path(Leaf::Last, "/leafId").unwrap(), vec![3]);
        assert!(s.path(Leaf::Id("nope"), "/leafId").is_err());
    }

    #[test]
    fn cycles_are_rejected() {
        let body = r#"{"type":"label","id":"a","parentId":"b"}
{"type":"label","id":"b","parentId":"a"}"#;
        let s = Session::from_jsonl(body).unwrap();
        let err = s.path(Leaf::Last, "/leafId").unwrap_err();
        assert!(err.to_string().contains("cycle"), "{err}");
    }
}
