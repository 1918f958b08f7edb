#!/usr/bin/env bash
# Shows that the loom models bite: applies each mutant (a bug a model guards against) to the
# runtime, runs the model that catches it, expects loom to fail, and reverts the mutant.
# Prints one verdict line per mutant and exits non-zero if any mutant survives.
#
# Each mutant runs only the test that catches it, not its whole file: the files hold models
# of hundreds of thousands of interleavings, which would run once per mutant of the file.
#
#     loom-tests/mutants/check.sh          # every mutant
#     loom-tests/mutants/check.sh 1/3      # the mutants whose number is 1 modulo 3
#
# A share `I/N` takes the mutants numbered I modulo N; N runs, one per I, take each once. CI
# takes one third a run (`.ci/run` says which): the whole set is over half of a lane's time.
set -uo pipefail
cd "$(git rev-parse --show-toplevel)"

share="${1:-0/1}"
if ! [[ "$share" =~ ^([0-9]+)/([1-9][0-9]*)$ ]]; then
    echo "usage: $0 [I/N]" >&2
    exit 2
fi
share_index=${BASH_REMATCH[1]}
shares=${BASH_REMATCH[2]}
if [ "$share_index" -ge "$shares" ]; then
    echo "$0: share $share: I must be below N" >&2
    exit 2
fi

