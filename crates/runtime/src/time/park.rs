//! How worker 0 sleeps until its next timer or an unpark: a `mio::Poll` and its
//! `mio::Waker`, or under loom a condvar (loom has no time: a park of at most an hour
//! returns at once, a longer one waits to be woken).
//!
//! It follows the park state and activity protocol of `crate::park`, plus a *nudge*: a wake
//! that carries no activity count, which the driver sends when the last active thread of a
//! paused runtime goes idle, so worker 0 wakes to advance the clock.

use std::fmt;
use std::io;
use std::time::Duration;

use crate::loom::Arc;
use crate::park::{ParkStart, ParkState};
use crate::time::driver::Driver;

/// Worker 0's half: blocks.
pub(crate) struct DriverParker {
    state: Arc<ParkState>,
    #[cfg(not(loom))]
    poll: mio::Poll,
    #[cfg(not(loom))]
    events: mio::Events,
    #[cfg(loom)]
    raw: Arc<LoomWake>,
}

/// Everyone else's half: wakes worker 0.
pub(crate) struct DriverUnparker {
    state: Arc<ParkState>,
    #[cfg(not(loom))]
    waker: mio::Waker,
    #[cfg(loom)]
    raw: Arc<LoomWake>,
}

/// Under loom, the longest park that returns at once (see `DriverParker::block`).
#[cfg(loom)]
const LOOM_SHORT_PARK: Duration = Duration::from_secs(3600);

/// The token of the waker in worker 0's poll.
#[cfg(not(loom))]
const WAKE_TOKEN: mio::Token = mio::Token(0);

impl DriverParker {
    /// A parker and the unparker that wakes it.
    pub(crate) fn new() -> io::Result<(DriverParker, DriverUnparker)> {
        let state = Arc::new(ParkState::new());
        #[cfg(not(loom))]
        {
            let poll = mio::Poll::new()?;
            let waker = mio::Waker::new(poll.registry(), WAKE_TOKEN)?;
            Ok((
                DriverParker {
                    state: state.clone(),
                    poll,
                    events: mio::Events::with_capacity(8),
                },
                DriverUnparker { state, waker },
            ))
        }
        #[cfg(loom)]
        {
            let raw = Arc::new(LoomWake::new());
            Ok((
                DriverParker {
                    state: state.clone(),
                    raw: raw.clone(),
                },
                DriverUnparker { state, raw },
            ))
        }
    }

    /// Blocks until unparked, nudged, or `timeout` passes (`None`: no timeout). Returns at
    /// once if an unpark is pending, or if this thread was the last active one of a paused
    /// runtime with timers pending (the caller then advances the clock).
    pub(crate) fn park(&mut self, driver: &Driver, timeout: Option<Duration>) {
        if self.state.start(driver) == ParkStart::Notified {
            return;
        }
        if !driver.should_auto_advance() {
            self.block(timeout);
        }
        self.state.finish(driver);
    }

    fn block(&mut self, timeout: Option<Duration>) {
        #[cfg(not(loom))]
        {
            // An error here (EINTR) is a spurious wakeup: the caller re-checks everything.
            let _ = self.poll.poll(&mut self.events, timeout);
        }
        // loom has no time. A park of at most an hour stands for "wakes when its timer is
        // due", which the model lets happen at once; a longer or untimed one waits for an
        // unpark or a nudge, so a model whose wakeup is lost deadlocks.
        #[cfg(loom)]
        if timeout.is_none_or(|t| t > LOOM_SHORT_PARK) {
            self.raw.wait();
        }
    }
}

impl DriverUnparker {
    /// Wakes worker 0 (counting it active), or makes its next park return at once.
    pub(crate) fn unpark(&self, driver: &Driver) {
        if self.state.notify(driver) {
            self.nudge();
        }
    }

    /// Wakes worker 0 without counting it active: it counts itself when it wakes.
    pub(crate) fn nudge(&self) {
        #[cfg(not(loom))]
        {
            // Failing to wake can only mean the poll is gone, which happens at shutdown.
            let _ = self.waker.wake();
        }
        #[cfg(loom)]
        self.raw.wake();
    }
}

/// Under loom: a wake flag and a condvar, standing in for the poll and its waker.
#[cfg(loom)]
struct LoomWake {
    woken: crate::loom::Mutex<bool>,
    condvar: crate::loom::Condvar,
}

#[cfg(loom)]
impl LoomWake {
    fn new() -> LoomWake {
        LoomWake {
            woken: crate::loom::Mutex::new(false),
            condvar: crate::loom::Condvar::new(),
        }
    }

    fn wait(&self) {
        let mut woken = self.woken.lock();
        while !*woken {
            woken = self.condvar.wait(woken);
        }
        *woken = false;
    }

    fn wake(&self) {
        *self.woken.lock() = true;
        self.condvar.notify_one();
    }
}

impl fmt::Debug for DriverParker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DriverParker")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for DriverUnparker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DriverUnparker")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}
