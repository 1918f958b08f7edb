//! The wheel against an oracle: a `BTreeMap` ordered by (deadline, insertion sequence).
//!
//! Each operation is applied to both, and after every step the test checks that the wheel
//! fired exactly what the oracle says is due (the earliest deadline, ties in insertion order,
//! nothing early, nothing lost), that stale keys stay stale, that `next_expiration` keeps its
//! contract, and that the wheel's structural invariants hold (in a large wheel, every few
//! steps). A seeded random run covers millions of operations, growing the wheel to hundreds
//! or thousands of timers, and starts over with a new wheel whenever time nears its end,
//! where every deadline saturates and is due at once; it checks that it grew the wheel and
//! cascaded timers. Proptest runs shorter sequences and shrinks any failure to a minimal one.
//!
//! The same model drives the keyed `Wheel` and the `IntrusiveWheel` (over boxed, pinned nodes
//! that are freed as soon as they are unlinked), so under Miri it exercises the crate's
//! `unsafe` code too. A third run moves deadlines later through the intrusive nodes alone,
//! as the runtime's resets do, and polls with `poll_with`: nothing may then fire before the
//! deadline its owner moved it to.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::hash::Hash;
use std::pin::Pin;

use escapement_wheel::{IntrusiveWheel, Node, TimerKey, Wheel};
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// What the model needs of a wheel.
trait ModelWheel: Default {
    type Key: Copy + Eq + Hash + Debug;
    fn insert(&mut self, deadline: u64, value: u64) -> Self::Key;
    fn remove(&mut self, key: Self::Key) -> Option<u64>;
    fn reschedule(&mut self, key: Self::Key, deadline: u64) -> bool;
    fn deadline(&self, key: Self::Key) -> Option<u64>;
    fn contains(&self, key: Self::Key) -> bool;
    fn poll(&mut self, now: u64) -> Option<(Self::Key, u64, u64)>;
    fn now(&self) -> u64;
    fn len(&self) -> usize;
    fn next_expiration(&self) -> Option<u64>;
    fn cascades(&self) -> u64;
    fn clear(&mut self);
    fn check_invariants(&self);
    /// Whether the wheel's owner may move deadlines later without it (`extend`). Ties then
    /// fire in an order the oracle cannot know, and `next_expiration` may report a node's
    /// old deadline.
    const EXTENDS: bool = false;
    /// Moves a live timer's deadline later without telling the wheel.
    fn extend(&mut self, _key: Self::Key, _deadline: u64) {
        unreachable!("only a wheel with EXTENDS is asked to extend");
    }
}

impl ModelWheel for Wheel<u64> {
    type Key = TimerKey;
    fn insert(&mut self, deadline: u64, value: u64) -> TimerKey {
        Wheel::insert(self, deadline, value)
    }
    fn remove(&mut self, key: TimerKey) -> Option<u64> {
        Wheel::remove(self, key)
    }
    fn reschedule(&mut self, key: TimerKey, deadline: u64) -> bool {
        Wheel::reschedule(self, key, deadline)
    }
    fn deadline(&self, key: TimerKey) -> Option<u64> {
        Wheel::deadline(self, key)
    }
    fn contains(&self, key: TimerKey) -> bool {
        Wheel::contains(self, key)
    }
    fn poll(&mut self, now: u64) -> Option<(TimerKey, u64, u64)> {
        Wheel::poll(self, now)
    }
    fn now(&self) -> u64 {
        Wheel::now(self)
    }
    fn len(&self) -> usize {
        Wheel::len(self)
    }
    fn next_expiration(&self) -> Option<u64> {
        Wheel::next_expiration(self)
    }
    fn cascades(&self) -> u64 {
        Wheel::cascades(self)
    }
    fn clear(&mut self) {
        Wheel::clear(self)
    }
    fn check_invariants(&self) {
        Wheel::check_invariants(self)
    }
}

/// What an intrusive model node holds besides its id and value: nothing, or the deadline its
/// owner moved it to without telling the wheel, as the runtime's timers do.
trait Moved: Default {
    /// Whether the owner moves deadlines through the node; the wheel is then polled with
    /// [`IntrusiveWheel::poll_with`].
    const EXTENDS: bool;
    /// The deadline the owner moved the node to, or 0.
    fn get(&self) -> u64;
    fn set(&self, deadline: u64);
}