# mutant -> the model (test file in loom-tests/tests) and the test in it that must catch it
models=(
    "01-waker-registered-after-the-state-check timer_repoll fire_racing_a_repoll_with_a_new_waker_wakes_the_new_waker"
    "02-fired-published-relaxed timer_drop drop_on_another_thread_racing_fire"
    "03-deadline-extended-with-a-store timer_reset reset_later_racing_a_cascade"
    "04-park-without-checking-the-wheel register_park a_registration_racing_two_parks_in_a_row_is_never_lost"
    "05-registration-never-wakes-worker0 register_park a_registration_in_a_shard_already_looked_at_wakes_worker0"
    "06-drop-skips-the-lock-while-firing timer_drop drop_on_another_thread_racing_fire"
    "07-no-fence-before-the-sleepers-recheck scheduler_idle work_pushed_while_a_worker_goes_to_sleep_is_not_lost"
    "08-wake-while-running-forgotten task_wake a_wake_from_another_thread_while_running_is_neither_lost_nor_doubled"
    "09-stand-in-marks-worker0-awake overdue_handoff a_stand_in_that_fires_nothing_leaves_parked_worker0_wakeable"
    "10-blocking-spawn-never-notifies blocking_pool one_thread_runs_both_jobs_in_turn"
    "11-blocking-spawn-queues-after-the-shutdown blocking_pool a_spawn_racing_the_shutdown_runs_or_is_cancelled_once"
    "12-abort-handle-takes-no-reference join_handle abort_handle_racing_join_handle_drop_racing_completion"
    "13-park-releases-the-shards-it-looked-at register_park a_registration_in_a_shard_already_looked_at_wakes_worker0"
    "14-driver-reference-dropped-relaxed driver_ref a_thread_returns_its_credit_while_another_drops_a_timer_made_from_it"
    "15-credit-returned-relaxed driver_ref a_thread_returns_its_credit_while_another_drops_a_timer_made_from_it"
    "16-join-waker-swap-asserts-the-slot-still-set join_handle completion_racing_a_join_poll_with_a_new_waker"
    "17-stand-in-counts-on-worker0-being-woken overdue_handoff a_stand_in_does_not_count_on_worker0_it_just_woke"
    "18-park-finish-publishes-nothing overdue_handoff a_stand_in_does_not_count_on_worker0_it_just_woke"
    "19-auto-advance-checks-then-moves auto_advance the_clock_does_not_jump_under_a_thread_that_became_active"
    "20-fire-trusts-the-wheels-reading-of-the-deadline timer_reset reset_later_racing_a_cascade"
    "21-hand-off-counts-no-new-worker block_in_place a_queued_task_runs_once_whichever_thread_has_the_worker_and_shutdown_waits_for_both"
    "22-handed-off-thread-stays-in-the-loop block_in_place a_thread_that_handed_its_worker_off_counts_itself_idle_as_it_leaves"
    "23-spawn-now-waits-behind-the-cap blocking_pool a_job_given_now_runs_past_the_cap_beside_a_job_that_waits_for_it"
    "24-spawn-now-wakes-no-idle-thread blocking_pool a_job_given_now_wakes_the_thread_going_idle_or_starts_one"
    "25-take-back-keeps-the-new-workers-count block_in_place a_queued_task_runs_once_whichever_thread_has_the_worker_and_shutdown_waits_for_both"
    "26-taken-back-thread-leaves-the-loop block_in_place a_queued_task_runs_once_whichever_thread_has_the_worker_and_shutdown_waits_for_both"
    "27-shutdown-keeps-the-done-keys owned_tasks completions_filling_a_batch_racing_shutdown"
    "28-full-batch-left-in-the-slab owned_tasks completions_on_two_threads_fill_a_batch"
    "29-set-driver-registered-after-the-queue-check local_set a_wake_from_another_thread_reaches_the_driver"
    "30-dropped-set-leaves-its-queue-open local_set a_wake_racing_the_sets_drop_frees_the_task_once_on_its_thread"
    "31-awaited-set-registers-after-the-queue-check local_set a_wake_from_another_thread_reaches_a_caller_awaiting_the_set"
    "32-tick-rearms-a-timer-being-fired timer_repoll a_tick_racing_the_fire_leaves_the_timer_unarmed_without_a_waker"
    "33-unarmed-timer-keeps-its-waker timer_repoll a_tick_racing_the_fire_leaves_the_timer_unarmed_without_a_waker"
    "34-core-put-back-wakes-no-waiter current_thread a_worker_given_back_unparks_every_waiting_block_on"
    "35-driving-thread-misses-the-shutdown current_thread a_shutdown_cancels_the_tasks_of_a_block_on_that_has_the_worker"
    "36-auto-advance-ignores-a-pending-unpark current_thread a_paused_clock_does_not_jump_past_a_wake_that_came_while_the_thread_went_idle"
    "37-returning-block-on-counts-out-after-the-lock current_thread a_shutdown_that_does_not_wait_still_cancels_the_tasks_when_a_block_on_returns"
    "38-drop-skips-the-lock-while-closing shutdown shutdown_racing_an_earlier_reset_and_drop"
    "39-shutdown-wakes-under-the-lock waker_drops_timer a_waker_woken_by_shutdown_resets_a_timer_never_polled"
    "40-earlier-reset-never-wakes-worker0 register_park an_earlier_reset_wakes_worker0_sleeping_toward_the_old_deadline"
    "41-advance-counts-a-batch-after-the-lock auto_advance advance_waits_for_the_wakes_of_a_batch_another_thread_took"
    "42-blocking-thread-exits-before-the-queue-is-empty blocking_pool a_shutdown_behind_the_jobs_runs_each_once"
    "43-first-poll-registers-its-waker-after-the-link timer_repoll fire_racing_the_first_poll_wakes_its_waker"
    "44-blocking-threads-cancel-the-queue-at-shutdown blocking_pool a_shutdown_behind_the_jobs_runs_each_once"
    "45-watch-never-given-up overdue_handoff one_stand_in_at_a_time_is_the_watch"
    "46-every-stand-in-watches overdue_handoff one_stand_in_at_a_time_is_the_watch"
    "47-timed-out-park-hides-a-late-unpark scheduler_idle an_unpark_racing_a_park_that_timed_out_is_not_lost"
    "48-paused-park-trusts-a-lagging-wheel auto_advance a_due_timer_fires_while_auto_advance_is_held_back_and_the_wheel_lags"
    "49-register-gives-up-the-slot-before-emptying-it atomic_waker register_racing_two_takes_loses_no_wakeup"
    "50-register-during-a-take-wakes-nothing atomic_waker register_racing_two_takes_loses_no_wakeup"
    "51-dropped-handle-empties-the-slot-the-task-holds join_handle completion_racing_the_drop_of_a_polled_join_handle"
    "52-park-clears-a-second-token-unread scheduler_idle two_unparks_racing_a_park_lose_no_work"
    "53-last-reference-dropped-without-acquire owned_tasks completions_filling_a_batch_racing_shutdown"
    "54-dropped-count-joins-any-shard-of-the-driver driver_ref a_timer_from_one_shard_dropped_on_a_thread_in_another"
    "55-last-searcher-wakes-no-one scheduler_idle the_last_searcher_to_find_work_wakes_a_sleeper_for_the_rest"
    "56-firing-behind-the-wheel-keeps-its-old-reading overdue_handoff a_thread_behind_the_wheel_fires_up_to_the_wheels_tick"
    "57-worker-given-back-unparks-one-waiter current_thread a_worker_given_back_unparks_every_waiting_block_on"
    "58-shutdown-forgets-the-exiting-threads blocking_pool the_shutdown_waits_for_a_thread_still_exiting"
    "59-reset-into-the-past-wakes-under-the-lock waker_drops_timer a_reset_into_the_past_wakes_after_the_lock"
    "60-unpark-counts-the-thread-after-its-token auto_advance a_thread_woken_from_outside_is_counted_before_it_runs"
    "61-last-exit-wakes-no-pool-thread-waiting blocking_pool a_shutdown_on_a_pool_thread_is_woken_by_the_last_other_thread"
    "62-is-elapsed-ignores-a-fire-in-progress timer_repoll a_timer_polled_ready_is_elapsed_while_the_fire_finishes"
    "63-firing-checks-the-shutdown-only-once shutdown shutdown_racing_worker0_firing_in_batches"
    "64-reset-checks-the-shutdown-before-unlinking shutdown shutdown_racing_an_earlier_reset_and_drop"
    "65-is-elapsed-counts-a-closing-timer-as-fired shutdown a_timer_shut_down_before_its_deadline_is_never_elapsed"
    "66-closure-counted-out-after-the-take-back block_in_place a_worker_taken_back_during_a_shutdown_is_waited_for_before_the_timers_stop"
    "67-handed-off-thread-leaves-still-active block_in_place a_thread_that_handed_its_worker_off_counts_itself_idle_as_it_leaves"
    "68-now-job-counted-against-the-cap-as-it-starts blocking_pool a_job_queued_while_a_job_given_now_runs_gets_a_thread_of_its_own"
    "69-spawn-now-counts-a-woken-thread-idle blocking_pool a_second_job_given_now_does_not_count_on_a_thread_woken_for_the_first"
    "70-wake-by-ref-requeues-a-queued-task task_wake two_wakes_by_ref_of_an_idle_task_queue_it_once"
    "71-idle-abort-submits-without-a-reference join_handle abort_racing_a_task_going_idle"
    "72-join-set-wakes-before-queueing-the-key runtime join_set_task_finishing_on_the_worker_wakes_join_next"
    "73-join-set-registers-after-reading-the-queue runtime join_set_task_finishing_on_the_worker_wakes_join_next"
    "74-local-push-wakes-no-idle-worker runtime a_task_spawned_by_a_blocked_worker_is_stolen_by_the_other"
    "75-search-ended-after-the-poll runtime a_task_spawned_by_a_blocked_worker_is_stolen_by_the_other"
    "76-held-tasks-not-queued-when-the-worker-runs-dry runtime a_task_that_yields_on_the_only_worker_runs_again"
    "77-held-tasks-stay-behind-at-the-hand-off block_in_place a_task_held_back_after_a_yield_travels_with_the_worker"
    "78-held-tasks-never-stolen runtime a_task_held_back_by_a_blocked_worker_is_taken_by_the_other"
    "79-held-tasks-not-counted-as-work runtime a_task_held_back_while_the_other_worker_goes_to_sleep_is_counted_as_work"
    "80-injector-batch-wakes-no-one runtime a_batch_taken_from_the_injector_by_a_worker_not_searching_wakes_the_other"
    "81-work-left-to-searchers-that-are-not-there runtime a_task_held_back_while_the_other_worker_goes_to_sleep_is_counted_as_work"
    "82-searchers-counted-before-the-announcement scheduler_idle a_worker_that_leaves_work_to_a_searcher_is_woken_for_it"
    "83-look-that-found-work-ends-the-sleep-not-searching scheduler_idle a_worker_whose_look_finds_work_comes_back_searching"
    "84-lifo-slot-never-stolen runtime a_task_spawned_by_a_blocked_worker_is_stolen_by_the_other"
    "85-lifo-slot-not-counted-as-work runtime a_task_in_the_slot_while_the_other_worker_goes_to_sleep_is_counted_as_work"
    "86-lifo-slot-put-publishes-nothing lifo_slot a_task_in_the_slot_runs_once_whichever_thread_takes_it"
    "87-lifo-slot-take-acquires-nothing lifo_slot a_task_in_the_slot_runs_once_whichever_thread_takes_it"
    "88-lifo-slot-take-is-a-load-and-a-store lifo_slot a_task_in_the_slot_runs_once_whichever_thread_takes_it"
    "89-reregister-ignores-the-shutdown shutdown shutdown_racing_a_later_reset_and_a_poll"
    "90-a-waiting-batch-loses-its-last-key owned_tasks a_batch_due_while_another_is_freed_leaves_with_the_next_completion"
    "91-a-late-batch-frees-only-its-first-keys owned_tasks a_batch_due_while_another_is_freed_leaves_with_the_next_completion"
    "92-lifo-slot-take-releases-nothing runtime a_task_held_back_while_the_other_worker_goes_to_sleep_is_counted_as_work"
    "93-set-looks-at-its-queue-before-the-future-spawns local_set a_task_spawned_in_the_sets_turn_runs_while_a_wake_from_another_thread_races"
    "94-join-waker-unset-after-completion-acquires-nothing join_handle completion_racing_the_drop_of_a_join_handle_polled_twice_with_one_waker"
    "95-reset-reads-fired-relaxed timer_repoll a_timer_disarmed_by_a_tick_is_freed_after_the_fires_last_access"
    "96-injector-push-reads-the-shutdown-unfenced runtime a_spawn_from_outside_racing_the_shutdown_leaves_nothing_in_the_injector"
    "97-work-left-to-searchers-unfenced scheduler_idle a_searcher_that_goes_to_sleep_sees_the_work_left_to_it"
    "98-wake-holds-the-clock-only-to-queue auto_advance a_task_woken_from_outside_sees_its_sleep_complete_on_time"
    "99-abort-takes-no-hold-on-the-clock auto_advance a_task_aborted_from_outside_is_dropped_before_its_sleep_is_due"
)

