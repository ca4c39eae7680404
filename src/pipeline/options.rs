//! The options of each session endpoint, one type per endpoint, written once.
//!
//! Each type is read from a JSON body (beside `entries` and `settings`) and from the query
//! string of a JSONL body, and documents both: its fields' doc comments are the OpenAPI
//! descriptions of the JSON properties (`ToSchema`) and of the query parameters
//! (`IntoParams`). The [`options!`] macro writes, from one field list, the struct and the
//! [`Options::read`] that takes a field by its key, so a field's name, type and doc live
//! in one place.
//!
//! Design: serde's derived `Deserialize` cannot serve here. `#[serde(flatten)]` (compact's
//! options contain prepare's) buffers values, which loses the JSON pointer of a type error
//! and the number parsing of query strings; and the two formats differ in a few places:
//! * `protectedTools` is comma-separated in the query string, an array in JSON;
//! * `includeMessages` is also `messages` in the query string (which wins over it);
//! * `additionalContext` and `preserveData` are JSON only;
//! * JSON bodies also take `keepRecentTokens` / `reserveTokens` inside `settings`, which
//!   win over the flat ones;
//! * unknown query parameters are refused (400), unknown JSON properties ignored.
//!
//! [`Options::read`] reads a value straight from the deserializer's map, so errors keep
//! their pointer (`/keepRecentTokens`) and query values parse as before.

use serde::de::{Error, MapAccess};
use serde::Deserialize;

/// Options of one endpoint, read key by key (see the module docs).
pub trait Options: Default {
    /// Reads the value of `key` into its field. `Ok(false)`: not one of these options
    /// (the value is left unread). `query`: the key comes from a query string.
    fn read<'de, A: MapAccess<'de>>(
        &mut self,
        key: &str,
        map: &mut A,
        query: bool,
    ) -> Result<bool, A::Error>;

    /// The query-string names, for the error naming an unknown one.
    fn query_names(names: &mut Vec<&'static str>);

    /// The JSON property names.
    fn json_names(names: &mut Vec<&'static str>);

    /// Takes what applies of a JSON body's `settings` (which wins over the flat fields).
    fn apply_settings(&mut self, settings: &SettingsRequest);

    /// Fills the options a JSON body left unset from the query string's (the body wins
    /// where both say something), naming each one taken in `taken`.
    fn fill_from(&mut self, query: Self, taken: &mut Vec<&'static str>);
}

/// `settings` of a JSON body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SettingsRequest {
    /// Tokens of recent messages kept verbatim [20000].
    pub keep_recent_tokens: Option<u64>,
    /// Tokens reserved for the summary output [16384].
    pub reserve_tokens: Option<u64>,
    /// `/v1/compact`: the context budget after compaction (summary plus kept messages,
    /// counted as `tokensAfter`); compactd then picks the kept tail and the summary budget
    /// itself, and `keepRecentTokens` / `reserveTokens` are not used.
    pub target_tokens: Option<u64>,
    /// `/v1/compact`: ids of entries whose text (user or assistant) every later summary
    /// carries verbatim.
    pub pin_entries: Option<Vec<String>>,
}

impl SettingsRequest {
    fn get(&self, key: &str) -> Option<u64> {
        match key {
            "keepRecentTokens" => self.keep_recent_tokens,
            "reserveTokens" => self.reserve_tokens,
            "targetTokens" => self.target_tokens,
            _ => None,
        }
    }

    fn list(&self, key: &str) -> Option<&Vec<String>> {
        match key {
            "pinEntries" => self.pin_entries.as_ref(),
            _ => None,
        }
    }
}

/// Tool names of a query string: comma-separated, blanks dropped (empty: none).
pub fn comma_list(names: &str) -> Vec<String> {
    names
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(String::from)
        .collect()
}

/// The options of a query string (JSONL bodies): `Deserialize` for `O`, refusing unknown
/// parameters.
#[derive(Debug, Default)]
pub struct QueryOptions<O>(pub O);

impl<'de, O: Options> Deserialize<'de> for QueryOptions<O> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Query<O>(std::marker::PhantomData<O>);
        impl<'de, O: Options> serde::de::Visitor<'de> for Query<O> {
            type Value = QueryOptions<O>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("query parameters")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                read_query(map).map(QueryOptions)
            }
        }
        d.deserialize_map(Query(std::marker::PhantomData))
    }
}

