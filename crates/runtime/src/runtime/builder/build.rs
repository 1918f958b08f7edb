//! How a [`Builder`] assembles a runtime: the timer driver and its clock, each worker's queues
//! and parker (worker 0's parks on the driver), the state the workers share, and a thread per
//! worker, or for a current-thread runtime its one worker left in a slot for `block_on`.

use std::io;

use crossbeam_utils::CachePadded;

use super::{Builder, CURRENT_THREAD_GLOBAL_QUEUE_INTERVAL};
use crate::loom::Arc;
use crate::park::Parker;
use crate::runtime::{Handle, Runtime};
use crate::scheduler::worker::{
    self, Core, LiveWorker, Park, QueueInterval, Worker, DEFAULT_GLOBAL_QUEUE_INTERVAL,
};
use crate::scheduler::{CoreSlot, Intervals, Local, Remote, Shared};
use crate::task::{BlockingPool, Slot};
use crate::time::clock::Clock;
use crate::time::driver::Driver;
use crate::time::park::{DriverParker, TimerSlack};

impl Builder {
    /// The workers' intervals: the one they start with between two looks at the injector
    /// first, and whether they tune it; and `event_interval`.
    fn intervals(&self) -> Intervals {
        let global_queue = match self.global_queue_interval {
            Some(interval) => QueueInterval::Fixed(interval),
            None if self.current_thread => {
                QueueInterval::Fixed(CURRENT_THREAD_GLOBAL_QUEUE_INTERVAL)
            }
            // loom has no time to tune by, and a model runs the same way every time.
            None if cfg!(loom) => QueueInterval::Fixed(DEFAULT_GLOBAL_QUEUE_INTERVAL),
            None => QueueInterval::Tuned,
        };
        Intervals {
            global_queue,
            event: self.event_interval,
        }
    }

    /// Builds the runtime and starts its worker threads: see [`Builder::build`].
    pub(super) fn start(&self) -> io::Result<Runtime> {
        let workers = self
            .worker_threads
            .unwrap_or_else(crate::loom::available_parallelism);
        let tick = self.timer_resolution;
        let origin = std::time::Instant::now();
        let (driver_parker, driver_unparker) = DriverParker::new(tick)?;
        let mut driver_parker = Some(driver_parker);
        let clock = Clock::new(origin, tick, self.start_paused);
        // A current-thread runtime's worker has no thread of its own: the thread in
        // `block_on` is active, counted as such, while it runs it.
        let active = if self.current_thread { 0 } else { workers };
        let driver = Driver::new(
            clock,
            origin,
            tick,
            driver_unparker,
            workers,
            active,
            self.metrics,
        );

        let mut cores = Vec::with_capacity(workers);
        let mut remotes = Vec::with_capacity(workers);
        for index in 0..workers {
            let queue = Local::new_fifo();
            let held = Local::new_lifo();
            let (park, unparker) = if index == 0 {
                (
                    Park::Driver(driver_parker.take().expect("one driver parker")),
                    None,
                )
            } else {
                let parker = Parker::new(driver.clone());
                let unparker = parker.unparker();
                (Park::Thread(parker), Some(unparker))
            };
            remotes.push(CachePadded::new(Remote {
                stealer: queue.stealer(),
                held: held.stealer(),
                lifo: Slot::new(),
                unparker,
            }));
            cores.push(Core { queue, held, park });
        }
        // A current-thread runtime's one worker waits in a slot for a `block_on` to run it
        // (`scheduler/current.rs`); the other flavor starts a thread per worker.
        let core_slot = if self.current_thread {
            Some(CoreSlot::new(cores.pop().expect("one worker")))
        } else {
            None
        };

        let handle = Handle {
            shared: Arc::new(Shared::new(
                remotes.into_boxed_slice(),
                driver,
                Arc::new(
                    BlockingPool::new(self.max_blocking_threads, self.keep_alive)
                        .with_thread_hooks(self.hooks.clone())
                        .with_timer_slack(TimerSlack::of_this_thread()),
                ),
                self.name.as_deref().map(Box::from),
                self.hooks.clone(),
                self.intervals(),
                core_slot,
            )),
        };
        let mut threads = Vec::with_capacity(workers);
        for (index, core) in cores.into_iter().enumerate() {
            let worker = Worker::new(handle.clone(), index);
            let hooks = self.hooks.clone();
            let current = handle.clone();
            let spawned = self.hooks.worker_builder(index).spawn(move || {
                worker::mark_started_as(&current.shared, index);
                // The start and stop callbacks see the runtime as the current one, as tokio's.
                let _current = crate::runtime::context::enter(current.clone());
                // One of the live workers from before the start callback to after the stop
                // callback (as counted when the runtime was built), so that a shutdown's
                // timeout covers both, and a runtime dropped in either does not wait for
                // this thread.
                let _live = LiveWorker::enter(current.shared.clone());
                hooks.run(|| worker.run_counted(core));
            });
            match spawned {
                Ok(thread) => threads.push(thread),
                Err(error) => {
                    // Stop the workers already started; the rest never existed.
                    let runtime = Runtime::from_parts(handle, threads);
                    runtime.abandon_unstarted(workers - index);
                    drop(runtime);
                    return Err(error);
                }
            }
        }
        Ok(Runtime::from_parts(handle, threads))
    }
}
