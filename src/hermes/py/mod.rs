//! Python's text semantics, as hermes's numbers depend on them (contract §2).

pub mod tables;