impl Moved for () {
    const EXTENDS: bool = false;
    fn get(&self) -> u64 {
        0
    }
    fn set(&self, _deadline: u64) {}
}

impl Moved for Cell<u64> {
    const EXTENDS: bool = true;
    fn get(&self) -> u64 {
        Cell::get(self)
    }
    fn set(&self, deadline: u64) {
        Cell::set(self, deadline);
    }
}

/// A heap node of the intrusive model: (id, value, moved deadline).
type BoxedNode<M> = Pin<Box<Node<(u64, u64, M)>>>;

/// An intrusive wheel over heap nodes, named by ids that are never reused. Each node holds
/// (id, value, moved deadline) and is freed as soon as the wheel unlinks it. With
/// `M = Cell<u64>`, `extend` writes a later deadline into the node only, never into the wheel.
#[derive(Default)]
struct Intrusive<M: Moved> {
    // Declared first, so it is dropped (unlinking any node still in it) before the nodes.
    wheel: IntrusiveWheel<(u64, u64, M)>,
    nodes: HashMap<u64, BoxedNode<M>>,
    next_id: u64,
}

/// The intrusive wheel whose owner moves deadlines later without it.
type Extending = Intrusive<Cell<u64>>;

impl<M: Moved> ModelWheel for Intrusive<M> {
    type Key = u64;
    const EXTENDS: bool = M::EXTENDS;
    fn insert(&mut self, deadline: u64, value: u64) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let node = self
            .nodes
            .entry(id)
            .or_insert(Box::pin(Node::new((id, value, M::default()))));
        node.value().2.set(deadline);
        // SAFETY: the node stays in `nodes` until the wheel has unlinked it, and is linked
        // into no other wheel.
        unsafe { self.wheel.insert(node.as_ref(), deadline) };
        id
    }
    fn remove(&mut self, id: u64) -> Option<u64> {
        let node = self.nodes.remove(&id)?;
        // SAFETY: the node belongs to this wheel; it is freed only after it is unlinked.
        let was_linked = unsafe { self.wheel.remove(node.as_ref()) };
        assert!(was_linked, "a held node is linked");
        Some(node.value().1)
    }
    fn reschedule(&mut self, id: u64, deadline: u64) -> bool {
        let Some(node) = self.nodes.get(&id) else {
            return false;
        };
        // Linking it again, earlier or later, sets the owner's deadline too, as a
        // registration under the runtime's lock does.
        node.value().2.set(deadline);
        // SAFETY: as in `insert`.
        unsafe { self.wheel.insert(node.as_ref(), deadline) };
        true
    }
    fn extend(&mut self, id: u64, deadline: u64) {
        let moved = &self.nodes[&id].value().2;
        assert!(
            deadline >= moved.get(),
            "an extension moves the deadline later"
        );
        moved.set(deadline);
    }
    fn deadline(&self, id: u64) -> Option<u64> {
        let node = self.nodes.get(&id)?;
        // SAFETY: the node belongs to this wheel.
        let linked = unsafe { self.wheel.deadline(node.as_ref()) }?;
        let moved = node.value().2.get();
        assert!(
            !M::EXTENDS || linked <= moved,
            "the wheel linked a node past its owner's deadline"
        );
        Some(linked.max(moved))
    }
    fn contains(&self, id: u64) -> bool {
        self.deadline(id).is_some()
    }
    fn poll(&mut self, now: u64) -> Option<(u64, u64, u64)> {
        let (node, deadline) = if M::EXTENDS {
            self.wheel.poll_with(now, |(_, _, moved)| moved.get())?
        } else {
            self.wheel.poll(now)?
        };
        // SAFETY: every linked node is alive in `nodes`; it is unlinked now.
        let (id, value, moved) = unsafe { node.as_ref() }.value();
        assert!(
            !M::EXTENDS || deadline == moved.get(),
            "a node is handed out at its owner's deadline"
        );
        let (id, value) = (*id, *value);
        assert!(
            self.nodes.remove(&id).is_some(),
            "the wheel fired a node it did not hold"
        );
        Some((id, deadline, value))
    }
    fn now(&self) -> u64 {
        self.wheel.now()
    }
    fn len(&self) -> usize {
        self.wheel.len()
    }
    fn next_expiration(&self) -> Option<u64> {
        self.wheel.next_expiration()
    }
    fn cascades(&self) -> u64 {
        self.wheel.cascades()
    }
    fn clear(&mut self) {
        self.wheel.clear();
        self.nodes.clear();
    }
    fn check_invariants(&self) {
        self.wheel.check_invariants();
        assert_eq!(
            self.nodes.len(),
            self.wheel.len(),
            "held nodes are the linked nodes"
        );
    }
}

