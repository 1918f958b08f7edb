//! [`TimerKey`], the name the keyed wheel gives each timer.

/// Names one timer in a [`Wheel`](crate::Wheel).
///
/// A key is generation-checked: once its timer is removed or fired, the key is stale for good,
/// even after the wheel reuses the timer's storage, and every method given it answers `None`
/// or `false` without touching any other timer. A key names a timer of the wheel that made
/// it only: given to another wheel, it may name one of that wheel's timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimerKey {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}
