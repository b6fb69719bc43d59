//! The load's rules, on no clock of their own: [`dispatch::Dispatcher`]
//! says what to send when, and the live client (tokio's timers) and the
//! simulated engine's virtual time both carry it out.

pub mod dispatch;