/// One step of the model.
#[derive(Debug, Clone)]
enum Op {
    /// Insert a timer `offset` ticks from now (wrapping, so it can land in the past).
    Insert(Deadline),
    /// Remove the live timer at this position (modulo the live count).
    Remove(usize),
    /// Reschedule the live timer at this position.
    Reschedule(usize, Deadline),
    /// Move the live timer at this position this many ticks later without telling the wheel
    /// (saturating; a wheel without `EXTENDS` ignores it).
    Extend(usize, u64),
    /// Use a key of a removed or fired timer.
    Stale(usize),
    /// Poll with now advanced by this many ticks (saturating).
    Poll(u64),
    /// Poll at a tick before the current one.
    PollBack(u64),
    /// Poll at `next_expiration()` and check that it makes progress.
    PollNext,
    /// Poll repeatedly at a target until nothing more is due.
    Drain(u64),
    /// Remove everything.
    Clear,
}

#[derive(Debug, Clone, Copy)]
enum Deadline {
    /// `now + n`, `n` small: lands in level 0 or 1.
    Near(u64),
    /// `now - n`: already due.
    Past(u64),
    /// Just below, at or just above the range of a level: `now + 64^k + delta`.
    Boundary(u32, i8),
    /// The start of the next slot of a level, `+ delta`.
    SlotStart(u32, i8),
    /// Any tick.
    Anywhere(u64),
    /// `u64::MAX - n`.
    Max(u8),
}

impl Deadline {
    fn resolve(self, now: u64) -> u64 {
        match self {
            Deadline::Near(n) => now.saturating_add(n),
            Deadline::Past(n) => now.saturating_sub(n),
            Deadline::Boundary(level, delta) => {
                let width = 1u64.checked_shl(6 * level).unwrap_or(u64::MAX);
                now.saturating_add(width)
                    .saturating_add_signed(delta.into())
            }
            Deadline::SlotStart(level, delta) => {
                let shift = 6 * level;
                let block = (now >> shift).saturating_add(1);
                block
                    .checked_shl(shift)
                    .filter(|s| s >> shift == block)
                    .unwrap_or(u64::MAX)
                    .saturating_add_signed(delta.into())
            }
            Deadline::Anywhere(t) => t,
            Deadline::Max(n) => u64::MAX - u64::from(n),
        }
    }
}

/// The wheel, the oracle, and the bookkeeping that ties them.
struct Model<W: ModelWheel> {
    wheel: W,
    /// Pending timers by (deadline, sequence).
    oracle: BTreeMap<(u64, u64), W::Key>,
    /// The oracle entry of every pending key.
    live: HashMap<W::Key, (u64, u64)>,
    /// Keys in insertion order, for picking one at random (removed ones are skipped).
    keys: Vec<W::Key>,
    /// Some keys of removed or fired timers.
    stale: Vec<W::Key>,
    /// The value stored with a rescheduled timer: its first sequence number.
    original: HashMap<W::Key, u64>,
    seq: u64,
    steps: u64,
}

impl<W: ModelWheel> Model<W> {
    fn new() -> Self {
        Model::with_wheel(W::default())
    }

    fn with_wheel(wheel: W) -> Self {
        Model {
            wheel,
            oracle: BTreeMap::new(),
            live: HashMap::new(),
            keys: Vec::new(),
            stale: Vec::new(),
            original: HashMap::new(),
            seq: 0,
            steps: 0,
        }
    }

