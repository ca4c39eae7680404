//! `#[serde(default, deserialize_with = "object_only")]` for an optional struct field that
//! must be a JSON object.
//!
//! serde's derived `Deserialize` also builds a struct from an array of its fields in order
//! (`"settings": [20000, 16384]`), which no schema allows and no client means. This takes
//! `null` or an object only, and hands the object's entries to the struct through the same
//! deserializer, so error paths (`/settings/keepRecentTokens`) stay as they were.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{value::MapAccessDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

pub fn object_only<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    d.deserialize_option(ObjectOnly(PhantomData))
}

/// [`object_only`] as a type, for reading a value with `MapAccess::next_value`.
pub struct Object<T>(pub Option<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        object_only(d).map(Object)
    }
}

struct ObjectOnly<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectOnly<T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Pair {
        a: Option<u64>,
        b: Option<u64>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Outer {
        #[serde(default, deserialize_with = "object_only")]
        pair: Option<Pair>,
    }

    #[test]
    fn objects_and_null_only() {
        let parse = |s: &str| serde_json::from_str::<Outer>(s);
        assert_eq!(parse("{}").unwrap().pair, None);
        assert_eq!(parse(r#"{"pair":null}"#).unwrap().pair, None);
        assert_eq!(
            parse(r#"{"pair":{"a":1}}"#).unwrap().pair,
            Some(Pair {
                a: Some(1),
                b: None
            })
        );
        let err = parse(r#"{"pair":[1,2]}"#).unwrap_err().to_string();
        assert!(err.contains("expected an object"), "{err}");
        // Without the attribute serde would have taken the array.
        assert!(serde_json::from_str::<Pair>("[1,2]").is_ok());
        let mut de = serde_json::Deserializer::from_str(r#"{"pair":{"a":-1}}"#);
        let err = serde_path_to_error::deserialize::<_, Outer>(&mut de).unwrap_err();
        assert_eq!(err.path().to_string(), "pair.a");
    }
}
