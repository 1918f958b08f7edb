//! The shutdown: every shard's pending timers are closed and woken, in batches, and the
//! driver refuses registrations from then on.

use super::fire::WakeList;
use super::{Driver, Shard, CLOSING, MAX_TICK, NEVER, SHUTDOWN};
use crate::loom::Ordering;

impl Driver {
    /// Shuts the driver down: every pending timer is unlinked, marked `SHUTDOWN`, and woken,
    /// and later registrations are refused.
    pub(crate) fn shutdown(&self) {
        self.shut_down.store(true, Ordering::Relaxed);
        for shard in self.shards.iter() {
            self.shut_down(shard);
        }
    }

    /// Shuts one shard down.
    fn shut_down(&self, shard: &Shard) {
        let mut wakers = WakeList::new();
        loop {
            let mut inner = shard.inner.lock();
            inner.shutdown = true;
            let (mut done, mut closed) = (false, 0);
            while !wakers.is_full() {
                let Some((node, _)) = inner.wheel.poll(u64::MAX) else {
                    done = true;
                    break;
                };
                closed += 1;
                // SAFETY: as in `fire_or_relink`.
                let shared = unsafe { node.as_ref() }.value();
                // A swap, which also reads the tick it replaces: the lock keeps out every
                // writer but the owner's CAS to a later tick, which fails from here on, and
                // loom 0.7 can let a plain store land inside a concurrent read-modify-write,
                // which C11 forbids (`task/slot.rs`); the models run this code.
                let armed = shared.state.swap(CLOSING, Ordering::Release);
                debug_assert!(armed <= MAX_TICK, "a linked entry is armed");
                wakers.push(shared.waker.take());
                shared.touched();
                shared.state.store(SHUTDOWN, Ordering::Release);
            }
            shard.next_due.store(NEVER, Ordering::Relaxed);
            drop(inner);
            // Timers the shutdown closes will never fire, and their drops find them out of
            // the wheel: they count as cancelled here.
            self.metrics.add(|m| &m.cancelled, closed);
            wakers.wake_all();
            if done {
                return;
            }
        }
    }
}
