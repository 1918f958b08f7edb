//! `Instant` arithmetic: `Instant - Instant` saturates at zero, `checked_*` and
//! `duration_since` variants, `+`, `-`, `+=`, `-=` and their overflow panics, conversions to
//! and from `std::time::Instant`, and `Instant::now` reading the system clock outside a
//! runtime and the runtime's clock inside one.

mod support;

use std::time::Duration;

use escapement::time::Instant;

use support::far_from;

#[test]
fn subtracting_instants_saturates_at_zero() {
    let earlier = Instant::now();
    let later = earlier + Duration::from_millis(5);
    assert_eq!(later - earlier, Duration::from_millis(5));
    assert_eq!(earlier - later, Duration::ZERO);
    assert_eq!(earlier - earlier, Duration::ZERO);
}

#[test]
fn duration_since_variants() {
    let earlier = Instant::now();
    let later = earlier + Duration::from_nanos(1_500);
    assert_eq!(later.duration_since(earlier), Duration::from_nanos(1_500));
    assert_eq!(earlier.duration_since(later), Duration::ZERO);
    assert_eq!(
        later.checked_duration_since(earlier),
        Some(Duration::from_nanos(1_500))
    );
    assert_eq!(earlier.checked_duration_since(later), None);
    assert_eq!(
        later.saturating_duration_since(earlier),
        Duration::from_nanos(1_500)
    );
    assert_eq!(earlier.saturating_duration_since(later), Duration::ZERO);
}

#[test]
fn checked_add_and_sub() {
    let now = Instant::now();
    let later = now
        .checked_add(Duration::from_secs(1))
        .expect("representable");
    assert_eq!(later - now, Duration::from_secs(1));
    assert_eq!(later.checked_sub(Duration::from_secs(1)), Some(now));
    assert_eq!(now.checked_add(Duration::MAX), None);
    assert_eq!(now.checked_sub(Duration::MAX), None);
    assert_eq!(far_from(now).checked_add(Duration::from_nanos(1)), None);
}

#[test]
fn add_and_sub_assign() {
    let start = Instant::now();
    let mut at = start;
    at += Duration::from_millis(30);
    assert_eq!(at, start + Duration::from_millis(30));
    at -= Duration::from_millis(10);
    assert_eq!(at, start + Duration::from_millis(20));
    assert_eq!(at - Duration::from_millis(20), start);
    assert!(at > start);
    assert!(start < at);
}

#[test]
#[should_panic(expected = "overflow when adding duration to instant")]
fn adding_past_the_representable_range_panics() {
    let _ = Instant::now() + Duration::MAX;
}

#[test]
#[should_panic(expected = "overflow when adding duration to instant")]
fn add_assign_past_the_representable_range_panics() {
    let mut at = Instant::now();
    at += Duration::MAX;
}

#[test]
#[should_panic(expected = "overflow when subtracting duration from instant")]
fn subtracting_past_the_representable_range_panics() {
    let _ = Instant::now() - Duration::MAX;
}

#[test]
#[should_panic(expected = "overflow when subtracting duration from instant")]
fn sub_assign_past_the_representable_range_panics() {
    let mut at = Instant::now();
    at -= Duration::MAX;
}

#[test]
fn converts_to_and_from_std() {
    let std_now = std::time::Instant::now();
    let ours = Instant::from_std(std_now);
    assert_eq!(ours.into_std(), std_now);
    assert_eq!(Instant::from(std_now), ours);
    assert_eq!(std::time::Instant::from(ours), std_now);
    assert_eq!(format!("{ours:?}"), format!("{std_now:?}"));
}

#[test]
fn now_outside_a_runtime_is_the_system_clock() {
    let before = std::time::Instant::now();
    let now = Instant::now().into_std();
    let after = std::time::Instant::now();
    assert!(before <= now && now <= after);
    let start = Instant::now();
    std::thread::sleep(Duration::from_millis(2));
    assert!(start.elapsed() >= Duration::from_millis(2));
}

#[test]
fn now_inside_a_paused_runtime_reads_its_clock() {
    let rt = escapement::Builder::new()
        .worker_threads(1)
        .start_paused(true)
        .build()
        .expect("a paused runtime");
    let frozen = rt.block_on(async { Instant::now() });
    std::thread::sleep(Duration::from_millis(5));
    rt.block_on(async {
        assert_eq!(Instant::now(), frozen, "the paused clock does not run");
        assert_eq!(frozen.elapsed(), Duration::ZERO);
    });
    {
        let _guard = rt.enter();
        assert_eq!(Instant::now(), frozen, "under Handle::enter too");
    }
    assert!(Instant::now() > frozen, "outside, the system clock");
}

/// The message a panicking closure gave, as a string.
fn panic_message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    let payload = std::panic::catch_unwind(f).expect_err("the closure did not panic");
    match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(payload) => payload
            .downcast::<&str>()
            .map(|message| message.to_string())
            .expect("a string payload"),
    }
}

#[test]
fn overflow_panics_carry_the_messages_of_std_and_tokio() {
    // Tokio's `Instant` panics with std's messages, and a ported `should_panic` test expects
    // them.
    let std_add = panic_message(|| {
        let _ = std::time::Instant::now() + Duration::MAX;
    });
    let add = panic_message(|| {
        let _ = Instant::now() + Duration::MAX;
    });
    assert_eq!(add, std_add);
    let std_sub = panic_message(|| {
        let _ = std::time::Instant::now() - Duration::MAX;
    });
    let sub = panic_message(|| {
        let _ = Instant::now() - Duration::MAX;
    });
    assert_eq!(sub, std_sub);
}