    fn pick_live(&mut self, i: usize) -> Option<W::Key> {
        // Dead keys are dropped once they are half the list, so a pick costs O(1) amortized
        // in a large wheel: a few probes from `i`, then the first live key after it.
        if self.keys.len() > 2 * self.live.len() + 64 {
            self.keys.retain(|k| self.live.contains_key(k));
        }
        let len = self.keys.len();
        (0..len)
            .map(|j| self.keys[(i % len.max(1) + j) % len])
            .find(|k| self.live.contains_key(k))
    }

    fn retire(&mut self, key: W::Key) {
        if self.stale.len() < 64 {
            self.stale.push(key);
        } else {
            let i = (self.seq as usize) % self.stale.len();
            self.stale[i] = key;
        }
    }

    fn apply(&mut self, op: &Op) {
        let now = self.wheel.now();
        match *op {
            Op::Insert(d) => {
                let deadline = d.resolve(now);
                let key = self.wheel.insert(deadline, self.seq);
                assert!(
                    !self.live.contains_key(&key),
                    "a fresh key collides with a live one"
                );
                self.oracle.insert((deadline, self.seq), key);
                self.live.insert(key, (deadline, self.seq));
                self.keys.push(key);
                self.seq += 1;
            }
            Op::Remove(i) => {
                if let Some(key) = self.pick_live(i) {
                    let entry = self.live.remove(&key).unwrap();
                    self.oracle.remove(&entry);
                    let value = self.original.remove(&key).unwrap_or(entry.1);
                    assert_eq!(
                        self.wheel.remove(key),
                        Some(value),
                        "remove returns the value"
                    );
                    self.retire(key);
                }
            }
            Op::Reschedule(i, d) => {
                if let Some(key) = self.pick_live(i) {
                    let deadline = d.resolve(now);
                    let old = self.live[&key];
                    self.oracle.remove(&old);
                    assert!(self.wheel.reschedule(key, deadline));
                    let value = self.original.get(&key).copied().unwrap_or(old.1);
                    // A rescheduled timer counts as inserted now; it keeps its value.
                    self.oracle.insert((deadline, self.seq), key);
                    self.live.insert(key, (deadline, self.seq));
                    self.seq += 1;
                    assert_eq!(self.wheel.deadline(key), Some(deadline));
                    // The value does not change: remember it under the key.
                    self.original.insert(key, value);
                }
            }
            Op::Extend(i, by) => {
                if let Some(key) = self.pick_live(i).filter(|_| W::EXTENDS) {
                    let old = self.live[&key];
                    let deadline = old.0.saturating_add(by);
                    self.wheel.extend(key, deadline);
                    self.oracle.remove(&old);
                    self.oracle.insert((deadline, old.1), key);
                    self.live.insert(key, (deadline, old.1));
                }
            }
            Op::Stale(i) => {
                if !self.stale.is_empty() {
                    let key = self.stale[i % self.stale.len()];
                    assert!(!self.wheel.contains(key), "stale key {key:?} reported live");
                    assert_eq!(self.wheel.deadline(key), None);
                    assert!(!self.wheel.reschedule(key, now.saturating_add(1)));
                    assert_eq!(self.wheel.remove(key), None);
                }
            }
            Op::Poll(step) => self.poll(now.saturating_add(step)),
            Op::PollBack(step) => self.poll(now.saturating_sub(step)),
            Op::PollNext => {
                if let Some(next) = self.wheel.next_expiration() {
                    let cascades = self.wheel.cascades();
                    let len = self.wheel.len();
                    self.poll(next);
                    // Or, for a node whose owner moved it, placed it again for later.
                    let moved_on = W::EXTENDS
                        && self
                            .wheel
                            .next_expiration()
                            .is_none_or(|after| after > next);
                    assert!(
                        self.wheel.len() < len || self.wheel.cascades() > cascades || moved_on,
                        "polling at next_expiration {next} made no progress"
                    );
                }
            }
            Op::Drain(step) => {
                let target = now.saturating_add(step);
                loop {
                    let len = self.wheel.len();
                    self.poll(target);
                    if self.wheel.len() == len {
                        break;
                    }
                }
            }
            Op::Clear => {
                self.wheel.clear();
                self.original.clear();
                for key in std::mem::take(&mut self.live).into_keys() {
                    self.retire(key);
                }
                self.oracle.clear();
                assert_eq!(self.wheel.now(), now, "clear keeps the current tick");
            }
        }
        self.steps += 1;
        self.check();
    }

