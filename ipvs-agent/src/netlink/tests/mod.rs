//! Golden-byte and property tests.