export RUSTFLAGS="--cfg loom -C debug-assertions"
# Incremental builds: a mutant changes a few lines of one crate, and an incremental build
# recompiles only the code units it touched. A mutant then takes about three and a half seconds
# on two cores (the runtime, the model's test crate, and the run), the first one ten.
export CARGO_INCREMENTAL=1
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}"
survivors=0
log=$(mktemp)
taken=0
for entry in "${models[@]}"; do
    read -r mutant model test <<<"$entry"
    if [ $((10#${mutant%%-*} % shares)) -ne "$share_index" ]; then
        continue
    fi
    taken=$((taken + 1))
    patch="loom-tests/mutants/$mutant.patch"
    git apply "$patch" || { echo "$mutant: patch does not apply"; survivors=$((survivors + 1)); continue; }
    if cargo test -q -p escapement-loom-tests --profile loom --target-dir target/loom --test "$model" \
        -- --exact "$test" >"$log" 2>&1; then
        echo "$mutant: NOT caught by $model::$test"
        survivors=$((survivors + 1))
    else
        # A model's failure is an assertion, a deadlock or a causality violation, whose message
        # follows the line that places the panic; a model may catch panics of its own before
        # it (a timer polled after its runtime shut down panics, and some models expect that).
        # Without one of those, the first panic is the runtime's own check.
        failure=$(grep -n -m1 -E "^(assertion|deadlock|Causality violation)" "$log" | cut -d: -f1)
        if [ -n "$failure" ] && [ "$failure" -gt 1 ]; then
            reason=$(sed -n "$((failure - 1)),${failure}p" "$log" | tr '\n' ' ' | cut -c1-220)
        else
            reason=$(grep -m1 "panicked at" "$log" -A1 | tr '\n' ' ' | cut -c1-220)
        fi
        echo "$mutant: caught by $model::$test: $reason"
    fi
    git apply -R "$patch"
done
rm -f "$log"
echo "$taken of ${#models[@]} mutants run (share $share), $survivors not caught"
exit "$survivors"