    fn poll(&mut self, target: u64) {
        let now_before = self.wheel.now();
        let effective = target.max(now_before);
        let expected = self
            .oracle
            .first_key_value()
            .filter(|((deadline, _), _)| *deadline <= effective)
            .map(|(&entry, &key)| (entry, key));
        let fired = self.wheel.poll(target);
        match (expected, fired) {
            (Some(((deadline, seq), key)), Some((fired_key, fired_deadline, value))) => {
                // Ties among moved timers fire in an order the oracle does not know.
                let (key, seq) = match self.live.get(&fired_key) {
                    Some(&(d, s)) if W::EXTENDS && d == deadline => (fired_key, s),
                    _ => (key, seq),
                };
                assert_eq!(
                    (fired_key, fired_deadline),
                    (key, deadline),
                    "poll({target}) fired the wrong timer (expected seq {seq})"
                );
                assert_eq!(
                    value,
                    self.original.remove(&key).unwrap_or(seq),
                    "fired value"
                );
                self.oracle.remove(&(deadline, seq));
                self.live.remove(&key);
                self.retire(key);
                assert!(self.wheel.now() >= now_before, "time went back");
                assert!(
                    self.wheel.now() <= effective,
                    "time went past the polled tick"
                );
                assert!(
                    deadline <= self.wheel.now().max(now_before),
                    "fired before its deadline"
                );
            }
            (None, None) => {
                assert_eq!(
                    self.wheel.now(),
                    effective,
                    "an idle poll moves now to the target"
                );
            }
            (expected, fired) => panic!(
                "poll({target}) at now {now_before}: expected {expected:?}, wheel gave {:?}",
                fired.map(|(k, d, _)| (k, d))
            ),
        }
    }

    fn check(&mut self) {
        // The full walk costs a step per timer: in a large wheel, often enough that every
        // structure a run builds is walked, at about 64 timers' cost a step.
        if self.steps % (self.oracle.len() as u64 / 64).max(1) == 0 {
            self.wheel.check_invariants();
        }
        assert_eq!(self.wheel.len(), self.oracle.len());
        assert_eq!(self.wheel.len() == 0, self.oracle.is_empty());
        let now = self.wheel.now();
        match (self.oracle.first_key_value(), self.wheel.next_expiration()) {
            (None, None) => {}
            (Some((&(earliest, _), _)), Some(next)) => {
                assert!(
                    next <= earliest,
                    "next_expiration {next} is after the earliest deadline {earliest}"
                );
                if !W::EXTENDS && (earliest <= now || (earliest ^ now) < 64) {
                    assert_eq!(
                        next, earliest,
                        "a level-0 or due deadline is reported exactly"
                    );
                }
                if earliest > now && !W::EXTENDS {
                    assert!(
                        next > now,
                        "nothing is due, so the next event is in the future"
                    );
                }
            }
            (oracle, wheel) => panic!("next_expiration {wheel:?} but oracle earliest {oracle:?}"),
        }
        // Spot-check a few live deadlines.
        for key in self.keys.iter().rev().take(4) {
            if let Some(&(deadline, _)) = self.live.get(key) {
                assert_eq!(self.wheel.deadline(*key), Some(deadline));
                assert!(self.wheel.contains(*key));
            }
        }
    }
}

/// A number below `2^bits` for a random `bits` in `range`: spreads values over magnitudes.
fn magnitude(rng: &mut SmallRng, range: std::ops::Range<u32>) -> u64 {
    let bits = rng.random_range(range);
    rng.random_range(0..1u64 << bits)
}

fn random_deadline(rng: &mut SmallRng) -> Deadline {
    match rng.random_range(0..100) {
        0..=39 => Deadline::Near(rng.random_range(0..200)),
        40..=49 => Deadline::Past(rng.random_range(0..100)),
        50..=64 => Deadline::Boundary(rng.random_range(0..=11), rng.random_range(-2..=2)),
        65..=74 => Deadline::SlotStart(rng.random_range(0..=10), rng.random_range(-1..=1)),
        75..=89 => Deadline::Near(magnitude(rng, 8..40)),
        90..=96 => Deadline::Anywhere(rng.random()),
        _ => Deadline::Max(rng.random_range(0..3)),
    }
}

