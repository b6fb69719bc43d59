//! Code shared by the integration tests (and the agreement example).

pub mod agreement;
