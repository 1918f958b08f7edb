//! How worker 0 sleeps until its next timer or an unpark.
//!
//! Worker 0 blocks in a `mio::Poll`; other threads wake it through its `mio::Waker`. On
//! Linux the timeout is a `timerfd` registered in that poll and armed, to the nanosecond, for
//! the next expiry (re-armed only when that expiry changes), with the thread's timer slack
//! cut to a nanosecond, so worker 0 wakes at the tick rather than at a whole-millisecond
//! epoll timeout. Elsewhere the poll's own timeout is the fallback: whatever resolution the
//! platform's poll offers (on macOS and the BSDs, kqueue's nanoseconds; on Windows,
//! milliseconds). Miri cannot run a `timerfd`, so under Miri the fallback stands in on Linux
//! too (hence `not(miri)` beside every `target_os = "linux"` below).
//!
//! # Waking early and spinning, at fine resolutions
//!
//! A thread blocked in the kernel resumes some tens of microseconds after its timer expires
//! (more on a virtual machine): nothing at a 1 ms tick, most of the error at 100 µs. So below
//! [`SPIN_BELOW`] the timerfd is armed [`spin_margin`] before the tick (half a tick, at most
//! [`MAX_SPIN`]), and when it is that timer that woke worker 0, the thread spins on the clock
//! for the rest, stopping early if it is unparked. A wake-up then costs at most that margin of
//! CPU, and a timer still fires only once its tick has come: the spin moves when worker 0
//! looks at the wheel, never what the wheel counts as due. At the default 1 ms there is no
//! margin and no spin.
//!
//! It follows the park state and activity protocol of `crate::park`, plus a *nudge*: a wake
//! that carries no activity count, which the driver sends when the last active thread of a
//! paused runtime goes idle, so worker 0 wakes to advance the clock.
//!
//! Under loom there is no time and no mio: a condvar stands in, a park of at most an hour
//! returns at once (it stands for "the timer is due"), and a longer or untimed one waits to be
//! woken.

use std::fmt;
use std::io;
use std::time::Duration;

use crate::loom::Arc;
use crate::park::{ParkStart, ParkState};
use crate::time::driver::Driver;

/// What worker 0 parks toward: the tick of its next timer, the instant that tick starts, and
/// the time until it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Wakeup {
    pub(crate) tick: u64,
    pub(crate) at: crate::time::Instant,
    pub(crate) after: Duration,
    /// The tick starts at the same system instant at every park: the clock was never paused.
    /// Once it has been, each `resume` shifts the runtime's clock against the system's, so a
    /// timer armed for the tick before may now be off.
    pub(crate) fixed: bool,
}

/// Ticks shorter than this get a spin margin (see the module notes).
pub(crate) const SPIN_BELOW: Duration = Duration::from_millis(1);

/// The longest margin, and so the most CPU one wake-up can spin away.
pub(crate) const MAX_SPIN: Duration = Duration::from_micros(50);

/// How long before its tick worker 0 asks to be woken, to spin the rest: half a tick, at most
/// [`MAX_SPIN`], for ticks shorter than [`SPIN_BELOW`]; none otherwise.
pub(crate) fn spin_margin(tick: Duration) -> Duration {
    if tick < SPIN_BELOW {
        (tick / 2).min(MAX_SPIN)
    } else {
        Duration::ZERO
    }
}

/// Worker 0's half: blocks.
pub(crate) struct DriverParker {
    state: Arc<ParkState>,
    #[cfg(not(loom))]
    poll: mio::Poll,
    #[cfg(not(loom))]
    events: mio::Events,
    #[cfg(all(not(loom), all(target_os = "linux", not(miri))))]
    timer: timerfd::TimerFd,
    /// See [`spin_margin`].
    #[cfg_attr(any(loom, not(all(target_os = "linux", not(miri)))), allow(dead_code))]
    spin: Duration,
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

/// A thread's timer slack from before it became worker 0 (see
/// [`DriverParker::on_worker_thread`]), or the one the runtime's blocking threads start with.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TimerSlack(
    #[cfg(all(not(loom), all(target_os = "linux", not(miri))))] Option<libc::c_ulong>,
    #[cfg(not(all(not(loom), all(target_os = "linux", not(miri)))))] (),
);