fn random_op(rng: &mut SmallRng, live: usize, target_live: usize) -> Op {
    // Below half its target the wheel mostly grows: the jumps and drains below fire most of
    // what it holds, and would keep it from ever reaching its target.
    let insert_weight = if live < target_live / 2 {
        400
    } else if live < target_live {
        45
    } else {
        20
    };
    let roll = rng.random_range(0..100 + insert_weight);
    if roll >= 100 {
        return Op::Insert(random_deadline(rng));
    }
    match roll {
        0..=14 => Op::Remove(rng.random_range(0..usize::MAX)),
        15..=24 => Op::Reschedule(rng.random_range(0..usize::MAX), random_deadline(rng)),
        25..=29 => Op::Stale(rng.random_range(0..usize::MAX)),
        30..=59 => Op::Poll(rng.random_range(0..4)),
        60..=69 => Op::Poll(magnitude(rng, 6..24)),
        70..=73 => Op::Poll(1 << rng.random_range(24..48u32)),
        // Rarely a jump anywhere, often to the end of time (`run_random_with` then starts
        // over, as nothing but due timers is left to test there).
        74..=75 if rng.random_range(0..64) == 0 => Op::Poll(rng.random()),
        74..=75 => Op::Poll(magnitude(rng, 24..44)),
        76..=79 => Op::PollBack(rng.random_range(0..100)),
        80..=91 => Op::PollNext,
        // A drain fires every near timer: only once the wheel has grown, or it never would.
        92..=98 if live >= target_live / 2 => Op::Drain(magnitude(rng, 0..20)),
        92..=98 => Op::Poll(rng.random_range(0..4)),
        _ => {
            if rng.random_range(0..50) == 0 {
                Op::Clear
            } else {
                Op::Poll(0)
            }
        }
    }
}

/// `random_op`, with one step in six moving a live timer later without the wheel: mostly
/// by less than a level-1 slot, sometimes across levels.
fn random_extending_op(rng: &mut SmallRng, live: usize, target_live: usize) -> Op {
    if rng.random_range(0..6) == 0 {
        let by = match rng.random_range(0..4) {
            0 => magnitude(rng, 6..40),
            _ => rng.random_range(1..200),
        };
        return Op::Extend(rng.random_range(0..usize::MAX), by);
    }
    random_op(rng, live, target_live)
}

