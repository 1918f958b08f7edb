//! [`BlockingPool`]: the threads that run `spawn_blocking` closures, and the workers that
//! `block_in_place` hands to another thread.
//!
//! A thread that finishes a job stays for more, so a service that makes many short blocking
//! calls does not start a thread for each. The pool has at most `max_threads` threads for
//! its queued jobs; a thread that has waited `keep_alive` without a job exits.
//!
//! A job given with [`spawn_now`](BlockingPool::spawn_now) (a worker's loop, from
//! `block_in_place`) never waits: it goes to an idle thread, or to a new one whatever the
//! cap, and the thread running it does not count against the cap. Otherwise one worker's
//! loop, which runs until shutdown, could hold the only thread a `spawn_blocking` closure
//! waits for, and a worker handed off behind busy closures would stall its queue.
//!
//! # State
//!
//! All of it sits under one mutex, beside one condvar the idle threads wait on:
//!
//! | field        | meaning                                                                     |
//! |--------------|-----------------------------------------------------------------------------|
//! | `queue`      | jobs not yet taken by a thread                                              |
//! | `now`        | jobs from `spawn_now` waiting for the idle thread woken for them            |
//! | `threads`    | threads started and not yet exited                                          |
//! | `exempt`     | jobs from `spawn_now` not yet finished, outside the cap                     |
//! | `idle`       | threads waiting on the condvar                                              |
//! | `notified`   | idle threads already woken for a job, not yet back under the lock           |
//! | `shutdown`   | the runtime shut down: threads exit once the queue is empty, new jobs are cancelled |
//! | `running`    | the join handles of the threads not yet at their end                        |
//! | `last_ended` | the join handle of the thread that ended last                               |
//!
//! # The protocol
//!
//! - `spawn` pushes the job, then: if some idle thread has not been woken yet
//!   (`idle > notified`), it wakes one; else, with fewer than `max_threads` threads outside
//!   `exempt`, it starts a thread; else the job waits for the first thread to come free. If
//!   the system refuses the new thread, the job waits for a thread that is still alive and
//!   takes queued jobs (one outside `exempt`); with none, nothing would take the queue before
//!   shutdown, so `spawn` cancels every queued job and panics.
//! - A new thread is counted in `threads` under the lock; it gets its name outside it (the
//!   builder's name callback may do anything), then is started under the lock again and its
//!   join handle pushed onto `running` before the lock is released, so the new thread, which
//!   takes the lock before anything else it does with the state, always finds its handle
//!   there when it ends.
//! - `spawn_now` counts the job in `exempt`, then: if some idle thread has not been woken
//!   yet, it pushes the job onto `now` and wakes one; else it starts a thread that runs the
//!   job first. If the pool is shut down or the system refuses the thread, it drops the job
//!   unrun and says so.
//! - A thread that ends (its keep-alive ran out, or the shutdown) moves its handle from
//!   `running` to `last_ended` and joins the one it replaces. A shutdown that saw every
//!   thread end joins `last_ended`, and with it, one after the other, all the threads; but
//!   not on a thread that has ended (a runtime dropped by one of its thread-locals), which
//!   could be joining itself, or one that joins it.
//! - A shutdown on one of the pool's threads waits for the others only, and not at all from
//!   a queued job (a `spawn_blocking` closure), which another closure may be waiting for.
//! - A job queued before the shutdown still runs: the threads take the queue until it is
//!   empty before they look at `shutdown`, as tokio's do, so a closure passed just before a
//!   runtime is dropped is not lost, and the shutdown waits for it as for a running one (up
//!   to its timeout). After shutdown `spawn` cancels its job instead of queuing it. Only
//!   the pool's threads take the queue: a job waiting for one queued behind it, with every
//!   thread the cap allows busy, holds a shutdown up (to its timeout) as it held the pool up
//!   before. Tokio's worker threads, which are blocking threads, take the queue as they
//!   exit and get out of that; no other thread can here without running a closure where
//!   its thread-locals, name and start callback are not a blocking thread's.
//! - A thread takes jobs from `now`, then from the queue, until both are empty, running each
//!   without the lock. Once a `now` job returns, the thread takes it out of `exempt` and
//!   counts against the cap again; if the other threads already fill the cap, it exits, so
//!   that no more than `max_threads` threads ever run queued jobs. With both queues empty it
//!   exits if the pool is shut down or its keep-alive has run out; otherwise it waits,
//!   counted in `idle`. When it wakes for any reason (a notify, the timeout, a
//!   spurious wake-up) it takes one `notified` if there is one, and looks at the queues again
//!   before anything else.
//!
//! Why no job waits while a thread could run it: a job is pushed under the lock, and every
//! thread looks at the queues under the lock before it waits or exits. A woken thread takes a
//! `notified` whether or not the notify was meant for it; whichever thread takes it goes on to
//! look at the queues, so each `notified` stands for a thread about to look, as `spawn` and
//! `spawn_now` counted on. A job that found every thread busy and `max_threads` reached is
//! taken by the first of them to finish. A `now` job is never left without a thread: it was
//! pushed with a `notified` taken for it, and it is taken before any queued job.

