//! Unit tests of the runtime, inside the crate so that they build operation tables the way a
//! tables file does (the result structs are `#[non_exhaustive]` outside it).

// Allowed: a global allocator implements an `unsafe` trait; this one counts and forwards.
#[allow(unsafe_code)]
mod allocations;
mod decide;
mod matcher;
mod origin;
mod v2;
mod v3;
mod valid;