/// Reads a query string into `O`, refusing unknown and repeated keys as serde's derive
/// would.
fn read_query<'de, O: Options, A: MapAccess<'de>>(mut map: A) -> Result<O, A::Error> {
    let mut options = O::default();
    let mut seen = Vec::new();
    while let Some(key) = map.next_key::<String>()? {
        if !read_key(&mut options, &key, &mut map, true, &mut seen)? {
            return Err(unknown::<O, A::Error>(&key));
        }
    }
    Ok(options)
}

/// Reads one key into `options`; `Ok(false)` when it is not one of them (its value is
/// then left unread).
pub(crate) fn read_key<'de, O: Options, A: MapAccess<'de>>(
    options: &mut O,
    key: &str,
    map: &mut A,
    query: bool,
    seen: &mut Vec<String>,
) -> Result<bool, A::Error> {
    if seen.iter().any(|k| k == key) {
        return Err(A::Error::custom(format_args!("duplicate field `{key}`")));
    }
    let known = options.read(key, map, query)?;
    if known {
        seen.push(key.to_string());
    }
    Ok(known)
}

/// serde's wording for an unknown field.
fn unknown<O: Options, E: Error>(key: &str) -> E {
    let mut names = Vec::new();
    O::query_names(&mut names);
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.as_slice() {
        [] => E::custom(format_args!("unknown field `{key}`, there are no fields")),
        [one] => E::custom(format_args!("unknown field `{key}`, expected {one}")),
        [a, b] => E::custom(format_args!("unknown field `{key}`, expected {a} or {b}")),
        _ => E::custom(format_args!(
            "unknown field `{key}`, expected one of {}",
            quoted.join(", ")
        )),
    }
}

/// Writes an options struct and its [`Options`] impl from one field list.
///
/// ```text
/// options! {
///     /// doc
///     pub struct Name {
///         flatten pub inner: InnerOptions;            // optional, first
///         /// doc (the OpenAPI description)
///         pub field: Option<T> = "jsonKey",            // both formats
///         pub field: Option<T> = "jsonKey" | "alias",  // + a query-only alias that wins
///         pub field: Option<T> = "jsonKey", settings;  // + inside a JSON `settings`
///         pub field: T = "jsonKey", json_only;         // refused in a query string
///         pub field: Option<Vec<String>> = "jsonKey", comma_list; // a,b in a query
///         pub field: Option<Vec<String>> = "jsonKey", settings_list; // both of the above
///     }
/// }
/// ```
macro_rules! options {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(flatten pub $inner:ident: $inner_ty:ty;)?
            $(
                $(#[$fmeta:meta])*
                pub $field:ident: $ty:ty = $key:literal $(| $alias:literal)? $(, $kind:ident)?;
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq, utoipa::ToSchema, utoipa::IntoParams)]
        #[schema(rename_all = "camelCase")]
        #[into_params(rename_all = "camelCase", parameter_in = Query)]
        pub struct $name {
            $(
                #[schema(ignore)]
                #[param(ignore)]
                pub $inner: $inner_ty,
            )?
            $(
                $(#[$fmeta])*
                pub $field: $ty,
            )*
        }

        impl $crate::pipeline::options::Options for $name {
            fn read<'de, A: serde::de::MapAccess<'de>>(
                &mut self,
                key: &str,
                map: &mut A,
                query: bool,
            ) -> Result<bool, A::Error> {
                match key {
                    $(
                        $key if !(query && option_kind!(json_only? $($kind)?)) => {
                            let value = option_kind!(read map, query, $($kind)?);
                            // A query-string alias read before wins.
                            $( let _ = $alias; if query && self.$field.is_some() {} else )? {
                                self.$field = value;
                            }
                            return Ok(true);
                        }
                    )*
                    $($(
                        $alias if query => {
                            self.$field = map.next_value()?;
                            return Ok(true);
                        }
                    )?)*
                    _ => {}
                }
                $( if self.$inner.read(key, map, query)? { return Ok(true); } )?
                Ok(false)
            }

            fn query_names(names: &mut Vec<&'static str>) {
                $( <$inner_ty as $crate::pipeline::options::Options>::query_names(names); )?
                $(
                    if !option_kind!(json_only? $($kind)?) {
                        names.push($key);
                    }
                    $( names.push($alias); )?
                )*
            }

            fn json_names(names: &mut Vec<&'static str>) {
                $( <$inner_ty as $crate::pipeline::options::Options>::json_names(names); )?
                $( names.push($key); )*
            }

            fn apply_settings(&mut self, settings: &$crate::pipeline::options::SettingsRequest) {
                let _ = settings; // unused by options without `settings` fields
                $( self.$inner.apply_settings(settings); )?
                $( option_kind!(settings self.$field, settings, $key, $($kind)?); )*
            }

            fn fill_from(&mut self, query: Self, taken: &mut Vec<&'static str>) {
                $( self.$inner.fill_from(query.$inner, taken); )?
                $( option_kind!(fill self.$field, query.$field, $key, taken, $($kind)?); )*
            }
        }
    };
}