use std::cell::Cell;
use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::time::{Duration, Instant};

use crate::loom::{thread, thread_local_const, Arc, Condvar, Mutex};
use crate::runtime::context;
use crate::runtime::thread_hooks::ThreadHooks;
use crate::runtime::Handle;
use crate::time::park::TimerSlack;

thread_local_const! {
    /// The address of the pool whose thread this is, from before its start callback until it
    /// stops counting among the pool's threads, or 0: a shutdown that runs on one of the pool's
    /// own threads waits for the others only.
    static POOL_OF_THIS_THREAD: Cell<usize> = Cell::new(0);
}

thread_local_const! {
    /// The address of the pool whose queued job (a `spawn_blocking` closure) this thread is
    /// running, or 0: a shutdown there does not wait for the pool, since
    /// another of its closures may be waiting for this one.
    static CLOSURE_OF_POOL: Cell<usize> = Cell::new(0);
}

/// Marks this thread as running a queued job of the pool at an address until it drops,
/// then puts back the mark it replaced, also when the job unwinds.
struct ClosureMark(usize);

impl ClosureMark {
    fn set(pool: usize) -> ClosureMark {
        ClosureMark(CLOSURE_OF_POOL.with(|mark| mark.replace(pool)))
    }
}

impl Drop for ClosureMark {
    fn drop(&mut self) {
        let _ = CLOSURE_OF_POOL.try_with(|mark| mark.set(self.0));
    }
}

thread_local_const! {
    /// The address of the pool this thread belonged to and has left, its thread-locals now
    /// being dropped, or 0: a shutdown there must not join the thread that ended last (this
    /// one, or one joining this one).
    static ENDED_IN_POOL: Cell<usize> = Cell::new(0);
}

/// Work the pool runs on one of its threads.
pub(crate) trait Job: Send + 'static {
    fn run(self);

    /// The job will never run (no thread is left to run it): release whatever waits on it.
    fn cancel(self);

    /// The runtime a thread started for this job runs in, as the current one, from its
    /// start callback to its stop callback (as tokio's blocking threads do).
    fn runtime(&self) -> Option<Handle> {
        None
    }
}

/// A job for [`BlockingPool::spawn_now`].
pub(crate) type NowJob = Box<dyn FnOnce() + Send>;

/// The threads of `spawn_blocking`, shared by the runtime and the threads themselves.
pub(crate) struct BlockingPool<J> {
    state: Mutex<State<J>>,
    condvar: Condvar,
    max_threads: usize,
    keep_alive: Duration,
    /// The names, stack size and callbacks of the pool's threads.
    hooks: ThreadHooks,
    /// The timer slack each thread sets as it starts: a thread started by worker 0 would
    /// otherwise keep worker 0's.
    slack: TimerSlack,
}