/// Total random steps: millions normally, a small configuration under Miri.
fn total_steps() -> u64 {
    if cfg!(miri) {
        return 240;
    }
    std::env::var("WHEEL_MODEL_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000_000)
}

fn run_random<W: ModelWheel>(total: u64) {
    run_random_on(total, W::default);
}

fn run_random_on<W: ModelWheel>(total: u64, make: impl Fn() -> W) {
    run_random_with(total, make, random_op);
}

fn run_random_with<W: ModelWheel>(
    total: u64,
    make: impl Fn() -> W,
    next_op: impl Fn(&mut SmallRng, usize, usize) -> Op,
) {
    let seeds = 8;
    for seed in 0..seeds {
        let mut rng = SmallRng::seed_from_u64(0xE5CA_9E00 + seed);
        let mut model = Model::with_wheel(make());
        // Some runs keep the wheel small, others let it grow to a few thousand timers.
        let sizes: &[usize] = if cfg!(miri) {
            &[8, 40]
        } else {
            &[8, 64, 500, 3_000]
        };
        let target_live = sizes[seed as usize % sizes.len()];
        let (mut steps, mut cascades, mut most_live) = (0, 0, 0);
        for _ in 0..total / seeds {
            let op = next_op(&mut rng, model.wheel.len(), target_live);
            model.apply(&op);
            most_live = most_live.max(model.wheel.len());
            // Near the end of time every deadline saturates and is due at once: start over
            // with a new wheel, or the rest of the run tests nothing else.
            if model.wheel.now() > u64::MAX - (1 << 44) {
                steps += model.steps;
                cascades += model.wheel.cascades();
                model = Model::with_wheel(make());
            }
        }
        steps += model.steps;
        cascades += model.wheel.cascades();
        assert_eq!(steps, total / seeds);
        // The run did what it is for: grew the wheel and moved timers between levels.
        if total / seeds >= 100_000 {
            assert!(
                most_live >= target_live / 2,
                "seed {seed}: at most {most_live} timers live, for a target of {target_live}"
            );
            assert!(
                cascades >= total / seeds / 100,
                "seed {seed}: only {cascades} cascades"
            );
        }
    }
}

#[test]
fn random_operations_match_the_oracle() {
    run_random::<Wheel<u64>>(total_steps());
}

/// A keyed wheel that defers every cancel it can (see "Deferred cancels" in `slab.rs`), as a
/// wheel of 65,536 timers or more does by default on x86-64.
fn deferring() -> Wheel<u64> {
    let mut wheel = Wheel::new();
    wheel.defer_cancels_from(0);
    wheel
}

#[test]
fn random_operations_with_deferred_cancels_match_the_oracle() {
    run_random_on(total_steps(), deferring);
}

#[test]
fn random_operations_on_intrusive_nodes_match_the_oracle() {
    // The intrusive wheel runs the same algorithm; a quarter of the steps checks its shell.
    run_random::<Intrusive<()>>(total_steps() / 4);
}

#[test]
fn random_operations_with_deadlines_moved_outside_the_wheel_match_the_oracle() {
    run_random_with(total_steps() / 4, Extending::default, random_extending_op);
}

fn deadline_strategy() -> impl Strategy<Value = Deadline> {
    prop_oneof![
        (0u64..200).prop_map(Deadline::Near),
        (0u64..100).prop_map(Deadline::Past),
        (0u32..=11, -2i8..=2).prop_map(|(l, d)| Deadline::Boundary(l, d)),
        (0u32..=10, -1i8..=1).prop_map(|(l, d)| Deadline::SlotStart(l, d)),
        any::<u64>().prop_map(Deadline::Anywhere),
        (0u8..3).prop_map(Deadline::Max),
    ]
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => deadline_strategy().prop_map(Op::Insert),
        2 => any::<usize>().prop_map(Op::Remove),
        1 => (any::<usize>(), deadline_strategy()).prop_map(|(i, d)| Op::Reschedule(i, d)),
        1 => any::<usize>().prop_map(Op::Stale),
        3 => prop_oneof![0u64..4, 0u64..5_000, any::<u64>()].prop_map(Op::Poll),
        1 => (0u64..100).prop_map(Op::PollBack),
        2 => Just(Op::PollNext),
        1 => prop_oneof![0u64..300, any::<u64>()].prop_map(Op::Drain),
        1 => Just(Op::Clear),
    ]
}

fn extending_op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => op_strategy(),
        1 => (any::<usize>(), prop_oneof![1u64..200, 0u64..1 << 30]).prop_map(|(i, by)| Op::Extend(i, by)),
    ]
}

fn max_ops() -> usize {
    if cfg!(miri) {
        30
    } else {
        200
    }
}

fn proptest_config() -> ProptestConfig {
    ProptestConfig {
        cases: if cfg!(miri) { 1 } else { 256 },
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(proptest_config())]

    #[test]
    fn any_operation_sequence_matches_the_oracle(ops in proptest::collection::vec(op_strategy(), 0..max_ops())) {
        let mut model = Model::<Wheel<u64>>::new();
        for op in &ops {
            model.apply(op);
        }
    }

    #[test]
    fn any_operation_sequence_with_deferred_cancels_matches_the_oracle(ops in proptest::collection::vec(op_strategy(), 0..max_ops())) {
        let mut model = Model::with_wheel(deferring());
        for op in &ops {
            model.apply(op);
        }
    }

    #[test]
    fn any_operation_sequence_with_deadlines_moved_outside_the_wheel_matches_the_oracle(ops in proptest::collection::vec(extending_op_strategy(), 0..max_ops())) {
        let mut model = Model::<Extending>::new();
        for op in &ops {
            model.apply(op);
        }
    }

    #[test]
    fn any_operation_sequence_on_intrusive_nodes_matches_the_oracle(ops in proptest::collection::vec(op_strategy(), 0..max_ops())) {
        let mut model = Model::<Intrusive<()>>::new();
        for op in &ops {
            model.apply(op);
        }
    }
}