/// What a field's kind (`json_only`, `comma_list`, `settings`) changes; see [`options!`].
macro_rules! option_kind {
    (json_only? json_only) => {
        true
    };
    (json_only? $($kind:ident)?) => {
        false
    };
    (read $map:ident, $query:ident, settings_list) => {
        option_kind!(read $map, $query, comma_list)
    };
    (read $map:ident, $query:ident, comma_list) => {
        if $query {
            $map.next_value::<Option<String>>()?
                .map(|names| $crate::pipeline::options::comma_list(&names))
        } else {
            $map.next_value()?
        }
    };
    (read $map:ident, $query:ident, $($kind:ident)?) => {
        $map.next_value()?
    };
    (settings $target:expr, $settings:ident, $key:literal, settings) => {
        if let Some(v) = $settings.get($key) {
            $target = Some(v);
        }
    };
    (settings $target:expr, $settings:ident, $key:literal, settings_list) => {
        if let Some(v) = $settings.list($key) {
            $target = Some(v.clone());
        }
    };
    (settings $target:expr, $settings:ident, $key:literal, $($kind:ident)?) => {};
    // A query string cannot hold a JSON-only option.
    (fill $target:expr, $query:expr, $key:literal, $taken:ident, json_only) => {};
    (fill $target:expr, $query:expr, $key:literal, $taken:ident, $($kind:ident)?) => {
        if $target.is_none() {
            if let Some(v) = $query {
                $target = Some(v);
                $taken.push($key);
            }
        }
    };
}

options! {
    /// Options of `POST /v1/prepare` (and of `/v1/compact`, which answers like it with
    /// `dryRun`).
    pub struct PrepareOptions {
        /// Entry to work up to (default: the last entry).
        pub leaf_id: Option<String> = "leafId";
        /// Tokens of recent messages kept verbatim [20000].
        pub keep_recent_tokens: Option<u64> = "keepRecentTokens", settings;
        /// Tokens reserved for the summary output [16384].
        pub reserve_tokens: Option<u64> = "reserveTokens", settings;
        /// Context window of the agent's model; adds `shouldCompact`.
        pub context_window: Option<u64> = "contextWindow";
        /// `false` leaves the message arrays out of a prepare answer (query: `messages`).
        #[param(rename = "messages")]
        pub include_messages: Option<bool> = "includeMessages" | "messages";
        /// Parts of the answer: `cut` (always), `messages`, `conversation`, `requests`,
        /// `files` [all]. Comma-separated in a query string. `/v1/compact`: with `dryRun`.
        #[param(value_type = Option<String>, example = "cut,files,conversation")]
        #[schema(value_type = Option<Vec<crate::pipeline::include::IncludePart>>, example = json!(["cut", "files", "conversation"]))]
        pub include: Option<crate::pipeline::include::Include> = "include";
        /// Appended to the summary instructions as "Additional focus".
        pub custom_instructions: Option<String> = "customInstructions";
        /// Replaces the base instruction template of the history summary.
        pub prompt_override: Option<String> = "promptOverride";
        /// Rendered as an `<additional-context>` list in the summary prompt (JSON only).
        #[param(ignore)]
        #[schema(required = false)]
        pub additional_context: Vec<String> = "additionalContext", json_only;
    }
}