struct State<J> {
    queue: VecDeque<J>,
    now: VecDeque<NowJob>,
    threads: usize,
    /// Threads no longer counted in `threads`, running the builder's stop callback before
    /// they exit; `wait_for_exit` waits for them too.
    exiting: usize,
    exempt: usize,
    idle: usize,
    notified: usize,
    shutdown: bool,
    /// The threads started and not yet at their end (counted in `threads` or `exiting`).
    /// Each is pushed under the lock by the thread that starts it, before the new thread can
    /// take the lock, so a thread always finds its own here when it ends.
    running: Vec<thread::JoinHandle<()>>,
    /// The thread that ended last: the next to end joins it, and so does a shutdown, which
    /// then knows every thread has returned (each joined the one before it).
    last_ended: Option<thread::JoinHandle<()>>,
}

impl<J: Job> BlockingPool<J> {
    /// A pool of at most `max_threads` threads (at least one) for queued jobs, each
    /// exiting after `keep_alive` without a job.
    pub(crate) fn new(max_threads: usize, keep_alive: Duration) -> BlockingPool<J> {
        BlockingPool {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                now: VecDeque::new(),
                threads: 0,
                exiting: 0,
                exempt: 0,
                idle: 0,
                notified: 0,
                shutdown: false,
                running: Vec::new(),
                last_ended: None,
            }),
            condvar: Condvar::new(),
            max_threads: max_threads.max(1),
            keep_alive,
            hooks: ThreadHooks::default(),
            slack: TimerSlack::default(),
        }
    }

    /// The pool's threads start with `slack` (a default one: with the slack of the thread
    /// that started them).
    pub(crate) fn with_timer_slack(mut self, slack: TimerSlack) -> BlockingPool<J> {
        self.slack = slack;
        self
    }

    /// The pool's threads get `hooks`' names and stack size, and run its callbacks.
    pub(crate) fn with_thread_hooks(mut self, hooks: ThreadHooks) -> BlockingPool<J> {
        self.hooks = hooks;
        self
    }

    /// Queues `job` and makes sure a thread will run it: an idle one, a new one, or, when
    /// `max_threads` are all busy, the first to finish.
    ///
    /// # Panics
    ///
    /// If a new thread was needed, the system refused to start it, and the pool has no thread
    /// left that could take the job. The queued jobs, this one included, are cancelled
    /// first. With a thread left, the job waits for it instead, as behind the cap.
    #[track_caller]
    pub(crate) fn spawn(pool: &Arc<Self>, job: J) {
        Self::spawn_with(pool, job, |builder, pool, runtime| {
            Self::start_thread(builder, pool, runtime, None)
        });
    }

    /// Runs `job` on a thread of the pool at once: an idle one, or a new one even past
    /// `max_threads`, never after a queued job; the thread that runs it counts against the
    /// cap again only once it returns.
    ///
    /// # Errors
    ///
    /// If the pool is shut down or the system refused a new thread; `job` is then dropped
    /// without running.
    ///
    /// A thread started for it runs in `runtime`, as [`Job::runtime`] says.
    pub(crate) fn spawn_now(
        pool: &Arc<Self>,
        job: NowJob,
        runtime: Option<Handle>,
    ) -> io::Result<()> {
        Self::spawn_now_with(pool, job, |builder, pool, job| {
            Self::start_thread(builder, pool, runtime, Some(job))
        })
    }

    /// Starts one of the pool's threads with `builder`: in `runtime`, from before its start
    /// callback to after its stop callback, it runs `first`, then queued jobs.
    fn start_thread(
        builder: thread::Builder,
        pool: Arc<Self>,
        runtime: Option<Handle>,
        first: Option<NowJob>,
    ) -> io::Result<thread::JoinHandle<()>> {
        builder.spawn(move || {
            pool.slack.restore();
            let current = runtime.map(context::enter);
            pool.enter_thread();
            pool.hooks.start();
            pool.run(first, current);
        })
    }

    /// [`spawn_now`](Self::spawn_now), starting a thread (which must call `run` with the
    /// job) with `start`, given a builder for it.
    fn spawn_now_with(
        pool: &Arc<Self>,
        job: NowJob,
        start: impl FnOnce(thread::Builder, Arc<Self>, NowJob) -> io::Result<thread::JoinHandle<()>>,
    ) -> io::Result<()> {
        let mut state = pool.state.lock();
        if state.shutdown {
            return Err(io::Error::other("the blocking pool is shut down"));
        }
        state.exempt += 1;
        if state.idle > state.notified {
            state.now.push_back(job);
            state.notified += 1;
            drop(state);
            pool.condvar.notify_one();
            return Ok(());
        }
        state.threads += 1;
        drop(state);
        let builder = pool.hooks.blocking_builder();
        // Started under the lock, as in `spawn_with`.
        let mut state = pool.state.lock();
        match start(builder, pool.clone(), job) {
            Ok(thread) => {
                state.running.push(thread);
                Ok(())
            }
            Err(error) => {
                state.threads -= 1;
                state.exempt -= 1;
                drop(state);
                // A shutdown may be waiting for the thread that never started.
                pool.condvar.notify_all();
                Err(error)
            }
        }
    }

    /// [`spawn`](Self::spawn), starting a thread (which must call `run`, in the job's
    /// runtime) with `start`.
    #[track_caller]
    fn spawn_with(
        pool: &Arc<Self>,
        job: J,
        start: impl FnOnce(
            thread::Builder,
            Arc<Self>,
            Option<Handle>,
        ) -> io::Result<thread::JoinHandle<()>>,
    ) {
        let mut state = pool.state.lock();
        if state.shutdown {
            drop(state);
            // Outside the lock, as below.
            job.cancel();
            return;
        }
        state.queue.push_back(job);
        if state.idle > state.notified {
            state.notified += 1;
            drop(state);
            pool.condvar.notify_one();
            return;
        }
        if state.threads - state.exempt >= pool.max_threads {
            return;
        }
        state.threads += 1;
        let runtime = state.queue.back().and_then(J::runtime);
        drop(state);
        // The name first, outside the lock: the builder's name callback may do anything.
        let builder = pool.hooks.blocking_builder();
        // Started under the lock, so that its handle is in `running` before it can take the
        // lock and end (tokio, too, starts its blocking threads under its pool's lock).
        let mut state = pool.state.lock();
        let error = match start(builder, pool.clone(), runtime) {
            Ok(thread) => {
                state.running.push(thread);
                return;
            }
            Err(error) => error,
        };
        state.threads -= 1;
        // A shutdown may be waiting for the thread that never started.
        pool.condvar.notify_all();
        if state.threads > state.exempt {
            // A live thread that takes queued jobs (not one running a worker handed off by
            // `block_in_place`, which runs until shutdown) looks at the queue before it waits
            // or exits.
            return;
        }
        let stranded = std::mem::take(&mut state.queue);
        drop(state);
        // Outside the lock: a cancelled job drops its closure, which may do anything.
        stranded.into_iter().for_each(J::cancel);
        panic!("failed to spawn a thread for spawn_blocking: {error}");
    }

    /// From now on `spawn` cancels its job; the threads still run the jobs queued before,
    /// then exit once the queue is empty: idle ones at once, busy ones once their job returns.
    pub(crate) fn shutdown(&self) {
        self.state.lock().shutdown = true;
        self.condvar.notify_all();
    }

    /// Whether this thread is one of the pool's, still counted among its threads.
    pub(crate) fn is_own_thread(&self) -> bool {
        POOL_OF_THIS_THREAD.with(Cell::get) == self.address()
    }

    /// Whether this thread is running one of the pool's queued jobs.
    pub(crate) fn runs_own_closure(&self) -> bool {
        CLOSURE_OF_POOL.with(Cell::get) == self.address()
    }

    /// Marks this new thread as one of the pool's, before its start callback: a runtime
    /// dropped there does not wait for the thread itself.
    fn enter_thread(&self) {
        POOL_OF_THIS_THREAD.with(|pool| pool.set(self.address()));
    }

    /// After [`shutdown`](Self::shutdown): waits until every thread has exited, so every
    /// job that had started or was queued has returned, or until
    /// `deadline`; returns whether they all did. On one of the pool's own threads (a runtime
    /// dropped in `block_in_place`'s closure there, or in a callback), every other thread.
    ///
    /// Then it joins them, so that what a thread drops as it ends (its thread-locals, the
    /// runtime's handle) is gone too, as tokio joins its blocking threads; with a `deadline`,
    /// only if they have already ended.
    pub(crate) fn wait_for_exit(&self, deadline: Option<Instant>) -> bool {
        let own = usize::from(self.is_own_thread());
        let mut state = self.state.lock();
        while state.threads + state.exiting > own {
            state = match deadline {
                None => self.condvar.wait(state),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return false;
                    }
                    self.condvar.wait_for(state, deadline - now)
                }
            };
        }
        // Each thread joined the one that ended before it, so joining the last joins all;
        // but not from a thread of the pool that has ended, whose thread-local's destructor
        // is shutting the runtime down: the last may be this thread, or one joining it.
        if ENDED_IN_POOL.with(Cell::get) == self.address() {
            return true;
        }
        let last = state.last_ended.take();
        drop(state);
        match last {
            Some(last) if deadline.is_none() || crate::loom::is_finished(&last) => {
                let _ = last.join();
            }
            Some(last) => self.state.lock().last_ended = Some(last),
            None => {}
        }
        true
    }

    fn address(&self) -> usize {
        std::ptr::from_ref(self).addr()
    }

    /// Threads started and not yet exited.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn threads(&self) -> usize {
        self.state.lock().threads
    }

    /// One thread's life: run `first`, a job from `spawn_now`, if any, then jobs from the
    /// queues, wait for more, run the stop callback, leave `current` (the runtime's context),
    /// join the thread that ended before this one, exit.
    fn run<C>(&self, first: Option<NowJob>, current: C) {
        let mut first = first;
        let mut state = self.state.lock();
        // When this thread's keep-alive runs out (`None` inside: never), set when it first
        // finds no job.
        let mut idle_until: Option<Option<Instant>> = None;
        loop {
            if let Some(job) = first.take().or_else(|| state.now.pop_front()) {
                drop(state);
                job();
                state = self.state.lock();
                state.exempt -= 1;
                idle_until = None;
                // Counted against the cap again: if the threads that stayed fill it, this
                // one leaves rather than run queued jobs past it.
                if state.threads - state.exempt > self.max_threads {
                    break;
                }
                continue;
            }
            if let Some(job) = state.queue.pop_front() {
                drop(state);
                let mark = ClosureMark::set(self.address());
                job.run();
                drop(mark);
                state = self.state.lock();
                idle_until = None;
                continue;
            }
            if state.shutdown {
                break;
            }
            let now = Instant::now();
            let until = *idle_until.get_or_insert_with(|| now.checked_add(self.keep_alive));
            if until.is_some_and(|until| now >= until) {
                break;
            }
            state.idle += 1;
            state = match until {
                Some(until) => self.condvar.wait_for(state, until - now),
                None => self.condvar.wait(state),
            };
            state.idle -= 1;
            if state.notified > 0 {
                state.notified -= 1;
            }
        }
        state.threads -= 1;
        // Outside the lock, as the callback may do anything, and so may the drop of the
        // runtime's handle, which may be its last; no longer counted among the threads that
        // take jobs, but waited for by a shutdown.
        state.exiting += 1;
        drop(state);
        self.hooks.stop();
        drop(current);
        let mut state = self.state.lock();
        state.exiting -= 1;
        POOL_OF_THIS_THREAD.with(|pool| pool.set(0));
        ENDED_IN_POOL.with(|pool| pool.set(self.address()));
        // This thread's handle becomes the last ended one; the one before it is joined here,
        // so that a shutdown that joins the last one has joined them all.
        let me = thread::current().id();
        let before = match state.running.iter().position(|t| t.thread().id() == me) {
            Some(index) => {
                let mine = state.running.swap_remove(index);
                state.last_ended.replace(mine)
            }
            None => None,
        };
        // With one thread left, that one may be a pool thread in `wait_for_exit`.
        let last = state.threads + state.exiting <= 1;
        drop(state);
        if last {
            // For `wait_for_exit`; idle threads that wake too look at the queue again.
            self.condvar.notify_all();
        }
        if let Some(before) = before {
            let _ = before.join();
        }
    }
}

impl<J> fmt::Debug for BlockingPool<J> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockingPool")
            .field("max_threads", &self.max_threads)
            .field("keep_alive", &self.keep_alive)
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