impl TimerSlack {
    /// This thread's slack. A thread starts with the slack of the thread that started it, 1 ns
    /// if that was worker 0, so the blocking pool gives its threads the slack of the thread
    /// that built the runtime.
    pub(crate) fn of_this_thread() -> TimerSlack {
        #[cfg(all(not(loom), all(target_os = "linux", not(miri))))]
        return TimerSlack(timerfd::timer_slack());
        #[cfg(not(all(not(loom), all(target_os = "linux", not(miri)))))]
        TimerSlack(())
    }

    /// Gives this thread the slack it had back. Call it on the thread it came from.
    pub(crate) fn restore(&self) {
        #[cfg(all(not(loom), all(target_os = "linux", not(miri))))]
        if let Some(slack) = self.0 {
            timerfd::set_timer_slack(slack);
        }
    }
}

/// The system instant at which `wakeup`'s tick starts, for the spin, which reads the system
/// clock: `at` itself while the runtime's clock was never paused, else `after` on from
/// `now()`, a system reading taken as the timer is armed for `after` (each `resume` shifts the
/// runtime's clock against the system's, so `at` read as a system instant could lie an hour
/// either side: the spin would give up at once, waking worker 0 before its tick, or run to
/// its bound). `None` past the system clock's range, which no timer reaches before it fires.
#[cfg(all(not(loom), all(target_os = "linux", not(miri))))]
fn spin_target(
    wakeup: Wakeup,
    now: impl FnOnce() -> std::time::Instant,
) -> Option<std::time::Instant> {
    if wakeup.fixed {
        Some(wakeup.at.into_std())
    } else {
        now().checked_add(wakeup.after)
    }
}

/// Under loom, the longest park that returns at once (see the module notes).
#[cfg(loom)]
pub(crate) const LOOM_SHORT_PARK: Duration = Duration::from_secs(3600);

/// The token of the waker in worker 0's poll.
#[cfg(not(loom))]
const WAKE_TOKEN: mio::Token = mio::Token(0);

impl DriverParker {
    /// A parker for a driver ticking every `tick`, and the unparker that wakes it.
    pub(crate) fn new(tick: Duration) -> io::Result<(DriverParker, DriverUnparker)> {
        let spin = spin_margin(tick);
        let state = Arc::new(ParkState::new());
        #[cfg(not(loom))]
        {
            let poll = mio::Poll::new()?;
            let waker = mio::Waker::new(poll.registry(), WAKE_TOKEN)?;
            #[cfg(all(target_os = "linux", not(miri)))]
            let timer = timerfd::TimerFd::new(poll.registry())?;
            Ok((
                DriverParker {
                    state: state.clone(),
                    poll,
                    events: mio::Events::with_capacity(8),
                    #[cfg(all(target_os = "linux", not(miri)))]
                    timer,
                    spin,
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
                    spin,
                    raw: raw.clone(),
                },
                DriverUnparker { state, raw },
            ))
        }
    }

    /// Called on worker 0's thread before it first parks: on Linux, cuts the thread's timer
    /// slack to a nanosecond, so the kernel fires its timer on time. Returns the slack it had,
    /// for a thread that is worker 0 only for a while (a current-thread runtime's `block_on`)
    /// to [`restore`](TimerSlack::restore) when it stops being.
    pub(crate) fn on_worker_thread(&self) -> TimerSlack {
        #[cfg(all(not(loom), all(target_os = "linux", not(miri))))]
        return TimerSlack(timerfd::minimal_timer_slack());
        #[cfg(not(all(not(loom), all(target_os = "linux", not(miri)))))]
        TimerSlack(())
    }

    /// Whether an unpark is pending, which the next park would return at once for.
    pub(crate) fn is_notified(&self) -> bool {
        self.state.is_notified()
    }

    /// Blocks until unparked, nudged, or `wakeup` comes (`None`: no timeout). Returns at once
    /// if an unpark is pending, or if this thread was the last active one of a paused runtime
    /// with timers pending (the caller then advances the clock).
    pub(crate) fn park(&mut self, driver: &Driver, wakeup: Option<Wakeup>) {
        if self.state.start(driver) == ParkStart::Notified {
            return;
        }
        if !driver.should_auto_advance() {
            driver.set_worker0_parked(true);
            self.block(wakeup);
            driver.set_worker0_parked(false);
        }
        self.state.finish(driver);
    }

