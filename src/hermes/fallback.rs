//! See the module list in `hermes` (work in progress: filled by its owner).
