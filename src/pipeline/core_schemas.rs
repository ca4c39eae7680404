//! The documented shapes of the core's answers that the pipelines return whole: the core
//! crate knows no documentation types (no utoipa), so each gets a stand-in here, named as
//! the type it documents, and the fields that hold it say `value_type = …Schema`.

use std::borrow::Cow;

use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Schema, Type};
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

/// [`compactd_core::compaction::FileLists`], as the API documents it.
pub struct FileListsSchema;

/// [`compactd_core::compaction::ledger::Retention`], as the API documents it.
pub struct RetentionSchema;

impl PartialSchema for FileListsSchema {
    fn schema() -> RefOr<Schema> {
        let list = || ArrayBuilder::new().items(ObjectBuilder::new().schema_type(Type::String));
        ObjectBuilder::new()
            .description(Some(
                "`details` of a compaction or branch summary: the cumulative file lists.",
            ))
            .property("readFiles", list())
            .required("readFiles")
            .property("modifiedFiles", list())
            .required("modifiedFiles")
            .into()
    }
}
impl ToSchema for FileListsSchema {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("FileLists")
    }
}

impl PartialSchema for RetentionSchema {
    fn schema() -> RefOr<Schema> {
        let count = |d: &str| {
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(0))
                .description(Some(d.to_string()))
        };
        ObjectBuilder::new()
            .description(Some(
                "What the summary kept of the pinned ledger (checked compaction): the summary \
                 was verified against every active pinned item and the missing ones were \
                 re-inserted verbatim in a closing section headed `## Pinned (restored \
                 verbatim)`, within COMPACTD_PIN_BUDGET_SHARE of the summary's output budget.",
            ))
            .property("pinned", count("Active items in the ledger."))
            .required("pinned")
            .property("present", count("Items the summary carried by itself."))
            .required("present")
            .property(
                "reinserted",
                count("Items restored in the closing section."),
            )
            .required("reinserted")
            .property(
                "reinsertedIds",
                ArrayBuilder::new()
                    .items(ObjectBuilder::new().schema_type(Type::String))
                    .description(Some(
                        "Ids of the restored items, in the order the closing section lists them.",
                    )),
            )
            .required("reinsertedIds")
            .property(
                "leftOut",
                ArrayBuilder::new()
                    .items(ObjectBuilder::new().schema_type(Type::String))
                    .description(Some(
                        "Ids of the missing items the budget left out (rules and constraints \
                         go first, newest first).",
                    )),
            )
            .required("leftOut")
            .into()
    }
}
impl ToSchema for RetentionSchema {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Retention")
    }
}
