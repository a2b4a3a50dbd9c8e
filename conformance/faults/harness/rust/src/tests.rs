//! Unit tests of the reqwest adapter.