    #[cfg(not(loom))]
    fn block(&mut self, wakeup: Option<Wakeup>) {
        #[cfg(all(target_os = "linux", not(miri)))]
        let (timeout, spin_to) = {
            let mut spin_to = None;
            if let Some(wakeup) = wakeup {
                let tick = wakeup.fixed.then_some(wakeup.tick);
                self.timer.arm(tick, wakeup.after.saturating_sub(self.spin));
                if !self.spin.is_zero() {
                    spin_to = spin_target(wakeup, std::time::Instant::now);
                }
            }
            (None, spin_to)
        };
        #[cfg(not(all(target_os = "linux", not(miri))))]
        let timeout = wakeup.map(|w| w.after);
        // An error here (EINTR) is a spurious wakeup: the caller re-checks everything.
        let _ = self.poll.poll(&mut self.events, timeout);
        #[cfg(all(target_os = "linux", not(miri)))]
        {
            let (mut timer, mut woken) = (false, false);
            for event in &self.events {
                timer |= event.token() == timerfd::TIMER_TOKEN;
                woken |= event.token() == WAKE_TOKEN;
            }
            if timer {
                self.timer.expired();
                if let Some(to) = spin_to.filter(|_| !woken) {
                    self.spin_until(to);
                }
            }
        }
    }

    /// Spins until `at`, an unpark, or a spin margin and a half has passed (a bound in case
    /// the thread was descheduled mid-spin, when the clock has moved on anyway).
    #[cfg(all(not(loom), all(target_os = "linux", not(miri))))]
    fn spin_until(&self, at: std::time::Instant) {
        let start = std::time::Instant::now();
        let limit = start + self.spin + self.spin / 2;
        let mut now = start;
        while now < at && now < limit && !self.state.is_notified() {
            std::hint::spin_loop();
            now = std::time::Instant::now();
        }
    }

