//! The compaction core: token estimates, context, cut point, preparation,
//! serialization and file operations. Pure: no I/O.
//! The contract these modules implement, divergences included, is `docs/algorithm.md`.

pub mod branch;
pub mod context;
pub mod conversation_json;
pub mod cut_point;
pub mod file_ops;
pub mod ledger;
pub mod message;
pub mod prepare;
pub mod prune;
pub(crate) mod serialize;
pub mod stringify;
pub mod template;
// The service's tests write their sessions with it too (the `test-util` feature).
#[cfg(any(test, feature = "test-util"))]
pub mod test_session;
pub mod tokens;

pub use cut_point::CutPoint;
pub use file_ops::{FileLists, FileOps};
pub use message::AgentMessage;
pub use prepare::{prepare_compaction, NotCompactable, Preparation, Settings};
pub use serialize::{serialize_conversation, Wrappers};
