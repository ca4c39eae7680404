//! `include`: the parts of a `/v1/prepare` answer a client asks for.
//!
//! `cut` (the cut point: `compactable`, the first kept entry, the split turn,
//! `tokensBefore`, `shouldCompact`, `previousSummary`, `settings`) is always there;
//! `messages` adds `summarizedEntryIds`, `messagesToSummarize` and `turnPrefixMessages`,
//! `conversation` the serialized text, `requests` the summarizer calls and `files`
//! `details` (the file lists). Without `include` every part is there, as before.
//!
//! Read from a query string as a comma-separated list (`include=cut,files`), from a JSON
//! body as an array of names (a comma-separated string is taken there too). An unknown
//! name is refused with serde's wording, so a JSON body's error points at the element
//! (`/include/1`). Parts left out are not computed at all: a cut-only answer serializes
//! no conversation and builds no message list.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};

/// A set of answer parts (`cut` is implied).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Include(u8);

/// A part of the `/v1/prepare` answer (`include`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, utoipa::ToSchema)]
#[schema(rename_all = "lowercase")]
pub enum IncludePart {
    Cut,
    Messages,
    Conversation,
    Requests,
    Files,
}

const NAMES: [(&str, IncludePart); 5] = [
    ("cut", IncludePart::Cut),
    ("messages", IncludePart::Messages),
    ("conversation", IncludePart::Conversation),
    ("requests", IncludePart::Requests),
    ("files", IncludePart::Files),
];

impl IncludePart {
    fn bit(self) -> u8 {
        1 << self as u8
    }

    fn from_name<E: de::Error>(name: &str) -> Result<IncludePart, E> {
        NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, p)| p)
            .ok_or_else(|| {
                E::unknown_variant(
                    name,
                    &["cut", "messages", "conversation", "requests", "files"],
                )
            })
    }
}

impl Include {
    /// Every part: the answer without `include`.
    pub const ALL: Include = Include(0b1_1111);
    /// Only the cut point.
    pub const CUT: Include = Include(1);

    pub fn has(self, part: IncludePart) -> bool {
        self.0 & part.bit() != 0
    }

    pub fn with(self, part: IncludePart) -> Include {
        Include(self.0 | part.bit())
    }

    pub fn without(self, part: IncludePart) -> Include {
        Include(self.0 & !part.bit() | IncludePart::Cut.bit())
    }

    /// The names, comma-separated (for logs and tests).
    pub fn names(self) -> String {
        NAMES
            .iter()
            .filter(|(_, p)| self.has(*p))
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(",")
    }

    fn from_list<E: de::Error>(list: &str) -> Result<Include, E> {
        let mut include = Include::CUT;
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            include = include.with(IncludePart::from_name(name)?);
        }
        Ok(include)
    }
}

impl<'de> Deserialize<'de> for IncludePart {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        IncludePart::from_name(&name)
    }
}

impl<'de> Deserialize<'de> for Include {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Include;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of answer parts (cut, messages, conversation, requests, files)")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Include, E> {
                Include::from_list(v)
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Include, A::Error> {
                let mut include = Include::CUT;
                while let Some(part) = seq.next_element::<IncludePart>()? {
                    include = include.with(part);
                }
                Ok(include)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_arrays_read_the_same_parts() {
        let a: Include = serde_json::from_str(r#""cut, files,conversation""#).unwrap();
        let b: Include = serde_json::from_str(r#"["files","conversation"]"#).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.names(), "cut,conversation,files");
        let none: Include = serde_json::from_str(r#""""#).unwrap();
        assert_eq!(none, Include::CUT);
        let all: Include =
            serde_json::from_str(r#"["cut","messages","conversation","requests","files"]"#)
                .unwrap();
        assert_eq!(all, Include::ALL);
    }

    #[test]
    fn unknown_parts_are_refused_by_name() {
        let e = serde_json::from_str::<Include>(r#"["cut","history"]"#).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("unknown variant `history`, expected one of `cut`"),
            "{e}"
        );
        assert!(serde_json::from_str::<Include>("5").is_err());
        assert!(serde_json::from_str::<Include>("[5]").is_err());
    }

    #[test]
    fn leaving_a_part_out_keeps_the_cut() {
        assert!(Include::CUT.without(IncludePart::Cut).has(IncludePart::Cut));
        assert!(!Include::ALL
            .without(IncludePart::Messages)
            .has(IncludePart::Messages));
    }
}
