//! The module retrygen generates from `conformance/faults/spec.yaml` with the reqwest adapter,
//! held as an SDK crate holds it (`cargo xtask faults` copies it into `src/retry_policy/`), and
//! the adapter's unit tests against a small HTTP/1.1 server of their own on 127.0.0.1.

pub mod retry_policy;

#[cfg(test)]
mod tests;