    #[cfg(loom)]
    fn block(&mut self, wakeup: Option<Wakeup>) {
        if wakeup.is_none_or(|w| w.after > LOOM_SHORT_PARK) {
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

    /// Whether an unpark is on its way to worker 0 (it has not yet woken and taken it).
    pub(crate) fn is_notified(&self) -> bool {
        self.state.is_notified()
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

/// The Linux timer worker 0 parks on.
#[cfg(all(not(loom), all(target_os = "linux", not(miri))))]
mod timerfd {
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::time::Duration;

    use mio::unix::SourceFd;
    use mio::{Interest, Registry, Token};

    /// The token of the timer in worker 0's poll.
    pub(super) const TIMER_TOKEN: Token = Token(1);

    pub(super) struct TimerFd {
        fd: OwnedFd,
        /// The tick the timer is armed for, if armed.
        armed: Option<u64>,
    }

    impl TimerFd {
        pub(super) fn new(registry: &Registry) -> io::Result<TimerFd> {
            // SAFETY: a plain system call with constant flags; it returns a new descriptor or
            // -1.
            let fd = unsafe {
                libc::timerfd_create(
                    libc::CLOCK_MONOTONIC,
                    libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
                )
            };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: `fd` is a descriptor just created and owned by nothing else.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            registry.register(
                &mut SourceFd(&fd.as_raw_fd()),
                TIMER_TOKEN,
                Interest::READABLE,
            )?;
            Ok(TimerFd { fd, armed: None })
        }

        /// Arms the timer to go off `after` from now, for `tick`, unless it is armed for that
        /// tick already. The clock is `CLOCK_MONOTONIC`, the clock of `std::time::Instant`
        /// on Linux; while the runtime's clock has never been paused, every arming for one
        /// tick aims at the same instant, so re-arming is needed only when the tick changes.
        /// `None` for a tick whose instant may have moved: the timer is armed anew.
        pub(super) fn arm(&mut self, tick: Option<u64>, after: Duration) {
            if tick.is_some() && self.armed == tick {
                return;
            }
            // A zero time would disarm the timer: the smallest wait is a nanosecond.
            let after = after.max(Duration::from_nanos(1));
            let spec = libc::itimerspec {
                it_interval: libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
                it_value: libc::timespec {
                    tv_sec: libc::time_t::try_from(after.as_secs()).unwrap_or(libc::time_t::MAX),
                    tv_nsec: after.subsec_nanos() as libc::c_long,
                },
            };
            // SAFETY: `fd` is our timerfd and `spec` a valid timer value; the old value is not
            // asked for.
            let result = unsafe {
                libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut())
            };
            self.armed = tick.filter(|_| result == 0);
        }

        /// The timer went off: clears its readiness; the next park arms it again.
        pub(super) fn expired(&mut self) {
            let mut expirations = 0u64;
            // SAFETY: reads at most 8 bytes into a local `u64`; a non-blocking descriptor that
            // has nothing to read returns -1, which is fine.
            unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    (&raw mut expirations).cast(),
                    std::mem::size_of::<u64>(),
                );
            }
            self.armed = None;
        }
    }

    /// Asks the kernel to fire this thread's timers with a nanosecond of slack instead of the
    /// default 50 µs; returns the slack the thread had (`None` if it could not be read).
    pub(super) fn minimal_timer_slack() -> Option<libc::c_ulong> {
        let previous = timer_slack();
        set_timer_slack(1);
        previous
    }

    /// This thread's timer slack in nanoseconds (`None` if it could not be read).
    pub(super) fn timer_slack() -> Option<libc::c_ulong> {
        // SAFETY: `PR_GET_TIMERSLACK` takes no argument and returns the calling thread's
        // slack, or -1 on failure.
        let slack = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK) };
        libc::c_ulong::try_from(slack).ok()
    }

    /// Sets this thread's timer slack to `slack` nanoseconds.
    pub(super) fn set_timer_slack(slack: libc::c_ulong) {
        // SAFETY: `PR_SET_TIMERSLACK` takes one integer argument and affects only the calling
        // thread; a failure leaves the slack as it was, which is still correct.
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, slack);
        }
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn only_sub_millisecond_ticks_spin_and_never_more_than_the_cap() {
        for (tick, margin) in [
            (Duration::from_secs(1), Duration::ZERO),
            (Duration::from_millis(1), Duration::ZERO),
            (Duration::from_micros(999), MAX_SPIN),
            (Duration::from_micros(100), Duration::from_micros(50)),
            (Duration::from_micros(40), Duration::from_micros(20)),
            (Duration::from_micros(10), Duration::from_micros(5)),
        ] {
            assert_eq!(spin_margin(tick), margin, "tick {tick:?}");
        }
    }

    #[cfg(all(target_os = "linux", not(miri)))]
    #[test]
    fn a_spin_toward_a_far_instant_gives_up_after_its_bound() {
        let (parker, _unparker) = DriverParker::new(Duration::from_micros(100)).expect("a poll");
        let start = std::time::Instant::now();
        parker.spin_until(start + Duration::from_secs(60));
        // The bound is 75 µs; a generous margin for a loaded machine that deschedules us.
        assert!(start.elapsed() < Duration::from_secs(10));
    }

    #[cfg(all(target_os = "linux", not(miri)))]
    #[test]
    fn a_fine_tick_wakes_no_earlier_than_its_instant() {
        let tick = Duration::from_micros(100);
        let (mut parker, _unparker) = DriverParker::new(tick).expect("a poll");
        for round in 0..20u32 {
            let after = Duration::from_micros(200 + 37 * u64::from(round));
            let at = std::time::Instant::now() + after;
            parker.block(Some(Wakeup {
                tick: u64::from(round),
                at: crate::time::Instant::from_std(at),
                after,
                fixed: true,
            }));
            // The timer went off a margin early and the thread spun the rest of the way (a
            // thread descheduled for longer than the spin's bound may come back late instead,
            // never early).
            assert!(std::time::Instant::now() >= at, "round {round} woke early");
        }
    }

    /// After a `pause` and a `resume`, the runtime's clock runs a second behind the system's:
    /// the spin must aim at the tick on the system clock, not at the tick's runtime instant
    /// read as a system one (a second gone), which made worker 0 give up the spin at once and
    /// wake a margin before its tick, to find nothing due and park again.
    #[cfg(all(target_os = "linux", not(miri)))]
    #[test]
    fn a_fine_tick_on_a_clock_shifted_by_a_resume_wakes_no_earlier_than_its_tick() {
        let tick = Duration::from_micros(100);
        let (mut parker, _unparker) = DriverParker::new(tick).expect("a poll");
        let shift = Duration::from_secs(1);
        for round in 0..20u32 {
            let after = Duration::from_micros(200 + 37 * u64::from(round));
            let start = std::time::Instant::now();
            let runtime_now = start.checked_sub(shift).expect("a second of uptime");
            parker.block(Some(Wakeup {
                tick: u64::from(round),
                at: crate::time::Instant::from_std(runtime_now + after),
                after,
                fixed: false,
            }));
            assert!(
                start.elapsed() >= after,
                "round {round} woke {:?} before its tick",
                after - start.elapsed()
            );
        }
    }
}