options! {
    /// Options of `POST /v1/compact`: prepare's and the compaction's own.
    pub struct CompactOptions {
        flatten pub prepare: PrepareOptions;
        /// The context budget after compaction, in tokens: the summary plus the kept
        /// messages, counted as `tokensAfter` is. compactd picks the kept tail and the
        /// summary budget itself (pinned items first, then as many recent messages
        /// verbatim as fit); `keepRecentTokens` and `reserveTokens` are then not used.
        pub target_tokens: Option<u64> = "targetTokens", settings;
        /// Also write a one-paragraph summary for a UI.
        pub short_summary: Option<bool> = "shortSummary";
        /// Any JSON, echoed into the answer and the compaction entry (JSON only).
        #[param(ignore)]
        #[schema(value_type = Option<serde_json::Value>)]
        pub preserve_data: Option<serde_json::Value> = "preserveData", json_only;
        /// A configured model name.
        pub model: Option<String> = "model";
        /// Why the client compacts (logs and metrics only).
        pub reason: Option<CompactReason> = "reason";
        /// Answer like `/v1/prepare`; call no model.
        pub dry_run: Option<bool> = "dryRun";
        /// `false`: no pinned ledger, no verification of the summary, no `retention`
        /// [COMPACTD_PIN, true].
        pub pin: Option<bool> = "pin";
        /// `single` (one model) or `moa` (Mixture-of-Agents: the `[moa]` proposers
        /// draft, the aggregator merges) [the `[moa]` default, else `single`].
        pub strategy: Option<crate::config::Strategy> = "strategy";
        /// Ids of entries on the path whose text (user or assistant, not tool results)
        /// this and every later summary carries verbatim, restored if a model drops it;
        /// comma-separated in a query string, also `settings.pinEntries` in JSON.
        #[param(value_type = Option<String>)]
        pub pin_entries: Option<Vec<String>> = "pinEntries", settings_list;
    }
}

options! {
    /// Options of `POST /v1/branch-summary`.
    pub struct BranchSummaryOptions {
        /// The leaf being left (required).
        pub old_leaf_id: Option<String> = "oldLeafId";
        /// Where the session goes back to (required).
        pub target_id: Option<String> = "targetId";
        /// Extra focus for the summary (the whole instructions with `replaceInstructions`).
        pub custom_instructions: Option<String> = "customInstructions";
        /// `customInstructions` replace the template instead of adding focus.
        pub replace_instructions: Option<bool> = "replaceInstructions";
        /// The summarizer's context window [the model's, else COMPACTD_CONTEXT_WINDOW].
        pub context_window: Option<u64> = "contextWindow";
        /// Tokens reserved for the answer [16384].
        pub reserve_tokens: Option<u64> = "reserveTokens", settings;
        /// What would be summarized; call no model.
        pub dry_run: Option<bool> = "dryRun";
        /// A configured model name.
        pub model: Option<String> = "model";
        /// `false`: no pinned ledger, no verification of the summary, no `retention`
        /// [COMPACTD_PIN, true].
        pub pin: Option<bool> = "pin";
        /// `single` (one model) or `moa` (Mixture-of-Agents) [the `[moa]` default, else
        /// `single`].
        pub strategy: Option<crate::config::Strategy> = "strategy";
    }
}

options! {
    /// Options of `POST /v1/prune`.
    pub struct PruneOptions {
        /// Entry whose path is pruned (default: the last entry).
        pub leaf_id: Option<String> = "leafId";
        /// The newest tool-output tokens that are never pruned [40000].
        pub protect_tokens: Option<u64> = "protectTokens";
        /// Prune only when the candidates save at least this many tokens [20000].
        pub minimum_savings: Option<u64> = "minimumSavings";
        /// Tools (a toolResult's `toolName`) whose results are never pruned
        /// [`["skill", "read"]`]; comma-separated in a query string, empty for none.
        #[param(value_type = Option<String>)]
        pub protected_tools: Option<Vec<String>> = "protectedTools", comma_list;
    }
}

