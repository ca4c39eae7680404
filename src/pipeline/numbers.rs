//! Numbers as JavaScript would write them into JSON.

use serde::{Serialize, Serializer};

/// A JavaScript number: integral values serialize without a fraction (`48211`, not
/// `48211.0`), like `JSON.stringify`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JsNumber(pub f64);

impl Serialize for JsNumber {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        compactd_core::json::write::js_number(&self.0, s)
    }
}

impl utoipa::PartialSchema for JsNumber {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::Number)
            .into()
    }
}

impl utoipa::ToSchema for JsNumber {}
