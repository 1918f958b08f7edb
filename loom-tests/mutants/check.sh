#!/usr/bin/env bash
# Shows that the loom models bite: applies each mutant (a bug a model guards against) to the
# runtime, runs that model, expects loom to fail, and reverts the mutant. Prints one verdict
# line per mutant and exits non-zero if any mutant survives.
#
#     loom-tests/mutants/check.sh
set -uo pipefail
cd "$(git rev-parse --show-toplevel)"

# mutant -> the model (test file in loom-tests/tests) that must catch it
models=(
    "01-waker-registered-after-the-state-check timer_repoll"
    "02-fired-published-relaxed timer_drop"
    "03-deadline-extended-with-a-store timer_reset"
    "04-park-without-checking-the-wheel register_park"
    "05-registration-never-wakes-worker0 register_park"
    "06-drop-skips-the-lock-while-firing timer_drop"
    "07-no-fence-before-the-sleepers-recheck scheduler_idle"
    "08-wake-while-running-forgotten task_wake"
    "09-stand-in-marks-worker0-awake overdue_handoff"
    "10-blocking-spawn-never-notifies blocking_pool"
    "11-blocking-spawn-queues-after-the-shutdown blocking_pool"
    "12-abort-handle-takes-no-reference join_handle"
    "13-park-releases-the-shards-it-looked-at register_park"
    "14-driver-reference-dropped-relaxed driver_ref"
    "15-credit-returned-relaxed driver_ref"
    "16-join-waker-swap-asserts-the-slot-still-set join_handle"
    "17-stand-in-counts-on-worker0-being-woken overdue_handoff"
    "18-park-finish-publishes-nothing overdue_handoff"
    "19-auto-advance-checks-then-moves auto_advance"
    "20-fire-trusts-the-wheels-reading-of-the-deadline timer_reset"
    "21-hand-off-counts-no-new-worker block_in_place"
    "22-handed-off-thread-stays-in-the-loop block_in_place"
    "23-spawn-now-waits-behind-the-cap blocking_pool"
    "24-spawn-now-wakes-no-idle-thread blocking_pool"
    "25-take-back-keeps-the-new-workers-count block_in_place"
    "26-taken-back-thread-leaves-the-loop block_in_place"
    "27-shutdown-keeps-the-done-keys owned_tasks"
    "28-full-batch-left-in-the-slab owned_tasks"
    "29-set-driver-registered-after-the-queue-check local_set"
    "30-dropped-set-leaves-its-queue-open local_set"
    "31-awaited-set-registers-after-the-queue-check local_set"
    "32-tick-rearms-a-timer-being-fired timer_repoll"
    "33-unarmed-timer-keeps-its-waker timer_repoll"
    "34-core-put-back-wakes-no-waiter current_thread"
    "35-driving-thread-misses-the-shutdown current_thread"
    "36-auto-advance-ignores-a-pending-unpark current_thread"
    "37-returning-block-on-counts-out-after-the-lock current_thread"
    "38-drop-skips-the-lock-while-closing shutdown"
    "39-shutdown-wakes-under-the-lock waker_drops_timer"
    "40-earlier-reset-never-wakes-worker0 register_park"
    "41-advance-counts-a-batch-after-the-lock auto_advance"
    "42-blocking-thread-exits-before-the-queue-is-empty blocking_pool"
    "43-first-poll-registers-its-waker-after-the-link timer_repoll"
    "44-blocking-threads-cancel-the-queue-at-shutdown blocking_pool"
    "45-watch-never-given-up overdue_handoff"
    "46-every-stand-in-watches overdue_handoff"
    "47-timed-out-park-hides-a-late-unpark scheduler_idle"
    "48-paused-park-trusts-a-lagging-wheel auto_advance"
    "49-register-gives-up-the-slot-before-emptying-it atomic_waker"
    "50-register-during-a-take-wakes-nothing atomic_waker"
    "51-dropped-handle-empties-the-slot-the-task-holds join_handle"
    "52-park-clears-a-second-token-unread scheduler_idle"
    "53-last-reference-dropped-without-acquire owned_tasks"
    "54-dropped-count-joins-any-shard-of-the-driver driver_ref"
    "55-last-searcher-wakes-no-one scheduler_idle"
    "56-firing-behind-the-wheel-keeps-its-old-reading overdue_handoff"
    "57-worker-given-back-unparks-one-waiter current_thread"
    "58-shutdown-forgets-the-exiting-threads blocking_pool"
    "59-reset-into-the-past-wakes-under-the-lock waker_drops_timer"
    "60-unpark-counts-the-thread-after-its-token auto_advance"
    "61-last-exit-wakes-no-pool-thread-waiting blocking_pool"
    "62-is-elapsed-ignores-a-fire-in-progress timer_repoll"
    "63-firing-checks-the-shutdown-only-once shutdown"
    "64-reset-checks-the-shutdown-before-unlinking shutdown"
    "65-is-elapsed-counts-a-closing-timer-as-fired shutdown"
    "66-closure-counted-out-after-the-take-back block_in_place"
    "67-handed-off-thread-leaves-still-active block_in_place"
    "68-now-job-counted-against-the-cap-as-it-starts blocking_pool"
    "69-spawn-now-counts-a-woken-thread-idle blocking_pool"
)

export RUSTFLAGS="--cfg loom -C debug-assertions"
# Incremental builds: a mutant changes a few lines of one crate, and an incremental release
# build recompiles only the code units it touched, about a second and a half a mutant where a
# full build of the crate takes eight.
export CARGO_INCREMENTAL=1
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}"
survivors=0
log=$(mktemp)
for entry in "${models[@]}"; do
    read -r mutant model <<<"$entry"
    patch="loom-tests/mutants/$mutant.patch"
    git apply "$patch" || { echo "$mutant: patch does not apply"; survivors=$((survivors + 1)); continue; }
    if cargo test -q -p escapement-loom-tests --release --target-dir target/loom --test "$model" >"$log" 2>&1; then
        echo "$mutant: NOT caught by $model"
        survivors=$((survivors + 1))
    else
        reason=$(grep -m1 -E "panicked at|deadlock|Causality violation|assertion" "$log" -A1 | tr '\n' ' ' | cut -c1-220)
        echo "$mutant: caught by $model: $reason"
    fi
    git apply -R "$patch"
done
rm -f "$log"
exit "$survivors"