/// Why a client compacts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CompactReason {
    Manual,
    Threshold,
    Overflow,
}

impl PrepareOptions {
    /// The cut settings: the request's, else `defaults`.
    pub fn settings(
        &self,
        defaults: compactd_core::compaction::Settings,
    ) -> compactd_core::compaction::Settings {
        compactd_core::compaction::Settings {
            keep_recent_tokens: self
                .keep_recent_tokens
                .unwrap_or(defaults.keep_recent_tokens),
            reserve_tokens: self.reserve_tokens.unwrap_or(defaults.reserve_tokens),
        }
    }
}

impl AsRef<PrepareOptions> for PrepareOptions {
    fn as_ref(&self) -> &PrepareOptions {
        self
    }
}

impl AsRef<PrepareOptions> for CompactOptions {
    fn as_ref(&self) -> &PrepareOptions {
        &self.prepare
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use utoipa::{IntoParams, PartialSchema};

    fn schema_names<S: PartialSchema>() -> Vec<String> {
        let json = serde_json::to_value(S::schema()).unwrap();
        json["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    }

    fn json_names<O: Options>() -> Vec<String> {
        let mut names = Vec::new();
        O::json_names(&mut names);
        names.into_iter().map(String::from).collect()
    }

    #[test]
    fn documented_json_properties_are_the_read_keys() {
        assert_eq!(
            schema_names::<PrepareOptions>(),
            json_names::<PrepareOptions>()
        );
        let mut compact = json_names::<PrepareOptions>();
        compact.extend(schema_names::<CompactOptions>());
        assert_eq!(compact, json_names::<CompactOptions>());
        assert_eq!(
            schema_names::<BranchSummaryOptions>(),
            json_names::<BranchSummaryOptions>()
        );
        assert_eq!(schema_names::<PruneOptions>(), json_names::<PruneOptions>());
    }

    #[test]
    fn documented_query_parameters_are_the_read_keys() {
        let params = |p: Vec<utoipa::openapi::path::Parameter>| -> Vec<String> {
            p.into_iter().map(|p| p.name).collect()
        };
        let names = |f: fn(&mut Vec<&'static str>)| -> Vec<String> {
            let mut names = Vec::new();
            f(&mut names);
            names.into_iter().map(String::from).collect()
        };
        // `includeMessages` is read from a query string too, documented as `messages`.
        let mut prepare = names(PrepareOptions::query_names);
        prepare.retain(|n| n != "includeMessages");
        assert_eq!(params(PrepareOptions::into_params(|| None)), prepare);
        let mut compact = params(PrepareOptions::into_params(|| None));
        compact.extend(params(CompactOptions::into_params(|| None)));
        let mut compact_names = names(CompactOptions::query_names);
        compact_names.retain(|n| n != "includeMessages");
        assert_eq!(compact, compact_names);
        assert_eq!(
            params(BranchSummaryOptions::into_params(|| None)),
            names(BranchSummaryOptions::query_names)
        );
        assert_eq!(
            params(PruneOptions::into_params(|| None)),
            names(PruneOptions::query_names)
        );
    }
}

options! {
    /// Options of `POST /v1/recall`.
    pub struct RecallOptions {
        /// The search text (required): words, identifiers, paths, error codes.
        pub q: Option<String> = "q";
        /// Matches to return, best first [5, at most 50].
        pub limit: Option<u64> = "limit";
        /// `compacted`: the entries the latest compaction took out of the context (with
        /// none, those a compaction with these settings would summarize) [default];
        /// `all`: the whole path.
        pub scope: Option<RecallScope> = "scope";
        /// Entry whose path is searched (default: the last entry).
        pub leaf_id: Option<String> = "leafId";
        /// Without a compaction on the path: the cut that decides the compacted part
        /// [20000].
        pub keep_recent_tokens: Option<u64> = "keepRecentTokens", settings;
        /// Without a compaction on the path: the reserve of that cut [16384].
        pub reserve_tokens: Option<u64> = "reserveTokens", settings;
    }
}

/// What a recall searches.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum RecallScope {
    #[default]
    Compacted,
    All,
}
