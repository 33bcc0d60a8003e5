// One test per golden vector case, each replaying its case from the
// committed file on the in-memory store. Written by `cargo run -p
// echomq-core --example vectors` with the files; never edit it by hand.

mod enqueue {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("enqueue", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("enqueue", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("enqueue", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("enqueue", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("enqueue", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("enqueue", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("enqueue", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("enqueue", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("enqueue", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("enqueue", "KEYS[6] holds a string");
    }

    #[test]
    fn keys_7_holds_a_string() {
        replay("enqueue", "KEYS[7] holds a string");
    }

    #[test]
    fn keys_8_holds_a_string() {
        replay("enqueue", "KEYS[8] holds a string");
    }

    #[test]
    fn keys_9_holds_a_string() {
        replay("enqueue", "KEYS[9] holds a string");
    }

    #[test]
    fn keys_10_holds_a_string() {
        replay("enqueue", "KEYS[10] holds a string");
    }

    #[test]
    fn keys_11_holds_a_string() {
        replay("enqueue", "KEYS[11] holds a string");
    }

    #[test]
    fn keys_12_holds_a_string() {
        replay("enqueue", "KEYS[12] holds a string");
    }

    #[test]
    fn keys_13_holds_a_string() {
        replay("enqueue", "KEYS[13] holds a string");
    }

    #[test]
    fn a_plain_job_all_eleven_keys() {
        replay("enqueue", "a plain job, all eleven keys");
    }

    #[test]
    fn the_seed_s_two_key_form() {
        replay("enqueue", "the seed's two-key form");
    }

    #[test]
    fn two_keys_a_duplicate_answers_0() {
        replay("enqueue", "two keys, a duplicate answers 0");
    }

    #[test]
    fn a_duplicate_answers_0_and_changes_nothing() {
        replay("enqueue", "a duplicate answers 0 and changes nothing");
    }

    #[test]
    fn an_empty_payload() {
        replay("enqueue", "an empty payload");
    }

    #[test]
    fn a_payload_of_bytes_that_are_not_utf_8() {
        replay("enqueue", "a payload of bytes that are not UTF-8");
    }

    #[test]
    fn priority_5_is_scored_and_kept() {
        replay("enqueue", "PRIORITY 5 is scored and kept");
    }

    #[test]
    fn priority_3() {
        replay("enqueue", "PRIORITY -3");
    }

    #[test]
    fn priority_0_is_kept_nowhere() {
        replay("enqueue", "PRIORITY 0 is kept nowhere");
    }

    #[test]
    fn priority_007_is_kept_as_7() {
        replay("enqueue", "PRIORITY 007 is kept as 7");
    }

    #[test]
    fn delay_5000_makes_it_delayed() {
        replay("enqueue", "DELAY 5000 makes it delayed");
    }

    #[test]
    fn delay_0_is_pending() {
        replay("enqueue", "DELAY 0 is pending");
    }

    #[test]
    fn at_a_time_ahead_makes_it_delayed() {
        replay("enqueue", "AT a time ahead makes it delayed");
    }

    #[test]
    fn at_a_time_past_is_pending() {
        replay("enqueue", "AT a time past is pending");
    }

    #[test]
    fn a_policy_of_its_own() {
        replay("enqueue", "a policy of its own");
    }

    #[test]
    fn backoff_alone() {
        replay("enqueue", "BACKOFF alone");
    }

    #[test]
    fn unique_holds_the_key() {
        replay("enqueue", "UNIQUE holds the key");
    }

    #[test]
    fn unique_held_answers_the_holder() {
        replay("enqueue", "UNIQUE held answers the holder");
    }

    #[test]
    fn unique_past_its_hold_is_free_again() {
        replay("enqueue", "UNIQUE past its hold is free again");
    }

    #[test]
    fn unique_done_1_frees_the_key_when_its_job_is_done() {
        replay("enqueue", "UNIQUE_DONE 1 frees the key when its job is done");
    }

    #[test]
    fn unique_done_1_holds_while_its_job_is_pending() {
        replay("enqueue", "UNIQUE_DONE 1 holds while its job is pending");
    }

    #[test]
    fn a_unique_value_not_of_its_shape_is_refused_as_malformed() {
        replay("enqueue", "a unique value not of its shape is refused as malformed");
    }

    #[test]
    fn headers_are_kept_beside_the_record() {
        replay("enqueue", "HEADERS are kept beside the record");
    }

    #[test]
    fn no_event_when_the_log_is_off() {
        replay("enqueue", "no event when the log is off");
    }

    #[test]
    fn the_id_s_kind_xyz() {
        replay("enqueue", "the id's kind: XYZ");
    }

    #[test]
    fn the_id_s_kind_an_empty_id() {
        replay("enqueue", "the id's kind: an empty id");
    }

    #[test]
    fn the_payload_missing() {
        replay("enqueue", "the payload missing");
    }

    #[test]
    fn no_arguments() {
        replay("enqueue", "no arguments");
    }

    #[test]
    fn the_payload_over_its_limit() {
        replay("enqueue", "the payload over its limit");
    }

    #[test]
    fn an_unknown_option() {
        replay("enqueue", "an unknown option");
    }

    #[test]
    fn an_option_without_its_value() {
        replay("enqueue", "an option without its value");
    }

    #[test]
    fn priority_not_an_integer() {
        replay("enqueue", "PRIORITY not an integer");
    }

    #[test]
    fn priority_out_of_range() {
        replay("enqueue", "PRIORITY out of range");
    }

    #[test]
    fn priority_given_twice() {
        replay("enqueue", "PRIORITY given twice");
    }

    #[test]
    fn delay_with_at() {
        replay("enqueue", "DELAY with AT");
    }

    #[test]
    fn delay_negative() {
        replay("enqueue", "DELAY negative");
    }

    #[test]
    fn backoff_with_backoff_exp() {
        replay("enqueue", "BACKOFF with BACKOFF_EXP");
    }

    #[test]
    fn timeout_0() {
        replay("enqueue", "TIMEOUT 0");
    }

    #[test]
    fn unique_without_unique_for() {
        replay("enqueue", "UNIQUE without UNIQUE_FOR");
    }

    #[test]
    fn unique_for_without_unique() {
        replay("enqueue", "UNIQUE_FOR without UNIQUE");
    }

    #[test]
    fn unique_of_no_bytes() {
        replay("enqueue", "UNIQUE of no bytes");
    }

    #[test]
    fn headers_of_no_bytes() {
        replay("enqueue", "HEADERS of no bytes");
    }

    #[test]
    fn priority_5_in_the_two_key_form() {
        replay("enqueue", "PRIORITY 5 in the two-key form");
    }

    #[test]
    fn the_record_a_string() {
        replay("enqueue", "the record a string");
    }

    #[test]
    fn a_delayed_job_with_delayed_a_string() {
        replay("enqueue", "a delayed job with delayed a string");
    }

    #[test]
    fn unique_whose_holder_s_record_is_a_string() {
        replay("enqueue", "UNIQUE whose holder's record is a string");
    }

    #[test]
    fn enqueue_a_child_linked_to_its_parent() {
        replay("enqueue", "enqueue: a child, linked to its parent");
    }

    #[test]
    fn enqueue_parent_with_unique() {
        replay("enqueue", "enqueue: PARENT with UNIQUE");
    }

    #[test]
    fn enqueue_parent_without_the_parents_key() {
        replay("enqueue", "enqueue: PARENT without the parents key");
    }

    #[test]
    fn enqueue_a_job_in_a_group() {
        replay("enqueue", "enqueue: a job in a group");
    }

    #[test]
    fn enqueue_a_job_in_a_group_with_a_priority() {
        replay("enqueue", "enqueue: a job in a group, with a priority");
    }

    #[test]
    fn enqueue_a_delayed_job_in_a_group_is_only_a_member() {
        replay("enqueue", "enqueue: a delayed job in a group is only a member");
    }

    #[test]
    fn enqueue_a_group_at_its_most() {
        replay("enqueue", "enqueue: a group at its most");
    }

    #[test]
    fn enqueue_a_group_s_name_empty() {
        replay("enqueue", "enqueue: a group's name empty");
    }

    #[test]
    fn enqueue_group_twice() {
        replay("enqueue", "enqueue: GROUP twice");
    }

    #[test]
    fn enqueue_a_group_s_membership_of_another_type() {
        replay("enqueue", "enqueue: a group's membership of another type");
    }

    #[test]
    fn enqueue_with_empty_headers() {
        replay("enqueue", "enqueue with empty headers");
    }

    #[test]
    fn enqueue_with_headers_and_no_headers_key() {
        replay("enqueue", "enqueue with headers and no headers key");
    }

    #[test]
    fn enqueue_with_headers_into_a_headers_key_that_is_a_list() {
        replay("enqueue", "enqueue with headers into a headers key that is a list");
    }

    #[test]
    fn enqueue_into_an_event_log_that_is_a_string() {
        replay("enqueue", "enqueue into an event log that is a string");
    }

    #[test]
    fn enqueue_onto_a_string() {
        replay("enqueue", "enqueue onto a string");
    }

    #[test]
    fn enqueue_with_a_unique_key_and_the_seed_s_two_keys() {
        replay("enqueue", "enqueue with a unique key and the seed's two keys");
    }

    #[test]
    fn enqueue_with_a_unique_key_and_no_hold() {
        replay("enqueue", "enqueue with a unique key and no hold");
    }

    #[test]
    fn enqueue_with_a_hold_and_no_unique_key() {
        replay("enqueue", "enqueue with a hold and no unique key");
    }

    #[test]
    fn enqueue_with_a_hold_of_0() {
        replay("enqueue", "enqueue with a hold of 0");
    }

    #[test]
    fn enqueue_with_a_unique_key_into_holds_that_are_a_hash() {
        replay("enqueue", "enqueue with a unique key into holds that are a hash");
    }

    #[test]
    fn enqueue_with_a_unique_key_held_by_a_job_whose_record_is_a_string() {
        replay("enqueue", "enqueue with a unique key held by a job whose record is a string");
    }

    #[test]
    fn enqueue_with_a_policy_and_the_seed_s_two_keys() {
        replay("enqueue", "enqueue with a policy and the seed's two keys");
    }

    #[test]
    fn enqueue_with_a_fixed_and_an_exponential_back_off() {
        replay("enqueue", "enqueue with a fixed and an exponential back-off");
    }

    #[test]
    fn enqueue_with_a_policy_into_a_policy_that_is_a_string() {
        replay("enqueue", "enqueue with a policy into a policy that is a string");
    }

    #[test]
    fn enqueue_with_an_events_setting_of_1_5_writes_no_job() {
        replay("enqueue", "enqueue with an events setting of 1.5 writes no job");
    }

    #[test]
    fn enqueue_with_a_unique_value_of_2_job_h() {
        replay("enqueue", "enqueue with a unique value of 2:JOB_H");
    }

    #[test]
    fn enqueue_with_a_unique_value_whose_id_is_no_job_id() {
        replay("enqueue", "enqueue with a unique value whose id is no job id");
    }

    #[test]
    fn enqueue_with_a_unique_value_whose_id_is_no_job_id_its_hold_ended() {
        replay("enqueue", "enqueue with a unique value whose id is no job id, its hold ended");
    }

    #[test]
    fn enqueue_whose_unique_holder_has_a_state_that_is_not_a_state() {
        replay("enqueue", "enqueue whose unique holder has a state that is not a state");
    }

    #[test]
    fn enqueue_of_a_held_unique_key_into_events_of_the_wrong_type() {
        replay("enqueue", "enqueue of a held unique key into events of the wrong type");
    }

    #[test]
    fn enqueue_into_a_queue_of_protocol_2_0() {
        replay("enqueue", "enqueue into a queue of protocol 2.0");
    }

    #[test]
    fn enqueue_into_a_queue_whose_protocol_is_1() {
        replay("enqueue", "enqueue into a queue whose protocol is 1");
    }

    #[test]
    fn enqueue_whose_unique_key_it_holds_without_attempts() {
        replay("enqueue", "enqueue whose unique key it holds without attempts");
    }

    #[test]
    fn enqueue_whose_unique_key_it_holds_without_state() {
        replay("enqueue", "enqueue whose unique key it holds without state");
    }

    #[test]
    fn enqueue_whose_unique_key_it_holds_with_only_a_payload() {
        replay("enqueue", "enqueue whose unique key it holds with only a payload");
    }

    #[test]
    fn enqueue_whose_unique_key_it_holds_with_a_state_none_of_the_six() {
        replay("enqueue", "enqueue whose unique key it holds with a state none of the six");
    }
}

mod enqueuemany {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("enqueuemany", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("enqueuemany", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("enqueuemany", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("enqueuemany", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("enqueuemany", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("enqueuemany", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("enqueuemany", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("enqueuemany", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("enqueuemany", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("enqueuemany", "KEYS[6] holds a string");
    }

    #[test]
    fn many_three_jobs() {
        replay("enqueuemany", "many: three jobs");
    }

    #[test]
    fn many_a_duplicate_among_them_answers_0() {
        replay("enqueuemany", "many: a duplicate among them answers 0");
    }

    #[test]
    fn many_a_job_named_twice_is_enqueued_once() {
        replay("enqueuemany", "many: a job named twice is enqueued once");
    }

    #[test]
    fn many_no_jobs() {
        replay("enqueuemany", "many: no jobs");
    }

    #[test]
    fn many_a_bad_id_refuses_them_all() {
        replay("enqueuemany", "many: a bad id refuses them all");
    }

    #[test]
    fn many_a_payload_missing() {
        replay("enqueuemany", "many: a payload missing");
    }

    #[test]
    fn many_a_record_a_string_refuses_them_all() {
        replay("enqueuemany", "many: a record a string refuses them all");
    }

    #[test]
    fn enqueuemany_children_linked_to_their_parent() {
        replay("enqueuemany", "enqueuemany: children, linked to their parent");
    }

    #[test]
    fn enqueuemany_a_parent_that_is_no_link() {
        replay("enqueuemany", "enqueuemany: a PARENT that is no link");
    }

    #[test]
    fn enqueuemany_parent_without_the_sixth_key_is_no_id() {
        replay("enqueuemany", "enqueuemany: PARENT without the sixth key is no id");
    }

    #[test]
    fn enqueuemany_a_group_s_jobs() {
        replay("enqueuemany", "enqueuemany: a group's jobs");
    }

    #[test]
    fn enqueuemany_past_a_group_s_most() {
        replay("enqueuemany", "enqueuemany: past a group's most");
    }

    #[test]
    fn enqueuemany_with_three_keys() {
        replay("enqueuemany", "enqueuemany with three keys");
    }

    #[test]
    fn enqueuemany_whose_second_job_has_no_payload_enqueues_neither() {
        replay("enqueuemany", "enqueuemany whose second job has no payload enqueues neither");
    }

    #[test]
    fn enqueuemany_whose_second_job_is_not_a_job_id_enqueues_neither() {
        replay("enqueuemany", "enqueuemany whose second job is not a job id enqueues neither");
    }

    #[test]
    fn enqueuemany_whose_second_job_s_record_is_a_string_enqueues_neither() {
        replay("enqueuemany", "enqueuemany whose second job's record is a string enqueues neither");
    }

    #[test]
    fn enqueuemany_into_a_wake_up_key_that_is_a_list() {
        replay("enqueuemany", "enqueuemany into a wake-up key that is a list");
    }

    #[test]
    fn enqueuemany_with_another_queue_s_event_log() {
        replay("enqueuemany", "enqueuemany with another queue's event log");
    }
}

mod claim {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("claim", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("claim", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("claim", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("claim", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("claim", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("claim", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("claim", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("claim", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("claim", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("claim", "KEYS[6] holds a string");
    }

    #[test]
    fn keys_7_holds_a_string() {
        replay("claim", "KEYS[7] holds a string");
    }

    #[test]
    fn keys_8_holds_a_string() {
        replay("claim", "KEYS[8] holds a string");
    }

    #[test]
    fn claim_one_job() {
        replay("claim", "claim: one job");
    }

    #[test]
    fn claim_nothing_pending_answers() {
        replay("claim", "claim: nothing pending answers []");
    }

    #[test]
    fn claim_count_2_of_three_in_pending_order() {
        replay("claim", "claim: COUNT 2 of three, in pending order");
    }

    #[test]
    fn claim_the_lease_argument_alone() {
        replay("claim", "claim: the lease argument alone");
    }

    #[test]
    fn claim_a_higher_priority_comes_first() {
        replay("claim", "claim: a higher priority comes first");
    }

    #[test]
    fn claim_a_second_attempt_s_token_is_2() {
        replay("claim", "claim: a second attempt's token is 2");
    }

    #[test]
    fn claim_a_policy_is_handed_out() {
        replay("claim", "claim: a policy is handed out");
    }

    #[test]
    fn claim_headers_are_handed_out() {
        replay("claim", "claim: headers are handed out");
    }

    #[test]
    fn claim_paused_answers_1() {
        replay("claim", "claim: paused answers [-1]");
    }

    #[test]
    fn claim_paused_and_empty_answers_1() {
        replay("claim", "claim: paused and empty answers [-1]");
    }

    #[test]
    fn claim_concurrency_1_held_back_the_rest() {
        replay("claim", "claim: concurrency 1 held back the rest");
    }

    #[test]
    fn claim_concurrency_full_answers_0() {
        replay("claim", "claim: concurrency full answers [0]");
    }

    #[test]
    fn claim_a_rate_logs_each_claim() {
        replay("claim", "claim: a rate logs each claim");
    }

    #[test]
    fn claim_a_full_rate_window_answers_the_ms_to_wait() {
        replay("claim", "claim: a full rate window answers the ms to wait");
    }

    #[test]
    fn claim_a_new_life_of_an_id_is_logged_beside_its_earlier_claim() {
        replay("claim", "claim: a new life of an id is logged beside its earlier claim");
    }

    #[test]
    fn claim_a_new_life_s_claim_counts_against_the_rate() {
        replay("claim", "claim: a new life's claim counts against the rate");
    }

    #[test]
    fn claim_a_timed_pause_answers_its_ms() {
        replay("claim", "claim: a timed pause answers its ms");
    }

    #[test]
    fn claim_an_id_whose_record_is_missing_is_dropped() {
        replay("claim", "claim: an id whose record is missing is dropped");
    }

    #[test]
    fn claim_lease_0() {
        replay("claim", "claim: lease 0");
    }

    #[test]
    fn claim_lease_missing() {
        replay("claim", "claim: lease missing");
    }

    #[test]
    fn claim_count_0() {
        replay("claim", "claim: COUNT 0");
    }

    #[test]
    fn claim_count_1001() {
        replay("claim", "claim: COUNT 1001");
    }

    #[test]
    fn claim_an_unknown_option() {
        replay("claim", "claim: an unknown option");
    }

    #[test]
    fn claim_a_taken_record_a_string() {
        replay("claim", "claim: a taken record a string");
    }

    #[test]
    fn claim_a_stored_concurrency_of_5_is_no_limit() {
        replay("claim", "claim: a stored concurrency of -5 is no limit");
    }

    #[test]
    fn claim_a_stored_rate_without_a_period_is_no_limit() {
        replay("claim", "claim: a stored rate without a period is no limit");
    }

    #[test]
    fn claim_a_stored_event_log_length_below_0_writes_no_event() {
        replay("claim", "claim: a stored event log length below 0 writes no event");
    }

    #[test]
    fn claim_groups_take_turns_by_name_on_a_tie() {
        replay("claim", "claim: groups take turns, by name on a tie");
    }

    #[test]
    fn claim_the_default_group_takes_its_turn() {
        replay("claim", "claim: the default group takes its turn");
    }

    #[test]
    fn claim_a_group_at_its_cap_leaves_the_index() {
        replay("claim", "claim: a group at its cap leaves the index");
    }

    #[test]
    fn claim_a_group_past_those_read_wakes_the_next_claim() {
        replay("claim", "claim: a group past those read wakes the next claim");
    }

    #[test]
    fn claim_a_paused_group_waits() {
        replay("claim", "claim: a paused group waits");
    }

    #[test]
    fn claim_a_group_s_rate_spent_it_waits_in_gwait() {
        replay("claim", "claim: a group's rate spent, it waits in gwait");
    }

    #[test]
    fn claim_a_group_whose_window_freed_comes_back() {
        replay("claim", "claim: a group whose window freed comes back");
    }

    #[test]
    fn claim_a_weight_of_2_takes_two_turns_to_one() {
        replay("claim", "claim: a weight of 2 takes two turns to one");
    }

    #[test]
    fn claim_a_priority_orders_jobs_within_a_group() {
        replay("claim", "claim: a priority orders jobs within a group");
    }

    #[test]
    fn claim_a_group_s_id_no_longer_pending_is_passed_over() {
        replay("claim", "claim: a group's id no longer pending is passed over");
    }

    #[test]
    fn claim_the_index_of_another_type() {
        replay("claim", "claim: the index of another type");
    }

    #[test]
    fn claim_a_virtual_time_no_integer_is_told_before_the_index_s_type() {
        replay("claim", "claim: a virtual time no integer is told before the index's type");
    }

    #[test]
    fn claim_the_waiting_groups_type_is_told_before_a_group_s_settings() {
        replay("claim", "claim: the waiting groups' type is told before a group's settings");
    }

    #[test]
    fn claim_a_group_s_leases_type_is_told_before_its_tag() {
        replay("claim", "claim: a group's leases' type is told before its tag");
    }

    #[test]
    fn claim_a_group_s_tag_no_integer() {
        replay("claim", "claim: a group's tag no integer");
    }

    #[test]
    fn claim_the_queue_s_concurrency_holds_above_the_groups() {
        replay("claim", "claim: the queue's concurrency holds above the groups");
    }

    #[test]
    fn claim_by_its_until_it_claims() {
        replay("claim", "claim: by its UNTIL, it claims");
    }

    #[test]
    fn claim_past_its_until_it_takes_nothing() {
        replay("claim", "claim: past its UNTIL, it takes nothing");
    }

    #[test]
    fn claim_past_its_until_it_reads_no_key() {
        replay("claim", "claim: past its UNTIL, it reads no key");
    }

    #[test]
    fn claim_an_until_past_its_range() {
        replay("claim", "claim: an UNTIL past its range");
    }

    #[test]
    fn claim_of_a_queue_whose_headers_are_a_string() {
        replay("claim", "claim of a queue whose headers are a string");
    }

    #[test]
    fn claim_into_an_event_log_that_is_a_list() {
        replay("claim", "claim into an event log that is a list");
    }

    #[test]
    fn claim_into_a_list() {
        replay("claim", "claim into a list");
    }

    #[test]
    fn claim_of_a_record_that_is_a_set() {
        replay("claim", "claim of a record that is a set");
    }

    #[test]
    fn a_lease_of_0() {
        replay("claim", "a lease of 0");
    }

    #[test]
    fn a_huge_count() {
        replay("claim", "a huge count");
    }

    #[test]
    fn claim_with_a_policy_that_is_a_string() {
        replay("claim", "claim with a policy that is a string");
    }

    #[test]
    fn claim_with_a_config_that_is_a_string() {
        replay("claim", "claim with a config that is a string");
    }

    #[test]
    fn claim_under_a_rate_whose_log_is_a_hash() {
        replay("claim", "claim under a rate whose log is a hash");
    }

    #[test]
    fn claim_of_a_record_whose_attempts_is_negative_takes_nothing() {
        replay("claim", "claim of a record whose attempts is negative takes nothing");
    }

    #[test]
    fn claim_with_attempts_x_behind_a_good_job_takes_neither() {
        replay("claim", "claim with attempts x behind a good job takes neither");
    }

    #[test]
    fn claim_with_a_paused_of_2() {
        replay("claim", "claim with a paused of 2");
    }

    #[test]
    fn claim_with_a_concurrency_of_abc() {
        replay("claim", "claim with a concurrency of abc");
    }

    #[test]
    fn claim_with_a_rate_of_2_5() {
        replay("claim", "claim with a rate of 2.5");
    }

    #[test]
    fn claim_with_a_policy_of_the_wrong_type_the_queue_paused() {
        replay("claim", "claim with a policy of the wrong type, the queue paused");
    }

    #[test]
    fn claim_from_a_queue_of_protocol_2_0() {
        replay("claim", "claim from a queue of protocol 2.0");
    }

    #[test]
    fn claim_of_it_at_the_head_of_pending_without_attempts() {
        replay("claim", "claim of it at the head of pending without attempts");
    }

    #[test]
    fn claim_of_it_at_the_head_of_pending_without_state() {
        replay("claim", "claim of it at the head of pending without state");
    }

    #[test]
    fn claim_of_it_at_the_head_of_pending_with_only_a_payload() {
        replay("claim", "claim of it at the head of pending with only a payload");
    }

    #[test]
    fn claim_of_it_at_the_head_of_pending_with_a_state_none_of_the_six() {
        replay("claim", "claim of it at the head of pending with a state none of the six");
    }
}

mod ack {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("ack", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("ack", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("ack", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("ack", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("ack", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("ack", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("ack", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("ack", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("ack", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("ack", "KEYS[6] holds a string");
    }

    #[test]
    fn keys_7_holds_a_string() {
        replay("ack", "KEYS[7] holds a string");
    }

    #[test]
    fn keys_8_holds_a_string() {
        replay("ack", "KEYS[8] holds a string");
    }

    #[test]
    fn keys_9_holds_a_string() {
        replay("ack", "KEYS[9] holds a string");
    }

    #[test]
    fn ack_done() {
        replay("ack", "ack: done");
    }

    #[test]
    fn ack_result_kept() {
        replay("ack", "ack: RESULT kept");
    }

    #[test]
    fn ack_an_empty_result() {
        replay("ack", "ack: an empty RESULT");
    }

    #[test]
    fn ack_a_second_attempt() {
        replay("ack", "ack: a second attempt");
    }

    #[test]
    fn ack_a_stale_token() {
        replay("ack", "ack: a stale token");
    }

    #[test]
    fn ack_a_pending_job() {
        replay("ack", "ack: a pending job");
    }

    #[test]
    fn ack_done_twice() {
        replay("ack", "ack: done twice");
    }

    #[test]
    fn ack_no_such_job() {
        replay("ack", "ack: no such job");
    }

    #[test]
    fn ack_the_token_missing() {
        replay("ack", "ack: the token missing");
    }

    #[test]
    fn ack_token_0() {
        replay("ack", "ack: token 0");
    }

    #[test]
    fn ack_the_id_s_kind() {
        replay("ack", "ack: the id's kind");
    }

    #[test]
    fn ack_result_over_its_limit() {
        replay("ack", "ack: RESULT over its limit");
    }

    #[test]
    fn ack_a_record_whose_state_is_no_state() {
        replay("ack", "ack: a record whose state is no state");
    }

    #[test]
    fn ack_counted_in_now_s_minute_and_hour() {
        replay("ack", "ack: counted in now's minute and hour");
    }

    #[test]
    fn ack_without_the_counts_key_nothing_counted() {
        replay("ack", "ack: without the counts key, nothing counted");
    }

    #[test]
    fn ack_a_later_minute_empties_the_minutes_since() {
        replay("ack", "ack: a later minute empties the minutes since");
    }

    #[test]
    fn ack_a_clock_behind_the_counters_counts_in_their_minute() {
        replay("ack", "ack: a clock behind the counters counts in their minute");
    }

    #[test]
    fn ack_another_event_s_counter_is_not_ack_s_to_read() {
        replay("ack", "ack: another event's counter is not ack's to read");
    }

    #[test]
    fn ack_a_total_that_is_not_a_number() {
        replay("ack", "ack: a total that is not a number");
    }

    #[test]
    fn ack_a_child_tells_its_parent() {
        replay("ack", "ack: a child tells its parent");
    }

    #[test]
    fn ack_a_child_tells_its_parent_its_result() {
        replay("ack", "ack: a child tells its parent its RESULT");
    }

    #[test]
    fn ack_a_child_without_the_flows_keys_is_refused() {
        replay("ack", "ack: a child without the flows' keys is refused");
    }

    #[test]
    fn ack_a_link_that_is_no_link() {
        replay("ack", "ack: a link that is no link");
    }

    #[test]
    fn ack_a_child_that_died_retried_and_done_tells_its_parent_again() {
        replay("ack", "ack: a child that died, retried and done tells its parent again");
    }

    #[test]
    fn ack_a_capped_group_s_lease_ends_it_is_ready_again() {
        replay("ack", "ack: a capped group's lease ends, it is ready again");
    }

    #[test]
    fn ack_a_capped_group_ready_again_wakes_a_waiting_claim() {
        replay("ack", "ack: a capped group ready again wakes a waiting claim");
    }

    #[test]
    fn ack_a_group_still_in_the_index_wakes_no_one() {
        replay("ack", "ack: a group still in the index wakes no one");
    }

    #[test]
    fn ack_a_grouped_job_s_wake_up_key_of_another_type() {
        replay("ack", "ack: a grouped job's wake-up key of another type");
    }

    #[test]
    fn ack_of_a_bad_id_with_three_keys_the_kind_first_on_every_executor() {
        replay("ack", "ack of a bad id with three keys: the kind first, on every executor");
    }

    #[test]
    fn ack_with_a_stale_token() {
        replay("ack", "ack with a stale token");
    }

    #[test]
    fn ack_with_a_result_and_three_keys() {
        replay("ack", "ack with a result and three keys");
    }

    #[test]
    fn ack_with_a_result_given_twice() {
        replay("ack", "ack with a result given twice");
    }

    #[test]
    fn ack_with_a_result_that_has_no_bytes() {
        replay("ack", "ack with a result that has no bytes");
    }

    #[test]
    fn ack_with_five_keys() {
        replay("ack", "ack with five keys");
    }

    #[test]
    fn ack_into_results_that_are_a_set() {
        replay("ack", "ack into results that are a set");
    }

    #[test]
    fn ack_into_an_event_log_that_is_a_hash() {
        replay("ack", "ack into an event log that is a hash");
    }

    #[test]
    fn ack_of_a_record_whose_attempts_is_negative_is_no_fence() {
        replay("ack", "ack of a record whose attempts is negative is no fence");
    }

    #[test]
    fn ack_of_a_record_whose_attempts_is_x() {
        replay("ack", "ack of a record whose attempts is x");
    }

    #[test]
    fn ack_of_it_without_attempts() {
        replay("ack", "ack of it without attempts");
    }

    #[test]
    fn ack_of_it_without_state() {
        replay("ack", "ack of it without state");
    }

    #[test]
    fn ack_of_it_with_only_a_payload() {
        replay("ack", "ack of it with only a payload");
    }

    #[test]
    fn ack_of_it_with_a_state_none_of_the_six() {
        replay("ack", "ack of it with a state none of the six");
    }
}

mod acknext {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("acknext", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("acknext", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("acknext", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("acknext", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("acknext", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("acknext", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("acknext", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("acknext", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("acknext", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("acknext", "KEYS[6] holds a string");
    }

    #[test]
    fn keys_7_holds_a_string() {
        replay("acknext", "KEYS[7] holds a string");
    }

    #[test]
    fn keys_8_holds_a_string() {
        replay("acknext", "KEYS[8] holds a string");
    }

    #[test]
    fn keys_9_holds_a_string() {
        replay("acknext", "KEYS[9] holds a string");
    }

    #[test]
    fn keys_10_holds_a_string() {
        replay("acknext", "KEYS[10] holds a string");
    }

    #[test]
    fn keys_11_holds_a_string() {
        replay("acknext", "KEYS[11] holds a string");
    }

    #[test]
    fn keys_12_holds_a_string() {
        replay("acknext", "KEYS[12] holds a string");
    }

    #[test]
    fn keys_13_holds_a_string() {
        replay("acknext", "KEYS[13] holds a string");
    }

    #[test]
    fn keys_14_holds_a_string() {
        replay("acknext", "KEYS[14] holds a string");
    }

    #[test]
    fn acknext_acks_and_claims_the_next() {
        replay("acknext", "acknext: acks and claims the next");
    }

    #[test]
    fn acknext_with_result_and_count() {
        replay("acknext", "acknext: with RESULT and COUNT");
    }

    #[test]
    fn acknext_nothing_more_pending() {
        replay("acknext", "acknext: nothing more pending");
    }

    #[test]
    fn acknext_a_stale_token() {
        replay("acknext", "acknext: a stale token");
    }

    #[test]
    fn acknext_no_such_job() {
        replay("acknext", "acknext: no such job");
    }

    #[test]
    fn acknext_count_given_twice() {
        replay("acknext", "acknext: COUNT given twice");
    }

    #[test]
    fn acknext_the_lease_missing() {
        replay("acknext", "acknext: the lease missing");
    }

    #[test]
    fn acknext_a_child_tells_its_parent() {
        replay("acknext", "acknext: a child tells its parent");
    }

    #[test]
    fn acknext_the_queue_s_settings_type_is_told_before_its_groups() {
        replay("acknext", "acknext: the queue's settings' type is told before its groups'");
    }

    #[test]
    fn acknext_the_event_log_s_type_is_told_before_its_groups() {
        replay("acknext", "acknext: the event log's type is told before its groups'");
    }

    #[test]
    fn acknext_a_capped_group_s_lease_ends_its_next_job_is_claimed() {
        replay("acknext", "acknext: a capped group's lease ends, its next job is claimed");
    }

    #[test]
    fn acknext_with_nine_keys() {
        replay("acknext", "acknext with nine keys");
    }

    #[test]
    fn acknext_with_count_given_twice() {
        replay("acknext", "acknext with COUNT given twice");
    }

    #[test]
    fn acknext_with_a_result_that_has_no_bytes() {
        replay("acknext", "acknext with a result that has no bytes");
    }

    #[test]
    fn acknext_with_a_result_given_twice() {
        replay("acknext", "acknext with a result given twice");
    }

    #[test]
    fn acknext_with_a_lease_of_0() {
        replay("acknext", "acknext with a lease of 0");
    }

    #[test]
    fn acknext_with_a_count_past_the_limit() {
        replay("acknext", "acknext with a count past the limit");
    }

    #[test]
    fn acknext_with_no_lease() {
        replay("acknext", "acknext with no lease");
    }

    #[test]
    fn acknext_with_an_unknown_option() {
        replay("acknext", "acknext with an unknown option");
    }

    #[test]
    fn acknext_with_a_rate_log_that_is_a_hash_acks_nothing() {
        replay("acknext", "acknext with a rate log that is a hash acks nothing");
    }

    #[test]
    fn acknext_with_a_stale_token() {
        replay("acknext", "acknext with a stale token");
    }

    #[test]
    fn acknext_with_attempts_x_at_the_head_does_not_ack() {
        replay("acknext", "acknext with attempts x at the head does not ack");
    }

    #[test]
    fn acknext_on_a_queue_with_a_paused_of_2_does_not_ack() {
        replay("acknext", "acknext on a queue with a paused of 2 does not ack");
    }

    #[test]
    fn acknext_whose_claim_finds_it_at_the_head_of_pending_without_attempts() {
        replay("acknext", "acknext whose claim finds it at the head of pending without attempts");
    }

    #[test]
    fn acknext_whose_claim_finds_it_at_the_head_of_pending_without_state() {
        replay("acknext", "acknext whose claim finds it at the head of pending without state");
    }

    #[test]
    fn acknext_whose_claim_finds_it_at_the_head_of_pending_with_only_a_payload() {
        replay("acknext", "acknext whose claim finds it at the head of pending with only a payload");
    }

    #[test]
    fn acknext_whose_claim_finds_it_at_the_head_of_pending_with_a_state_none_of_the_six() {
        replay("acknext", "acknext whose claim finds it at the head of pending with a state none of the six");
    }

    #[test]
    fn acknext_of_it_without_attempts() {
        replay("acknext", "acknext of it without attempts");
    }

    #[test]
    fn acknext_of_it_without_state() {
        replay("acknext", "acknext of it without state");
    }

    #[test]
    fn acknext_of_it_with_only_a_payload() {
        replay("acknext", "acknext of it with only a payload");
    }

    #[test]
    fn acknext_of_it_with_a_state_none_of_the_six() {
        replay("acknext", "acknext of it with a state none of the six");
    }
}

mod ackmany {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("ackmany", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("ackmany", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("ackmany", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("ackmany", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("ackmany", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("ackmany", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("ackmany", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("ackmany", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("ackmany", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("ackmany", "KEYS[6] holds a string");
    }

    #[test]
    fn keys_7_holds_a_string() {
        replay("ackmany", "KEYS[7] holds a string");
    }

    #[test]
    fn keys_8_holds_a_string() {
        replay("ackmany", "KEYS[8] holds a string");
    }

    #[test]
    fn ackmany_two_jobs_one_with_a_result() {
        replay("ackmany", "ackmany: two jobs, one with a result");
    }

    #[test]
    fn ackmany_each_job_answered_on_its_own() {
        replay("ackmany", "ackmany: each job answered on its own");
    }

    #[test]
    fn ackmany_a_job_named_twice_is_acked_once() {
        replay("ackmany", "ackmany: a job named twice is acked once");
    }

    #[test]
    fn ackmany_attempts_of_1_0_is_that_job_s_emqdata_the_next_acked() {
        replay("ackmany", "ackmany: attempts of 1.0 is that job's EMQDATA, the next acked");
    }

    #[test]
    fn ackmany_a_malformed_job_named_twice_is_refused_twice() {
        replay("ackmany", "ackmany: a malformed job named twice is refused twice");
    }

    #[test]
    fn ackmany_no_jobs() {
        replay("ackmany", "ackmany: no jobs");
    }

    #[test]
    fn ackmany_a_token_missing() {
        replay("ackmany", "ackmany: a token missing");
    }

    #[test]
    fn ackmany_a_bad_second_id_refuses_all() {
        replay("ackmany", "ackmany: a bad second id refuses all");
    }

    #[test]
    fn ackmany_a_child_tells_its_parent() {
        replay("ackmany", "ackmany: a child tells its parent");
    }

    #[test]
    fn ackmany_a_group_s_leases_end() {
        replay("ackmany", "ackmany: a group's leases end");
    }

    #[test]
    fn ackmany_with_another_queue_s_done() {
        replay("ackmany", "ackmany with another queue's done");
    }

    #[test]
    fn ackmany_whose_second_job_s_token_is_0_acks_neither() {
        replay("ackmany", "ackmany whose second job's token is 0 acks neither");
    }

    #[test]
    fn ackmany_with_a_result_that_has_no_bytes() {
        replay("ackmany", "ackmany with a result that has no bytes");
    }

    #[test]
    fn ackmany_with_four_keys() {
        replay("ackmany", "ackmany with four keys");
    }

    #[test]
    fn ackmany_with_no_job() {
        replay("ackmany", "ackmany with no job");
    }

    #[test]
    fn ackmany_whose_second_job_is_not_a_job_id_acks_neither() {
        replay("ackmany", "ackmany whose second job is not a job id acks neither");
    }

    #[test]
    fn ackmany_whose_second_job_has_no_token() {
        replay("ackmany", "ackmany whose second job has no token");
    }

    #[test]
    fn ackmany_with_a_result_given_twice_for_one_job() {
        replay("ackmany", "ackmany with a result given twice for one job");
    }

    #[test]
    fn ackmany_whose_second_job_s_record_is_a_string_acks_neither() {
        replay("ackmany", "ackmany whose second job's record is a string acks neither");
    }

    #[test]
    fn ackmany_into_done_that_is_a_list() {
        replay("ackmany", "ackmany into done that is a list");
    }

    #[test]
    fn ackmany_with_an_event_log_that_is_a_hash() {
        replay("ackmany", "ackmany with an event log that is a hash");
    }

    #[test]
    fn ackmany_of_it_without_attempts_and_of_a_whole_job() {
        replay("ackmany", "ackmany of it without attempts and of a whole job");
    }

    #[test]
    fn ackmany_of_it_without_state_and_of_a_whole_job() {
        replay("ackmany", "ackmany of it without state and of a whole job");
    }

    #[test]
    fn ackmany_of_it_with_only_a_payload_and_of_a_whole_job() {
        replay("ackmany", "ackmany of it with only a payload and of a whole job");
    }

    #[test]
    fn ackmany_of_it_with_a_state_none_of_the_six_and_of_a_whole_job() {
        replay("ackmany", "ackmany of it with a state none of the six and of a whole job");
    }
}

mod fail {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("fail", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("fail", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("fail", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("fail", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("fail", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("fail", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("fail", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("fail", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("fail", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("fail", "KEYS[6] holds a string");
    }

    #[test]
    fn keys_7_holds_a_string() {
        replay("fail", "KEYS[7] holds a string");
    }

    #[test]
    fn keys_8_holds_a_string() {
        replay("fail", "KEYS[8] holds a string");
    }

    #[test]
    fn keys_9_holds_a_string() {
        replay("fail", "KEYS[9] holds a string");
    }

    #[test]
    fn keys_10_holds_a_string() {
        replay("fail", "KEYS[10] holds a string");
    }

    #[test]
    fn keys_11_holds_a_string() {
        replay("fail", "KEYS[11] holds a string");
    }

    #[test]
    fn fail_retried_later() {
        replay("fail", "fail: retried later");
    }

    #[test]
    fn fail_out_of_attempts_is_dead() {
        replay("fail", "fail: out of attempts is dead");
    }

    #[test]
    fn fail_its_own_attempts_decides() {
        replay("fail", "fail: its own ATTEMPTS decides");
    }

    #[test]
    fn fail_its_own_backoff_exp() {
        replay("fail", "fail: its own BACKOFF_EXP");
    }

    #[test]
    fn fail_a_long_error_is_cut_in_its_event() {
        replay("fail", "fail: a long error is cut in its event");
    }

    #[test]
    fn fail_max_attempts_negative() {
        replay("fail", "fail: max attempts negative");
    }

    #[test]
    fn fail_the_error_missing() {
        replay("fail", "fail: the error missing");
    }

    #[test]
    fn fail_the_error_over_65536_bytes() {
        replay("fail", "fail: the error over 65536 bytes");
    }

    #[test]
    fn fail_a_stale_token() {
        replay("fail", "fail: a stale token");
    }

    #[test]
    fn fail_no_such_job() {
        replay("fail", "fail: no such job");
    }

    #[test]
    fn fail_a_child_out_of_attempts_tells_its_parent() {
        replay("fail", "fail: a child out of attempts tells its parent");
    }

    #[test]
    fn fail_a_child_retried_tells_nothing() {
        replay("fail", "fail: a child retried tells nothing");
    }

    #[test]
    fn fail_a_capped_group_s_job_dies_a_waiting_claim_wakes() {
        replay("fail", "fail: a capped group's job dies, a waiting claim wakes");
    }

    #[test]
    fn fail_a_grouped_job_to_delayed_out_of_its_leases() {
        replay("fail", "fail: a grouped job to delayed, out of its leases");
    }

    #[test]
    fn fail_a_grouped_job_dies() {
        replay("fail", "fail: a grouped job dies");
    }

    #[test]
    fn fail_with_an_event_log_but_no_config_key() {
        replay("fail", "fail with an event log but no config key");
    }

    #[test]
    fn fail_into_a_stream() {
        replay("fail", "fail into a stream");
    }

    #[test]
    fn fail_with_a_policy_that_is_a_list() {
        replay("fail", "fail with a policy that is a list");
    }

    #[test]
    fn fail_with_a_sixth_key_of_another_role() {
        replay("fail", "fail with a sixth key of another role");
    }

    #[test]
    fn fail_with_a_policy_that_ends_in_a_space() {
        replay("fail", "fail with a policy that ends in a space");
    }

    #[test]
    fn fail_of_it_without_attempts() {
        replay("fail", "fail of it without attempts");
    }

    #[test]
    fn fail_of_it_without_state() {
        replay("fail", "fail of it without state");
    }

    #[test]
    fn fail_of_it_with_only_a_payload() {
        replay("fail", "fail of it with only a payload");
    }

    #[test]
    fn fail_of_it_with_a_state_none_of_the_six() {
        replay("fail", "fail of it with a state none of the six");
    }
}

mod extend {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("extend", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("extend", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("extend", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("extend", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("extend", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("extend", "KEYS[2] holds a string");
    }

    #[test]
    fn extend_renews_the_lease() {
        replay("extend", "extend: renews the lease");
    }

    #[test]
    fn extend_a_stale_token() {
        replay("extend", "extend: a stale token");
    }

    #[test]
    fn extend_a_pending_job_is_not_held() {
        replay("extend", "extend: a pending job is not held");
    }

    #[test]
    fn extend_a_pending_job_token_1() {
        replay("extend", "extend: a pending job, token 1");
    }

    #[test]
    fn extend_no_such_job() {
        replay("extend", "extend: no such job");
    }

    #[test]
    fn extend_lease_0() {
        replay("extend", "extend: lease 0");
    }

    #[test]
    fn extend_the_id_s_kind() {
        replay("extend", "extend: the id's kind");
    }

    #[test]
    fn extend_of_a_cancelled_job() {
        replay("extend", "extend of a cancelled job");
    }

    #[test]
    fn a_float_lease() {
        replay("extend", "a float lease");
    }

    #[test]
    fn extend_of_a_record_whose_state_is_not_a_state() {
        replay("extend", "extend of a record whose state is not a state");
    }

    #[test]
    fn extend_of_it_without_attempts() {
        replay("extend", "extend of it without attempts");
    }

    #[test]
    fn extend_of_it_without_state() {
        replay("extend", "extend of it without state");
    }

    #[test]
    fn extend_of_it_with_only_a_payload() {
        replay("extend", "extend of it with only a payload");
    }

    #[test]
    fn extend_of_it_with_a_state_none_of_the_six() {
        replay("extend", "extend of it with a state none of the six");
    }
}

mod release {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("release", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("release", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("release", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("release", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("release", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("release", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("release", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("release", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("release", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("release", "KEYS[6] holds a string");
    }

    #[test]
    fn keys_7_holds_a_string() {
        replay("release", "KEYS[7] holds a string");
    }

    #[test]
    fn release_back_to_pending() {
        replay("release", "release: back to pending");
    }

    #[test]
    fn release_back_at_its_priority() {
        replay("release", "release: back at its priority");
    }

    #[test]
    fn release_a_stale_token() {
        replay("release", "release: a stale token");
    }

    #[test]
    fn release_token_not_a_number() {
        replay("release", "release: token not a number");
    }

    #[test]
    fn release_no_such_job() {
        replay("release", "release: no such job");
    }

    #[test]
    fn release_an_unknown_option() {
        replay("release", "release: an unknown option");
    }

    #[test]
    fn release_refund_gives_the_attempt_back() {
        replay("release", "release: REFUND gives the attempt back");
    }

    #[test]
    fn release_refund_grows_the_job_s_own_attempts() {
        replay("release", "release: REFUND grows the job's own ATTEMPTS");
    }

    #[test]
    fn release_refund_at_the_largest_attempts_stays_there() {
        replay("release", "release: REFUND at the largest ATTEMPTS stays there");
    }

    #[test]
    fn release_a_second_refund_grows_it_again() {
        replay("release", "release: a second REFUND grows it again");
    }

    #[test]
    fn release_refund_without_the_policy_key() {
        replay("release", "release: REFUND without the policy key");
    }

    #[test]
    fn release_the_policy_key_without_refund() {
        replay("release", "release: the policy key without REFUND");
    }

    #[test]
    fn release_refund_not_a_number() {
        replay("release", "release: REFUND not a number");
    }

    #[test]
    fn release_refund_given_twice() {
        replay("release", "release: REFUND given twice");
    }

    #[test]
    fn release_refund_with_a_policy_key_of_another_type() {
        replay("release", "release: REFUND with a policy key of another type");
    }

    #[test]
    fn release_refund_with_a_malformed_policy() {
        replay("release", "release: REFUND with a malformed policy");
    }

    #[test]
    fn release_refund_on_a_stale_token_changes_nothing() {
        replay("release", "release: REFUND on a stale token changes nothing");
    }

    #[test]
    fn release_back_to_its_group_s_pending() {
        replay("release", "release: back to its group's pending");
    }

    #[test]
    fn release_of_no_job() {
        replay("release", "release of no job");
    }

    #[test]
    fn release_with_a_priority_of_1() {
        replay("release", "release with a priority of +1");
    }

    #[test]
    fn release_with_refund_and_a_malformed_policy() {
        replay("release", "release with REFUND and a malformed policy");
    }

    #[test]
    fn release_with_refund_but_seven_keys() {
        replay("release", "release with REFUND but seven keys");
    }

    #[test]
    fn release_with_the_policy_key_but_no_refund() {
        replay("release", "release with the policy key but no REFUND");
    }

    #[test]
    fn release_of_it_without_attempts() {
        replay("release", "release of it without attempts");
    }

    #[test]
    fn release_of_it_without_state() {
        replay("release", "release of it without state");
    }

    #[test]
    fn release_of_it_with_only_a_payload() {
        replay("release", "release of it with only a payload");
    }

    #[test]
    fn release_of_it_with_a_state_none_of_the_six() {
        replay("release", "release of it with a state none of the six");
    }
}

mod reap {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("reap", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("reap", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("reap", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("reap", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("reap", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("reap", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("reap", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("reap", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("reap", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("reap", "KEYS[6] holds a string");
    }

    #[test]
    fn keys_7_holds_a_string() {
        replay("reap", "KEYS[7] holds a string");
    }

    #[test]
    fn keys_8_holds_a_string() {
        replay("reap", "KEYS[8] holds a string");
    }

    #[test]
    fn keys_9_holds_a_string() {
        replay("reap", "KEYS[9] holds a string");
    }

    #[test]
    fn keys_10_holds_a_string() {
        replay("reap", "KEYS[10] holds a string");
    }

    #[test]
    fn keys_11_holds_a_string() {
        replay("reap", "KEYS[11] holds a string");
    }

    #[test]
    fn keys_12_holds_a_string() {
        replay("reap", "KEYS[12] holds a string");
    }

    #[test]
    fn reap_an_expired_lease_back_to_pending() {
        replay("reap", "reap: an expired lease back to pending");
    }

    #[test]
    fn reap_out_of_attempts_is_dead() {
        replay("reap", "reap: out of attempts is dead");
    }

    #[test]
    fn reap_its_own_attempts_decides() {
        replay("reap", "reap: its own ATTEMPTS decides");
    }

    #[test]
    fn reap_a_live_lease_stays() {
        replay("reap", "reap: a live lease stays");
    }

    #[test]
    fn reap_limit_1_of_two() {
        replay("reap", "reap: LIMIT 1 of two");
    }

    #[test]
    fn reap_an_id_whose_record_is_missing_is_dropped() {
        replay("reap", "reap: an id whose record is missing is dropped");
    }

    #[test]
    fn reap_max_attempts_missing() {
        replay("reap", "reap: max attempts missing");
    }

    #[test]
    fn reap_limit_0() {
        replay("reap", "reap: LIMIT 0");
    }

    #[test]
    fn reap_an_expired_record_a_string() {
        replay("reap", "reap: an expired record a string");
    }

    #[test]
    fn reap_a_child_out_of_attempts_tells_its_parent() {
        replay("reap", "reap: a child out of attempts tells its parent");
    }

    #[test]
    fn reap_an_expired_grouped_lease_back_to_its_group() {
        replay("reap", "reap: an expired grouped lease back to its group");
    }

    #[test]
    fn a_negative_limit() {
        replay("reap", "a negative limit");
    }

    #[test]
    fn reap_with_a_policy_that_is_a_set() {
        replay("reap", "reap with a policy that is a set");
    }

    #[test]
    fn reap_with_a_priority_of_abc_leaves_the_job_where_it_was() {
        replay("reap", "reap with a priority of abc leaves the job where it was");
    }

    #[test]
    fn reap_with_a_policy_of_garbage() {
        replay("reap", "reap with a policy of garbage");
    }

    #[test]
    fn reap_with_attempts_1_0() {
        replay("reap", "reap with attempts 1.0");
    }

    #[test]
    fn reap_in_a_queue_of_protocol_2_0() {
        replay("reap", "reap in a queue of protocol 2.0");
    }

    #[test]
    fn reap_of_its_expired_lease_without_attempts() {
        replay("reap", "reap of its expired lease without attempts");
    }

    #[test]
    fn reap_of_its_expired_lease_without_state() {
        replay("reap", "reap of its expired lease without state");
    }

    #[test]
    fn reap_of_its_expired_lease_with_only_a_payload() {
        replay("reap", "reap of its expired lease with only a payload");
    }

    #[test]
    fn reap_of_its_expired_lease_with_a_state_none_of_the_six() {
        replay("reap", "reap of its expired lease with a state none of the six");
    }
}

mod promote {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("promote", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("promote", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("promote", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("promote", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("promote", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("promote", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("promote", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("promote", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("promote", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("promote", "KEYS[6] holds a string");
    }

    #[test]
    fn promote_a_due_job_to_pending() {
        replay("promote", "promote: a due job to pending");
    }

    #[test]
    fn promote_a_job_not_due_stays() {
        replay("promote", "promote: a job not due stays");
    }

    #[test]
    fn promote_limit_1_of_two() {
        replay("promote", "promote: LIMIT 1 of two");
    }

    #[test]
    fn promote_limit_1001() {
        replay("promote", "promote: LIMIT 1001");
    }

    #[test]
    fn promote_a_stray_argument() {
        replay("promote", "promote: a stray argument");
    }

    #[test]
    fn promote_a_due_grouped_job_to_its_group() {
        replay("promote", "promote: a due grouped job to its group");
    }

    #[test]
    fn keys_of_two_queues() {
        replay("promote", "keys of two queues");
    }

    #[test]
    fn promote_with_a_priority_of_abc() {
        replay("promote", "promote with a priority of abc");
    }

    #[test]
    fn promote_of_it_when_due_without_attempts() {
        replay("promote", "promote of it when due without attempts");
    }

    #[test]
    fn promote_of_it_when_due_without_state() {
        replay("promote", "promote of it when due without state");
    }

    #[test]
    fn promote_of_it_when_due_with_only_a_payload() {
        replay("promote", "promote of it when due with only a payload");
    }

    #[test]
    fn promote_of_it_when_due_with_a_state_none_of_the_six() {
        replay("promote", "promote of it when due with a state none of the six");
    }
}

mod purge {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("purge", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("purge", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("purge", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("purge", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("purge", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("purge", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("purge", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("purge", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("purge", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("purge", "KEYS[6] holds a string");
    }

    #[test]
    fn keys_7_holds_a_string() {
        replay("purge", "KEYS[7] holds a string");
    }

    #[test]
    fn keys_8_holds_a_string() {
        replay("purge", "KEYS[8] holds a string");
    }

    #[test]
    fn keys_9_holds_a_string() {
        replay("purge", "KEYS[9] holds a string");
    }

    #[test]
    fn purge_a_done_job_and_all_beside_it() {
        replay("purge", "purge: a done job and all beside it");
    }

    #[test]
    fn purge_a_job_younger_than_the_age_stays() {
        replay("purge", "purge: a job younger than the age stays");
    }

    #[test]
    fn purge_a_dead_job() {
        replay("purge", "purge: a dead job");
    }

    #[test]
    fn purge_a_cancelled_job() {
        replay("purge", "purge: a cancelled job");
    }

    #[test]
    fn purge_the_age_missing() {
        replay("purge", "purge: the age missing");
    }

    #[test]
    fn purge_not_a_finished_set() {
        replay("purge", "purge: not a finished set");
    }

    #[test]
    fn purge_a_done_job_still_linked_tells_its_parent() {
        replay("purge", "purge: a done job still linked tells its parent");
    }

    #[test]
    fn a_missing_argument() {
        replay("purge", "a missing argument");
    }

    #[test]
    fn purge_into_a_progress_that_is_a_set() {
        replay("purge", "purge into a progress that is a set");
    }
}

mod cancel {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("cancel", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("cancel", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("cancel", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("cancel", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("cancel", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("cancel", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("cancel", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("cancel", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("cancel", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("cancel", "KEYS[6] holds a string");
    }

    #[test]
    fn keys_7_holds_a_string() {
        replay("cancel", "KEYS[7] holds a string");
    }

    #[test]
    fn keys_8_holds_a_string() {
        replay("cancel", "KEYS[8] holds a string");
    }

    #[test]
    fn keys_9_holds_a_string() {
        replay("cancel", "KEYS[9] holds a string");
    }

    #[test]
    fn keys_10_holds_a_string() {
        replay("cancel", "KEYS[10] holds a string");
    }

    #[test]
    fn keys_11_holds_a_string() {
        replay("cancel", "KEYS[11] holds a string");
    }

    #[test]
    fn cancel_a_pending_job() {
        replay("cancel", "cancel: a pending job");
    }

    #[test]
    fn cancel_an_active_job() {
        replay("cancel", "cancel: an active job");
    }

    #[test]
    fn cancel_a_delayed_job() {
        replay("cancel", "cancel: a delayed job");
    }

    #[test]
    fn cancel_a_dead_job() {
        replay("cancel", "cancel: a dead job");
    }

    #[test]
    fn cancel_cancelled_already_answers_0() {
        replay("cancel", "cancel: cancelled already answers 0");
    }

    #[test]
    fn cancel_cancelled_already_answers_0_before_the_events_keys() {
        replay("cancel", "cancel: cancelled already answers 0 before the events keys");
    }

    #[test]
    fn cancel_cancelled_already_answers_0_before_the_queue_s_version() {
        replay("cancel", "cancel: cancelled already answers 0 before the queue's version");
    }

    #[test]
    fn cancel_a_pending_job_into_events_of_the_wrong_type() {
        replay("cancel", "cancel: a pending job into events of the wrong type");
    }

    #[test]
    fn cancel_a_done_job() {
        replay("cancel", "cancel: a done job");
    }

    #[test]
    fn cancel_no_such_job() {
        replay("cancel", "cancel: no such job");
    }

    #[test]
    fn cancel_the_id_s_kind() {
        replay("cancel", "cancel: the id's kind");
    }

    #[test]
    fn cancel_the_id_missing() {
        replay("cancel", "cancel: the id missing");
    }

    #[test]
    fn cancel_a_child_tells_its_parent() {
        replay("cancel", "cancel: a child tells its parent");
    }

    #[test]
    fn cancel_a_dead_child_tells_its_parent_again_and_its_link_goes() {
        replay("cancel", "cancel: a dead child tells its parent again, and its link goes");
    }

    #[test]
    fn cancel_a_waiting_parent() {
        replay("cancel", "cancel: a waiting parent");
    }

    #[test]
    fn cancel_a_waiting_parent_without_the_flows_keys() {
        replay("cancel", "cancel: a waiting parent without the flows' keys");
    }

    #[test]
    fn cancel_a_capped_group_s_running_job_a_waiting_claim_wakes() {
        replay("cancel", "cancel: a capped group's running job, a waiting claim wakes");
    }

    #[test]
    fn cancel_a_pending_grouped_job_leaves_its_group() {
        replay("cancel", "cancel: a pending grouped job leaves its group");
    }

    #[test]
    fn cancel_a_running_grouped_job_leaves_its_leases() {
        replay("cancel", "cancel: a running grouped job leaves its leases");
    }

    #[test]
    fn cancel_of_a_job_whose_state_is_not_a_state() {
        replay("cancel", "cancel of a job whose state is not a state");
    }

    #[test]
    fn cancel_of_it_without_attempts() {
        replay("cancel", "cancel of it without attempts");
    }

    #[test]
    fn cancel_of_it_without_state() {
        replay("cancel", "cancel of it without state");
    }

    #[test]
    fn cancel_of_it_with_only_a_payload() {
        replay("cancel", "cancel of it with only a payload");
    }

    #[test]
    fn cancel_of_it_with_a_state_none_of_the_six() {
        replay("cancel", "cancel of it with a state none of the six");
    }
}

mod retry {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("retry", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("retry", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("retry", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("retry", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("retry", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("retry", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("retry", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("retry", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("retry", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("retry", "KEYS[6] holds a string");
    }

    #[test]
    fn keys_7_holds_a_string() {
        replay("retry", "KEYS[7] holds a string");
    }

    #[test]
    fn keys_8_holds_a_string() {
        replay("retry", "KEYS[8] holds a string");
    }

    #[test]
    fn keys_9_holds_a_string() {
        replay("retry", "KEYS[9] holds a string");
    }

    #[test]
    fn retry_a_dead_job_back_to_pending_at_its_priority() {
        replay("retry", "retry: a dead job back to pending at its priority");
    }

    #[test]
    fn retry_a_pending_job() {
        replay("retry", "retry: a pending job");
    }

    #[test]
    fn retry_a_cancelled_job() {
        replay("retry", "retry: a cancelled job");
    }

    #[test]
    fn retry_no_such_job() {
        replay("retry", "retry: no such job");
    }

    #[test]
    fn retry_the_id_s_kind() {
        replay("retry", "retry: the id's kind");
    }

    #[test]
    fn retry_a_dead_parent_with_children_open_waits_for_them() {
        replay("retry", "retry: a dead parent with children open waits for them");
    }

    #[test]
    fn retry_a_dead_parent_whose_children_all_ended_is_pending() {
        replay("retry", "retry: a dead parent whose children all ended is pending");
    }

    #[test]
    fn retry_a_parent_with_children_open_without_its_flow_keys() {
        replay("retry", "retry: a parent with children open, without its flow keys");
    }

    #[test]
    fn retry_a_job_that_is_no_parent_without_its_flow_keys() {
        replay("retry", "retry: a job that is no parent, without its flow keys");
    }

    #[test]
    fn retry_dependencies_whose_open_is_below_0() {
        replay("retry", "retry: dependencies whose open is below 0");
    }

    #[test]
    fn retry_dependencies_of_another_type() {
        replay("retry", "retry: dependencies of another type");
    }

    #[test]
    fn retry_a_dead_grouped_job_to_its_group() {
        replay("retry", "retry: a dead grouped job to its group");
    }

    #[test]
    fn retry_of_a_pending_job() {
        replay("retry", "retry of a pending job");
    }

    #[test]
    fn retry_with_a_priority_of_1e0() {
        replay("retry", "retry with a priority of 1e0");
    }

    #[test]
    fn retry_of_a_job_whose_state_is_not_a_state() {
        replay("retry", "retry of a job whose state is not a state");
    }

    #[test]
    fn retry_of_it_without_attempts() {
        replay("retry", "retry of it without attempts");
    }

    #[test]
    fn retry_of_it_without_state() {
        replay("retry", "retry of it without state");
    }

    #[test]
    fn retry_of_it_with_only_a_payload() {
        replay("retry", "retry of it with only a payload");
    }

    #[test]
    fn retry_of_it_with_a_state_none_of_the_six() {
        replay("retry", "retry of it with a state none of the six");
    }
}

mod inspect {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("inspect", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("inspect", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("inspect", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("inspect", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("inspect", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("inspect", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("inspect", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("inspect", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("inspect", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("inspect", "KEYS[6] holds a string");
    }

    #[test]
    fn keys_7_holds_a_string() {
        replay("inspect", "KEYS[7] holds a string");
    }

    #[test]
    fn inspect_a_pending_job() {
        replay("inspect", "inspect: a pending job");
    }

    #[test]
    fn inspect_no_such_job() {
        replay("inspect", "inspect: no such job");
    }

    #[test]
    fn inspect_everything_beside_a_job() {
        replay("inspect", "inspect: everything beside a job");
    }

    #[test]
    fn inspect_a_done_job_s_result() {
        replay("inspect", "inspect: a done job's result");
    }

    #[test]
    fn inspect_a_grouped_job_s_group_with_the_seventh_key() {
        replay("inspect", "inspect: a grouped job's group, with the seventh key");
    }

    #[test]
    fn inspect_six_keys_read_no_group() {
        replay("inspect", "inspect: six keys read no group");
    }

    #[test]
    fn inspect_the_id_s_kind() {
        replay("inspect", "inspect: the id's kind");
    }

    #[test]
    fn inspect_the_id_missing() {
        replay("inspect", "inspect: the id missing");
    }

    #[test]
    fn inspect_with_four_keys() {
        replay("inspect", "inspect with four keys");
    }

    #[test]
    fn inspect_of_a_bad_id() {
        replay("inspect", "inspect of a bad id");
    }

    #[test]
    fn inspect_of_a_progress_that_is_a_list() {
        replay("inspect", "inspect of a progress that is a list");
    }
}

mod stats {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("stats", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("stats", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("stats", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("stats", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("stats", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("stats", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("stats", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("stats", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("stats", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("stats", "KEYS[6] holds a string");
    }

    #[test]
    fn keys_7_holds_a_string() {
        replay("stats", "KEYS[7] holds a string");
    }

    #[test]
    fn stats_an_empty_queue() {
        replay("stats", "stats: an empty queue");
    }

    #[test]
    fn stats_one_job_in_each_set() {
        replay("stats", "stats: one job in each set");
    }

    #[test]
    fn stats_an_argument() {
        replay("stats", "stats: an argument");
    }

    #[test]
    fn stats_the_seventh_set_waiting() {
        replay("stats", "stats: the seventh set, waiting");
    }

    #[test]
    fn stats_of_a_hash() {
        replay("stats", "stats of a hash");
    }
}

mod counts {
    use crate::replay;

    #[test]
    fn one_key_too_many() {
        replay("counts", "one key too many");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("counts", "KEYS[1] holds a string");
    }

    #[test]
    fn counts_a_new_queue() {
        replay("counts", "counts: a new queue");
    }

    #[test]
    fn counts_enqueued_completed_failed_and_dead_a_minute_ago() {
        replay("counts", "counts: enqueued, completed, failed and dead a minute ago");
    }

    #[test]
    fn counts_by_the_hour() {
        replay("counts", "counts: by the hour");
    }

    #[test]
    fn counts_a_job_counted_over_an_hour_ago_is_out_of_the_minutes() {
        replay("counts", "counts: a job counted over an hour ago is out of the minutes");
    }

    #[test]
    fn counts_the_same_by_the_hour() {
        replay("counts", "counts: the same, by the hour");
    }

    #[test]
    fn counts_no_argument() {
        replay("counts", "counts: no argument");
    }

    #[test]
    fn counts_a_day() {
        replay("counts", "counts: a day");
    }

    #[test]
    fn counts_an_argument_too_many() {
        replay("counts", "counts: an argument too many");
    }

    #[test]
    fn counts_a_total_that_is_not_a_number() {
        replay("counts", "counts: a total that is not a number");
    }

    #[test]
    fn counts_a_negative_minute() {
        replay("counts", "counts: a negative minute");
    }

    #[test]
    fn counts_a_slot_after_the_last_minute_written_reads_0_unread() {
        replay("counts", "counts: a slot after the last minute written reads 0, unread");
    }

    #[test]
    fn counts_with_no_minute_written_no_slot_is_read() {
        replay("counts", "counts: with no minute written, no slot is read");
    }

    #[test]
    fn counts_by_the_hour_the_minute_is_not_read() {
        replay("counts", "counts: by the hour, the minute is not read");
    }

    #[test]
    fn counts_a_clock_behind_the_counters_shows_no_slot_a_ring_older() {
        replay("counts", "counts: a clock behind the counters shows no slot a ring older");
    }
}

mod config {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("config", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("config", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("config", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("config", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("config", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("config", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("config", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("config", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("config", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("config", "KEYS[6] holds a string");
    }

    #[test]
    fn config_a_read_of_no_settings() {
        replay("config", "config: a read of no settings");
    }

    #[test]
    fn config_pause() {
        replay("config", "config: pause");
    }

    #[test]
    fn config_resume_re_adds_the_head_of_pending() {
        replay("config", "config: resume re-adds the head of pending");
    }

    #[test]
    fn config_resume_of_a_queue_not_paused_writes_no_event() {
        replay("config", "config: resume of a queue not paused writes no event");
    }

    #[test]
    fn config_paused_0_ends_a_timed_pause() {
        replay("config", "config: PAUSED 0 ends a timed pause");
    }

    #[test]
    fn config_concurrency_rate_and_per() {
        replay("config", "config: concurrency, rate and per");
    }

    #[test]
    fn config_concurrency_0_removes_it() {
        replay("config", "config: CONCURRENCY 0 removes it");
    }

    #[test]
    fn config_rate_0_removes_it_and_the_log() {
        replay("config", "config: RATE 0 removes it and the log");
    }

    #[test]
    fn config_retention_and_the_log_s_length() {
        replay("config", "config: retention and the log's length");
    }

    #[test]
    fn config_options_in_any_case() {
        replay("config", "config: options in any case");
    }

    #[test]
    fn config_a_queue_of_a_later_minor_is_read_its_protocol_shown() {
        replay("config", "config: a queue of a later minor is read, its protocol shown");
    }

    #[test]
    fn config_a_protocol_of_01_04_reads_as_1_4_shown_as_stored() {
        replay("config", "config: a protocol of 01.04 reads as 1.4, shown as stored");
    }

    #[test]
    fn config_a_stored_paused_of_2_is_refused_as_malformed() {
        replay("config", "config: a stored paused of 2 is refused as malformed");
    }

    #[test]
    fn config_rate_without_per() {
        replay("config", "config: RATE without PER");
    }

    #[test]
    fn config_per_without_rate() {
        replay("config", "config: PER without RATE");
    }

    #[test]
    fn config_paused_2() {
        replay("config", "config: PAUSED 2");
    }

    #[test]
    fn config_per_0() {
        replay("config", "config: PER 0");
    }

    #[test]
    fn config_rate_over_its_limit() {
        replay("config", "config: RATE over its limit");
    }

    #[test]
    fn config_an_option_given_twice() {
        replay("config", "config: an option given twice");
    }

    #[test]
    fn config_an_unknown_option() {
        replay("config", "config: an unknown option");
    }

    #[test]
    fn config_an_option_without_its_value() {
        replay("config", "config: an option without its value");
    }

    #[test]
    fn config_a_stored_concurrency_of_5_reads_0_no_limit() {
        replay("config", "config: a stored concurrency of -5 reads 0, no limit");
    }

    #[test]
    fn config_a_stored_rate_of_0_reads_no_rate_its_period_0_too() {
        replay("config", "config: a stored rate of 0 reads no rate, its period 0 too");
    }

    #[test]
    fn config_a_stored_rate_without_a_period_reads_no_rate() {
        replay("config", "config: a stored rate without a period reads no rate");
    }

    #[test]
    fn config_a_stored_period_of_3_reads_no_rate() {
        replay("config", "config: a stored period of -3 reads no rate");
    }

    #[test]
    fn config_a_stored_concurrency_above_its_range_is_used_as_stored() {
        replay("config", "config: a stored concurrency above its range is used as stored");
    }

    #[test]
    fn config_a_stored_retention_below_0_reads_the_default() {
        replay("config", "config: a stored retention below 0 reads the default");
    }

    #[test]
    fn config_a_stored_event_log_length_below_0_reads_0_off() {
        replay("config", "config: a stored event log length below 0 reads 0, off");
    }

    #[test]
    fn config_a_resume_re_adds_a_grouped_head_at_its_score() {
        replay("config", "config: a resume re-adds a grouped head at its score");
    }

    #[test]
    fn config_with_an_event_log_length_past_its_range() {
        replay("config", "config with an event log length past its range");
    }

    #[test]
    fn config_of_a_queue_whose_event_log_is_a_zset() {
        replay("config", "config of a queue whose event log is a zset");
    }

    #[test]
    fn config_with_a_retention_count_past_its_range() {
        replay("config", "config with a retention count past its range");
    }

    #[test]
    fn config_with_a_rate_and_no_period() {
        replay("config", "config with a rate and no period");
    }

    #[test]
    fn config_with_a_period_of_0() {
        replay("config", "config with a period of 0");
    }

    #[test]
    fn config_of_a_queue_whose_rate_log_is_a_string() {
        replay("config", "config of a queue whose rate log is a string");
    }

    #[test]
    fn config_with_paused_2() {
        replay("config", "config with PAUSED 2");
    }

    #[test]
    fn config_with_a_negative_concurrency() {
        replay("config", "config with a negative concurrency");
    }

    #[test]
    fn config_with_a_concurrency_given_twice() {
        replay("config", "config with a concurrency given twice");
    }

    #[test]
    fn config_with_an_unknown_setting() {
        replay("config", "config with an unknown setting");
    }

    #[test]
    fn config_of_a_queue_whose_config_is_a_zset() {
        replay("config", "config of a queue whose config is a zset");
    }

    #[test]
    fn config_with_keys_of_another_role() {
        replay("config", "config with keys of another role");
    }

    #[test]
    fn config_reading_a_stored_paused_of_2() {
        replay("config", "config reading a stored paused of 2");
    }

    #[test]
    fn config_resuming_with_the_head_s_priority_abc() {
        replay("config", "config resuming with the head's priority abc");
    }

    #[test]
    fn config_with_a_done_age_of_1h() {
        replay("config", "config with a done_age of 1h");
    }

    #[test]
    fn config_of_a_queue_of_protocol_2_0() {
        replay("config", "config of a queue of protocol 2.0");
    }
}

mod progress {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("progress", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("progress", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("progress", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("progress", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("progress", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("progress", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("progress", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("progress", "KEYS[4] holds a string");
    }

    #[test]
    fn progress_kept_beside_the_record() {
        replay("progress", "progress: kept beside the record");
    }

    #[test]
    fn progress_the_empty_string_is_a_value() {
        replay("progress", "progress: the empty string is a value");
    }

    #[test]
    fn progress_the_value_missing() {
        replay("progress", "progress: the value missing");
    }

    #[test]
    fn progress_over_4096_bytes() {
        replay("progress", "progress: over 4096 bytes");
    }

    #[test]
    fn progress_a_done_job_is_not_held() {
        replay("progress", "progress: a done job is not held");
    }

    #[test]
    fn progress_with_a_stale_token() {
        replay("progress", "progress with a stale token");
    }

    #[test]
    fn progress_with_no_value() {
        replay("progress", "progress with no value");
    }

    #[test]
    fn progress_with_a_token_of_0() {
        replay("progress", "progress with a token of 0");
    }

    #[test]
    fn progress_with_an_extra_argument() {
        replay("progress", "progress with an extra argument");
    }

    #[test]
    fn progress_into_a_string() {
        replay("progress", "progress into a string");
    }

    #[test]
    fn progress_of_a_bad_id() {
        replay("progress", "progress of a bad id");
    }

    #[test]
    fn progress_of_it_without_attempts() {
        replay("progress", "progress of it without attempts");
    }

    #[test]
    fn progress_of_it_without_state() {
        replay("progress", "progress of it without state");
    }

    #[test]
    fn progress_of_it_with_only_a_payload() {
        replay("progress", "progress of it with only a payload");
    }

    #[test]
    fn progress_of_it_with_a_state_none_of_the_six() {
        replay("progress", "progress of it with a state none of the six");
    }
}

mod schedule {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("schedule", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("schedule", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("schedule", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("schedule", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("schedule", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("schedule", "KEYS[2] holds a string");
    }

    #[test]
    fn schedule_added() {
        replay("schedule", "schedule: added");
    }

    #[test]
    fn schedule_replaced_answers_0() {
        replay("schedule", "schedule: replaced answers 0");
    }

    #[test]
    fn schedule_a_name_of_no_bytes() {
        replay("schedule", "schedule: a name of no bytes");
    }

    #[test]
    fn schedule_a_name_over_200_bytes() {
        replay("schedule", "schedule: a name over 200 bytes");
    }

    #[test]
    fn schedule_the_definition_missing() {
        replay("schedule", "schedule: the definition missing");
    }

    #[test]
    fn schedule_next_not_an_integer() {
        replay("schedule", "schedule: next not an integer");
    }

    #[test]
    fn schedule_next_missing() {
        replay("schedule", "schedule: next missing");
    }

    #[test]
    fn schedule_a_name_only_in_ticks_answers_1_added() {
        replay("schedule", "schedule: a name only in ticks answers 1, added");
    }

    #[test]
    fn schedule_a_name_only_in_schedules_answers_0_replaced() {
        replay("schedule", "schedule: a name only in schedules answers 0, replaced");
    }

    #[test]
    fn schedule_with_no_next_tick() {
        replay("schedule", "schedule with no next tick");
    }

    #[test]
    fn schedule_with_a_next_tick_out_of_range() {
        replay("schedule", "schedule with a next tick out of range");
    }

    #[test]
    fn schedule_with_an_extra_argument() {
        replay("schedule", "schedule with an extra argument");
    }

    #[test]
    fn schedule_with_no_definition() {
        replay("schedule", "schedule with no definition");
    }

    #[test]
    fn schedule_into_ticks_that_are_a_list() {
        replay("schedule", "schedule into ticks that are a list");
    }
}

mod unschedule {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("unschedule", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("unschedule", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("unschedule", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("unschedule", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("unschedule", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("unschedule", "KEYS[2] holds a string");
    }

    #[test]
    fn unschedule_removed() {
        replay("unschedule", "unschedule: removed");
    }

    #[test]
    fn unschedule_none_answers_0() {
        replay("unschedule", "unschedule: none answers 0");
    }

    #[test]
    fn unschedule_a_name_only_in_ticks_answers_0_and_removes_the_tick() {
        replay("unschedule", "unschedule: a name only in ticks answers 0 and removes the tick");
    }

    #[test]
    fn unschedule_a_name_only_in_schedules_answers_1() {
        replay("unschedule", "unschedule: a name only in schedules answers 1");
    }

    #[test]
    fn unschedule_the_name_missing() {
        replay("unschedule", "unschedule: the name missing");
    }

    #[test]
    fn unschedule_with_no_name() {
        replay("unschedule", "unschedule with no name");
    }

    #[test]
    fn unschedule_of_schedules_that_are_a_string() {
        replay("unschedule", "unschedule of schedules that are a string");
    }
}

mod schedules {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("schedules", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("schedules", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("schedules", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("schedules", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("schedules", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("schedules", "KEYS[2] holds a string");
    }

    #[test]
    fn schedules_every_one_in_tick_order() {
        replay("schedules", "schedules: every one in tick order");
    }

    #[test]
    fn schedules_due_1_only_those_due() {
        replay("schedules", "schedules: DUE 1 only those due");
    }

    #[test]
    fn schedules_limit_1() {
        replay("schedules", "schedules: LIMIT 1");
    }

    #[test]
    fn schedules_a_tick_with_no_definition_is_skipped() {
        replay("schedules", "schedules: a tick with no definition is skipped");
    }

    #[test]
    fn schedules_none() {
        replay("schedules", "schedules: none");
    }

    #[test]
    fn schedules_due_2() {
        replay("schedules", "schedules: DUE 2");
    }

    #[test]
    fn schedules_an_unknown_option() {
        replay("schedules", "schedules: an unknown option");
    }

    #[test]
    fn schedules_with_due_2() {
        replay("schedules", "schedules with DUE 2");
    }

    #[test]
    fn schedules_with_limit_0() {
        replay("schedules", "schedules with LIMIT 0");
    }

    #[test]
    fn schedules_with_keys_in_the_wrong_order() {
        replay("schedules", "schedules with keys in the wrong order");
    }
}

mod fire {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("fire", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("fire", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("fire", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("fire", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("fire", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("fire", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("fire", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("fire", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("fire", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("fire", "KEYS[6] holds a string");
    }

    #[test]
    fn keys_7_holds_a_string() {
        replay("fire", "KEYS[7] holds a string");
    }

    #[test]
    fn fire_enqueues_the_tick_s_job_and_moves_on() {
        replay("fire", "fire: enqueues the tick's job and moves on");
    }

    #[test]
    fn fire_skip_1_moves_on_without_a_job() {
        replay("fire", "fire: SKIP 1 moves on without a job");
    }

    #[test]
    fn fire_a_job_that_exists_moves_on_answers_0() {
        replay("fire", "fire: a job that exists moves on, answers 0");
    }

    #[test]
    fn fire_another_tick_answers_1() {
        replay("fire", "fire: another tick answers -1");
    }

    #[test]
    fn fire_a_removed_schedule_answers_1() {
        replay("fire", "fire: a removed schedule answers -1");
    }

    #[test]
    fn fire_next_not_after_tick() {
        replay("fire", "fire: next not after tick");
    }

    #[test]
    fn fire_the_id_s_kind() {
        replay("fire", "fire: the id's kind");
    }

    #[test]
    fn fire_skip_2() {
        replay("fire", "fire: SKIP 2");
    }

    #[test]
    fn fire_the_tick_missing() {
        replay("fire", "fire: the tick missing");
    }

    #[test]
    fn fire_with_a_next_not_after_its_tick() {
        replay("fire", "fire with a next not after its tick");
    }

    #[test]
    fn fire_with_skip_2() {
        replay("fire", "fire with SKIP 2");
    }

    #[test]
    fn fire_with_a_negative_tick() {
        replay("fire", "fire with a negative tick");
    }

    #[test]
    fn fire_with_no_payload() {
        replay("fire", "fire with no payload");
    }

    #[test]
    fn fire_of_a_bad_id() {
        replay("fire", "fire of a bad id");
    }

    #[test]
    fn fire_with_another_queue_s_ticks() {
        replay("fire", "fire with another queue's ticks");
    }

    #[test]
    fn fire_into_ticks_that_are_a_hash() {
        replay("fire", "fire into ticks that are a hash");
    }
}

mod drain {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("drain", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("drain", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("drain", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("drain", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("drain", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("drain", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("drain", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("drain", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("drain", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("drain", "KEYS[6] holds a string");
    }

    #[test]
    fn keys_7_holds_a_string() {
        replay("drain", "KEYS[7] holds a string");
    }

    #[test]
    fn keys_8_holds_a_string() {
        replay("drain", "KEYS[8] holds a string");
    }

    #[test]
    fn keys_9_holds_a_string() {
        replay("drain", "KEYS[9] holds a string");
    }

    #[test]
    fn drain_pending_jobs_and_all_beside_them() {
        replay("drain", "drain: pending jobs and all beside them");
    }

    #[test]
    fn drain_limit_1_takes_the_head() {
        replay("drain", "drain: LIMIT 1 takes the head");
    }

    #[test]
    fn drain_an_active_job() {
        replay("drain", "drain: an active job");
    }

    #[test]
    fn drain_delayed_jobs() {
        replay("drain", "drain: delayed jobs");
    }

    #[test]
    fn drain_not_an_unfinished_set() {
        replay("drain", "drain: not an unfinished set");
    }

    #[test]
    fn drain_a_pending_child_tells_its_parent_it_is_gone() {
        replay("drain", "drain: a pending child tells its parent it is gone");
    }

    #[test]
    fn drain_waiting_parents_go_with_their_dependencies() {
        replay("drain", "drain: waiting parents go with their dependencies");
    }

    #[test]
    fn drain_a_group_s_pending_jobs() {
        replay("drain", "drain: a group's pending jobs");
    }

    #[test]
    fn drain_of_a_finished_set() {
        replay("drain", "drain of a finished set");
    }

    #[test]
    fn drain_with_limit_0() {
        replay("drain", "drain with LIMIT 0");
    }

    #[test]
    fn drain_of_a_job_whose_record_is_a_list() {
        replay("drain", "drain of a job whose record is a list");
    }
}

mod remove {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("remove", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("remove", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("remove", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("remove", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("remove", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("remove", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("remove", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("remove", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("remove", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("remove", "KEYS[6] holds a string");
    }

    #[test]
    fn keys_7_holds_a_string() {
        replay("remove", "KEYS[7] holds a string");
    }

    #[test]
    fn keys_8_holds_a_string() {
        replay("remove", "KEYS[8] holds a string");
    }

    #[test]
    fn keys_9_holds_a_string() {
        replay("remove", "KEYS[9] holds a string");
    }

    #[test]
    fn remove_a_dead_job_and_all_it_kept() {
        replay("remove", "remove: a dead job and all it kept");
    }

    #[test]
    fn remove_an_id_in_another_set_is_left_alone() {
        replay("remove", "remove: an id in another set is left alone");
    }

    #[test]
    fn remove_an_active_job_its_holder_fenced() {
        replay("remove", "remove: an active job, its holder fenced");
    }

    #[test]
    fn remove_an_id_named_twice_once() {
        replay("remove", "remove: an id named twice, once");
    }

    #[test]
    fn remove_a_done_job_and_its_result() {
        replay("remove", "remove: a done job and its result");
    }

    #[test]
    fn remove_no_id() {
        replay("remove", "remove: no id");
    }

    #[test]
    fn remove_an_id_of_another_kind() {
        replay("remove", "remove: an id of another kind");
    }

    #[test]
    fn remove_from_the_wake_up_key() {
        replay("remove", "remove: from the wake-up key");
    }

    #[test]
    fn remove_a_waiting_parent() {
        replay("remove", "remove: a waiting parent");
    }

    #[test]
    fn remove_a_grouped_job_s_group_forgotten() {
        replay("remove", "remove: a grouped job's group forgotten");
    }
}

mod obliterate {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("obliterate", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("obliterate", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("obliterate", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("obliterate", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("obliterate", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("obliterate", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("obliterate", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("obliterate", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("obliterate", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("obliterate", "KEYS[6] holds a string");
    }

    #[test]
    fn keys_7_holds_a_string() {
        replay("obliterate", "KEYS[7] holds a string");
    }

    #[test]
    fn keys_8_holds_a_string() {
        replay("obliterate", "KEYS[8] holds a string");
    }

    #[test]
    fn keys_9_holds_a_string() {
        replay("obliterate", "KEYS[9] holds a string");
    }

    #[test]
    fn keys_10_holds_a_string() {
        replay("obliterate", "KEYS[10] holds a string");
    }

    #[test]
    fn keys_11_holds_a_string() {
        replay("obliterate", "KEYS[11] holds a string");
    }

    #[test]
    fn keys_12_holds_a_string() {
        replay("obliterate", "KEYS[12] holds a string");
    }

    #[test]
    fn keys_13_holds_a_string() {
        replay("obliterate", "KEYS[13] holds a string");
    }

    #[test]
    fn keys_14_holds_a_string() {
        replay("obliterate", "KEYS[14] holds a string");
    }

    #[test]
    fn keys_15_holds_a_string() {
        replay("obliterate", "KEYS[15] holds a string");
    }

    #[test]
    fn keys_16_holds_a_string() {
        replay("obliterate", "KEYS[16] holds a string");
    }

    #[test]
    fn keys_17_holds_a_string() {
        replay("obliterate", "KEYS[17] holds a string");
    }

    #[test]
    fn keys_18_holds_a_string() {
        replay("obliterate", "KEYS[18] holds a string");
    }

    #[test]
    fn keys_19_holds_a_string() {
        replay("obliterate", "KEYS[19] holds a string");
    }

    #[test]
    fn keys_20_holds_a_string() {
        replay("obliterate", "KEYS[20] holds a string");
    }

    #[test]
    fn keys_21_holds_a_string() {
        replay("obliterate", "KEYS[21] holds a string");
    }

    #[test]
    fn keys_22_holds_a_string() {
        replay("obliterate", "KEYS[22] holds a string");
    }

    #[test]
    fn keys_23_holds_a_string() {
        replay("obliterate", "KEYS[23] holds a string");
    }

    #[test]
    fn keys_24_holds_a_string() {
        replay("obliterate", "KEYS[24] holds a string");
    }

    #[test]
    fn keys_25_holds_a_string() {
        replay("obliterate", "KEYS[25] holds a string");
    }

    #[test]
    fn keys_26_holds_a_string() {
        replay("obliterate", "KEYS[26] holds a string");
    }

    #[test]
    fn keys_27_holds_a_string() {
        replay("obliterate", "KEYS[27] holds a string");
    }

    #[test]
    fn obliterate_the_queue_s_keys() {
        replay("obliterate", "obliterate: the queue's keys");
    }

    #[test]
    fn obliterate_an_empty_queue_deletes_nothing() {
        replay("obliterate", "obliterate: an empty queue deletes nothing");
    }

    #[test]
    fn obliterate_a_queue_holding_jobs() {
        replay("obliterate", "obliterate: a queue holding jobs");
    }

    #[test]
    fn obliterate_an_argument() {
        replay("obliterate", "obliterate: an argument");
    }

    #[test]
    fn obliterate_a_waiting_parent_is_a_job() {
        replay("obliterate", "obliterate: a waiting parent is a job");
    }

    #[test]
    fn obliterate_a_notice_no_relay_carried() {
        replay("obliterate", "obliterate: a notice no relay carried");
    }

    #[test]
    fn obliterate_the_flows_keys_go_with_the_queue() {
        replay("obliterate", "obliterate: the flows' keys go with the queue");
    }

    #[test]
    fn obliterate_a_queue_s_group_settings() {
        replay("obliterate", "obliterate: a queue's group settings");
    }

    #[test]
    fn obliterate_with_an_argument() {
        replay("obliterate", "obliterate with an argument");
    }

    #[test]
    fn obliterate_of_a_queue_whose_schedules_are_a_string() {
        replay("obliterate", "obliterate of a queue whose schedules are a string");
    }

    #[test]
    fn obliterate_of_a_queue_of_protocol_2_0() {
        replay("obliterate", "obliterate of a queue of protocol 2.0");
    }

    #[test]
    fn obliterate_of_a_queue_of_protocol_2_0_that_still_holds_jobs() {
        replay("obliterate", "obliterate of a queue of protocol 2.0 that still holds jobs");
    }

    #[test]
    fn obliterate_of_a_queue_whose_protocol_is_1_4_0() {
        replay("obliterate", "obliterate of a queue whose protocol is 1.4.0");
    }
}

mod trim {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("trim", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("trim", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("trim", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("trim", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("trim", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("trim", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("trim", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("trim", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("trim", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("trim", "KEYS[6] holds a string");
    }

    #[test]
    fn keys_7_holds_a_string() {
        replay("trim", "KEYS[7] holds a string");
    }

    #[test]
    fn keys_8_holds_a_string() {
        replay("trim", "KEYS[8] holds a string");
    }

    #[test]
    fn keys_9_holds_a_string() {
        replay("trim", "KEYS[9] holds a string");
    }

    #[test]
    fn keys_10_holds_a_string() {
        replay("trim", "KEYS[10] holds a string");
    }

    #[test]
    fn trim_a_count_of_1_keeps_the_newest() {
        replay("trim", "trim: a count of 1 keeps the newest");
    }

    #[test]
    fn trim_an_age_cuts_the_old() {
        replay("trim", "trim: an age cuts the old");
    }

    #[test]
    fn trim_the_defaults_keep_a_fresh_job() {
        replay("trim", "trim: the defaults keep a fresh job");
    }

    #[test]
    fn trim_dead_jobs_by_age() {
        replay("trim", "trim: dead jobs by age");
    }

    #[test]
    fn trim_limit_missing_its_value() {
        replay("trim", "trim: LIMIT missing its value");
    }

    #[test]
    fn trim_a_stored_retention_below_0_applies_the_default() {
        replay("trim", "trim: a stored retention below 0 applies the default");
    }

    #[test]
    fn trim_a_dead_job_still_linked_tells_its_parent() {
        replay("trim", "trim: a dead job still linked tells its parent");
    }

    #[test]
    fn trim_of_an_unfinished_set() {
        replay("trim", "trim of an unfinished set");
    }

    #[test]
    fn trim_with_a_config_that_is_a_zset() {
        replay("trim", "trim with a config that is a zset");
    }

    #[test]
    fn trim_with_a_done_count_of_ten() {
        replay("trim", "trim with a done_count of ten");
    }
}

mod defer {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("defer", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("defer", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("defer", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("defer", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("defer", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("defer", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("defer", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("defer", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("defer", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("defer", "KEYS[6] holds a string");
    }

    #[test]
    fn defer_waits_without_spending_its_attempt() {
        replay("defer", "defer: waits without spending its attempt");
    }

    #[test]
    fn defer_pause_1_pauses_the_queue() {
        replay("defer", "defer: PAUSE 1 pauses the queue");
    }

    #[test]
    fn defer_a_job_s_own_attempts_grows_by_one() {
        replay("defer", "defer: a job's own ATTEMPTS grows by one");
    }

    #[test]
    fn defer_pause_2() {
        replay("defer", "defer: PAUSE 2");
    }

    #[test]
    fn defer_max_attempts_missing() {
        replay("defer", "defer: max attempts missing");
    }

    #[test]
    fn defer_a_stale_token() {
        replay("defer", "defer: a stale token");
    }

    #[test]
    fn defer_a_grouped_job_to_delayed() {
        replay("defer", "defer: a grouped job to delayed");
    }

    #[test]
    fn defer_with_pause_2() {
        replay("defer", "defer with PAUSE 2");
    }

    #[test]
    fn defer_with_no_max_attempts() {
        replay("defer", "defer with no max attempts");
    }

    #[test]
    fn defer_with_a_config_that_is_a_list() {
        replay("defer", "defer with a config that is a list");
    }

    #[test]
    fn defer_with_a_paused_until_of_soon() {
        replay("defer", "defer with a paused_until of soon");
    }

    #[test]
    fn defer_of_it_without_attempts() {
        replay("defer", "defer of it without attempts");
    }

    #[test]
    fn defer_of_it_without_state() {
        replay("defer", "defer of it without state");
    }

    #[test]
    fn defer_of_it_with_only_a_payload() {
        replay("defer", "defer of it with only a payload");
    }

    #[test]
    fn defer_of_it_with_a_state_none_of_the_six() {
        replay("defer", "defer of it with a state none of the six");
    }
}

mod batch {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("batch", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("batch", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("batch", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("batch", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("batch", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("batch", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("batch", "KEYS[3] holds a string");
    }

    #[test]
    fn batch_opened_over_two_jobs() {
        replay("batch", "batch: opened over two jobs");
    }

    #[test]
    fn batch_opened_again_answers_0() {
        replay("batch", "batch: opened again answers 0");
    }

    #[test]
    fn batch_an_id_of_every_allowed_character() {
        replay("batch", "batch: an id of every allowed character");
    }

    #[test]
    fn batch_an_id_ending_in_callback() {
        replay("batch", "batch: an id ending in :callback");
    }

    #[test]
    fn batch_an_id_with_a_space() {
        replay("batch", "batch: an id with a space");
    }

    #[test]
    fn batch_no_jobs() {
        replay("batch", "batch: no jobs");
    }

    #[test]
    fn batch_the_callback_s_kind() {
        replay("batch", "batch: the callback's kind");
    }

    #[test]
    fn batch_a_job_s_kind() {
        replay("batch", "batch: a job's kind");
    }

    #[test]
    fn batch_the_payload_missing() {
        replay("batch", "batch: the payload missing");
    }

    #[test]
    fn batch_with_a_bad_id() {
        replay("batch", "batch with a bad id");
    }

    #[test]
    fn batch_whose_id_is_another_batch_s_callback_field() {
        replay("batch", "batch whose id is another batch's callback field");
    }

    #[test]
    fn batch_with_a_callback_that_is_not_a_job_id() {
        replay("batch", "batch with a callback that is not a job id");
    }

    #[test]
    fn batch_with_no_jobs() {
        replay("batch", "batch with no jobs");
    }

    #[test]
    fn batch_with_a_job_that_is_not_a_job_id() {
        replay("batch", "batch with a job that is not a job id");
    }

    #[test]
    fn batch_into_open_batches_that_are_a_list() {
        replay("batch", "batch into open batches that are a list");
    }
}

mod settle {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("settle", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("settle", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("settle", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("settle", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("settle", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("settle", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("settle", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("settle", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("settle", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("settle", "KEYS[6] holds a string");
    }

    #[test]
    fn keys_7_holds_a_string() {
        replay("settle", "KEYS[7] holds a string");
    }

    #[test]
    fn keys_8_holds_a_string() {
        replay("settle", "KEYS[8] holds a string");
    }

    #[test]
    fn keys_9_holds_a_string() {
        replay("settle", "KEYS[9] holds a string");
    }

    #[test]
    fn settle_every_job_finished_enqueues_the_callback() {
        replay("settle", "settle: every job finished enqueues the callback");
    }

    #[test]
    fn settle_a_job_not_finished_stops_the_batch() {
        replay("settle", "settle: a job not finished stops the batch");
    }

    #[test]
    fn settle_a_job_gone_counts_as_gone() {
        replay("settle", "settle: a job gone counts as gone");
    }

    #[test]
    fn settle_limit_1_looks_at_one_job() {
        replay("settle", "settle: LIMIT 1 looks at one job");
    }

    #[test]
    fn settle_the_callback_s_record_exists() {
        replay("settle", "settle: the callback's record exists");
    }

    #[test]
    fn settle_an_open_entry_with_no_state_is_removed() {
        replay("settle", "settle: an open entry with no state is removed");
    }

    #[test]
    fn settle_a_state_with_a_signed_number_is_no_state_removed() {
        replay("settle", "settle: a state with a signed number is no state, removed");
    }

    #[test]
    fn settle_a_state_with_a_number_of_16_digits_is_no_state_removed() {
        replay("settle", "settle: a state with a number of 16 digits is no state, removed");
    }

    #[test]
    fn settle_a_state_s_numbers_may_have_leading_zeros() {
        replay("settle", "settle: a state's numbers may have leading zeros");
    }

    #[test]
    fn settle_nothing_open() {
        replay("settle", "settle: nothing open");
    }

    #[test]
    fn settle_limit_0() {
        replay("settle", "settle: LIMIT 0");
    }

    #[test]
    fn settle_a_job_s_record_a_string() {
        replay("settle", "settle: a job's record a string");
    }

    #[test]
    fn settle_with_an_unknown_option() {
        replay("settle", "settle with an unknown option");
    }

    #[test]
    fn settle_with_limit_0() {
        replay("settle", "settle with LIMIT 0");
    }

    #[test]
    fn settle_of_a_batch_whose_job_s_record_is_a_string() {
        replay("settle", "settle of a batch whose job's record is a string");
    }

    #[test]
    fn settle_of_a_batch_over_it_without_attempts() {
        replay("settle", "settle of a batch over it without attempts");
    }

    #[test]
    fn settle_of_a_batch_over_it_without_state() {
        replay("settle", "settle of a batch over it without state");
    }

    #[test]
    fn settle_of_a_batch_over_it_with_only_a_payload() {
        replay("settle", "settle of a batch over it with only a payload");
    }

    #[test]
    fn settle_of_a_batch_over_it_with_a_state_none_of_the_six() {
        replay("settle", "settle of a batch over it with a state none of the six");
    }
}

mod flow {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("flow", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("flow", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("flow", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("flow", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("flow", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("flow", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("flow", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("flow", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("flow", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("flow", "KEYS[6] holds a string");
    }

    #[test]
    fn keys_7_holds_a_string() {
        replay("flow", "KEYS[7] holds a string");
    }

    #[test]
    fn keys_8_holds_a_string() {
        replay("flow", "KEYS[8] holds a string");
    }

    #[test]
    fn keys_9_holds_a_string() {
        replay("flow", "KEYS[9] holds a string");
    }

    #[test]
    fn keys_10_holds_a_string() {
        replay("flow", "KEYS[10] holds a string");
    }

    #[test]
    fn flow_a_parent_waits_for_two_children() {
        replay("flow", "flow: a parent waits for two children");
    }

    #[test]
    fn flow_with_priority_attempts_headers_and_a_parent_of_its_own() {
        replay("flow", "flow: with PRIORITY, ATTEMPTS, HEADERS and a PARENT of its own");
    }

    #[test]
    fn flow_a_parent_that_exists_answers_its_incarnation() {
        replay("flow", "flow: a parent that exists answers its incarnation");
    }

    #[test]
    fn flow_a_job_that_exists_and_is_no_parent_answers_0() {
        replay("flow", "flow: a job that exists and is no parent answers 0");
    }

    #[test]
    fn flow_no_children() {
        replay("flow", "flow: no children");
    }

    #[test]
    fn flow_a_child_that_is_no_job_reference() {
        replay("flow", "flow: a child that is no job reference");
    }

    #[test]
    fn flow_a_child_s_kind() {
        replay("flow", "flow: a child's kind");
    }

    #[test]
    fn flow_a_child_s_policy_unknown() {
        replay("flow", "flow: a child's policy unknown");
    }

    #[test]
    fn flow_a_child_named_twice() {
        replay("flow", "flow: a child named twice");
    }

    #[test]
    fn flow_delay_is_enqueue_s() {
        replay("flow", "flow: DELAY is ENQUEUE's");
    }

    #[test]
    fn flow_its_own_child() {
        replay("flow", "flow: its own child");
    }

    #[test]
    fn flow_a_parent_that_is_no_link() {
        replay("flow", "flow: a PARENT that is no link");
    }
}

mod resolve {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("resolve", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("resolve", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("resolve", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("resolve", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("resolve", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("resolve", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("resolve", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("resolve", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("resolve", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("resolve", "KEYS[6] holds a string");
    }

    #[test]
    fn keys_7_holds_a_string() {
        replay("resolve", "KEYS[7] holds a string");
    }

    #[test]
    fn keys_8_holds_a_string() {
        replay("resolve", "KEYS[8] holds a string");
    }

    #[test]
    fn keys_9_holds_a_string() {
        replay("resolve", "KEYS[9] holds a string");
    }

    #[test]
    fn keys_10_holds_a_string() {
        replay("resolve", "KEYS[10] holds a string");
    }

    #[test]
    fn keys_11_holds_a_string() {
        replay("resolve", "KEYS[11] holds a string");
    }

    #[test]
    fn keys_12_holds_a_string() {
        replay("resolve", "KEYS[12] holds a string");
    }

    #[test]
    fn keys_13_holds_a_string() {
        replay("resolve", "KEYS[13] holds a string");
    }

    #[test]
    fn resolve_one_of_two_children_done_the_parent_waits() {
        replay("resolve", "resolve: one of two children done, the parent waits");
    }

    #[test]
    fn resolve_the_last_child_done_the_parent_is_pending() {
        replay("resolve", "resolve: the last child done, the parent is pending");
    }

    #[test]
    fn resolve_a_dead_child_fails_its_parent() {
        replay("resolve", "resolve: a dead child fails its parent");
    }

    #[test]
    fn resolve_a_parent_failed_by_a_child_tells_its_own_parent() {
        replay("resolve", "resolve: a parent failed by a child tells its own parent");
    }

    #[test]
    fn resolve_a_child_ignored_the_parent_waits_on() {
        replay("resolve", "resolve: a child ignored, the parent waits on");
    }

    #[test]
    fn resolve_a_child_continued_after_the_parent_is_pending() {
        replay("resolve", "resolve: a child continued after, the parent is pending");
    }

    #[test]
    fn resolve_a_notice_twice_changes_nothing() {
        replay("resolve", "resolve: a notice twice changes nothing");
    }

    #[test]
    fn resolve_another_incarnation_changes_nothing() {
        replay("resolve", "resolve: another incarnation changes nothing");
    }

    #[test]
    fn resolve_a_cancelled_parent_changes_nothing() {
        replay("resolve", "resolve: a cancelled parent changes nothing");
    }

    #[test]
    fn resolve_no_parent_changes_nothing() {
        replay("resolve", "resolve: no parent changes nothing");
    }

    #[test]
    fn resolve_a_running_parent_records_its_child() {
        replay("resolve", "resolve: a running parent records its child");
    }

    #[test]
    fn resolve_a_dead_parent_records_its_child() {
        replay("resolve", "resolve: a dead parent records its child");
    }

    #[test]
    fn resolve_a_child_retried_and_done_replaces_its_death() {
        replay("resolve", "resolve: a child retried and done replaces its death");
    }

    #[test]
    fn resolve_a_child_dead_twice_changes_nothing() {
        replay("resolve", "resolve: a child dead twice changes nothing");
    }

    #[test]
    fn resolve_a_done_parent_changes_nothing() {
        replay("resolve", "resolve: a done parent changes nothing");
    }

    #[test]
    fn resolve_an_outcome_unknown() {
        replay("resolve", "resolve: an outcome unknown");
    }

    #[test]
    fn resolve_a_child_that_is_no_reference() {
        replay("resolve", "resolve: a child that is no reference");
    }

    #[test]
    fn resolve_an_incarnation_that_is_no_number() {
        replay("resolve", "resolve: an incarnation that is no number");
    }

    #[test]
    fn resolve_a_dependency_that_is_none() {
        replay("resolve", "resolve: a dependency that is none");
    }

    #[test]
    fn resolve_a_grouped_parent_to_its_group_s_pending() {
        replay("resolve", "resolve: a grouped parent to its group's pending");
    }
}

mod children {
    use crate::replay;

    #[test]
    fn one_key_too_many() {
        replay("children", "one key too many");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("children", "KEYS[1] holds a string");
    }

    #[test]
    fn children_a_parent_s_children() {
        replay("children", "children: a parent's children");
    }

    #[test]
    fn children_no_parent() {
        replay("children", "children: no parent");
    }
}

mod adopt {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("adopt", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("adopt", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("adopt", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("adopt", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("adopt", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("adopt", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("adopt", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("adopt", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("adopt", "KEYS[5] holds a string");
    }

    #[test]
    fn keys_6_holds_a_string() {
        replay("adopt", "KEYS[6] holds a string");
    }

    #[test]
    fn keys_7_holds_a_string() {
        replay("adopt", "KEYS[7] holds a string");
    }

    #[test]
    fn adopt_a_running_job_waits_for_two_children() {
        replay("adopt", "adopt: a running job waits for two children");
    }

    #[test]
    fn adopt_attempts_of_its_own_get_one_back() {
        replay("adopt", "adopt: ATTEMPTS of its own get one back");
    }

    #[test]
    fn adopt_a_parent_adds_only_the_children_it_lacks() {
        replay("adopt", "adopt: a parent adds only the children it lacks");
    }

    #[test]
    fn adopt_every_child_named_has_ended_the_job_goes_on() {
        replay("adopt", "adopt: every child named has ended, the job goes on");
    }

    #[test]
    fn adopt_a_stale_token() {
        replay("adopt", "adopt: a stale token");
    }

    #[test]
    fn adopt_a_pending_job() {
        replay("adopt", "adopt: a pending job");
    }

    #[test]
    fn adopt_no_job() {
        replay("adopt", "adopt: no job");
    }

    #[test]
    fn adopt_no_children() {
        replay("adopt", "adopt: no children");
    }

    #[test]
    fn adopt_its_own_child() {
        replay("adopt", "adopt: its own child");
    }

    #[test]
    fn adopt_a_child_named_twice() {
        replay("adopt", "adopt: a child named twice");
    }

    #[test]
    fn adopt_an_option_after_the_children() {
        replay("adopt", "adopt: an option after the children");
    }

    #[test]
    fn adopt_a_thousand_children_and_one() {
        replay("adopt", "adopt: a thousand children and one");
    }

    #[test]
    fn adopt_dependencies_without_their_count() {
        replay("adopt", "adopt: dependencies without their count");
    }
}

mod group {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("group", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("group", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("group", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("group", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("group", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("group", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("group", "KEYS[3] holds a string");
    }

    #[test]
    fn keys_4_holds_a_string() {
        replay("group", "KEYS[4] holds a string");
    }

    #[test]
    fn keys_5_holds_a_string() {
        replay("group", "KEYS[5] holds a string");
    }

    #[test]
    fn group_a_group_s_weight_cap_rate_and_most() {
        replay("group", "group: a group's weight, cap, rate and most");
    }

    #[test]
    fn group_no_option_reads_the_group() {
        replay("group", "group: no option reads the group");
    }

    #[test]
    fn group_paused_it_leaves_the_index() {
        replay("group", "group: paused, it leaves the index");
    }

    #[test]
    fn group_resumed_it_enters_the_index_and_wakes_a_claim() {
        replay("group", "group: resumed, it enters the index and wakes a claim");
    }

    #[test]
    fn group_its_cap_raised_it_is_ready_again() {
        replay("group", "group: its cap raised, it is ready again");
    }

    #[test]
    fn group_the_defaults_again_forget_an_empty_group() {
        replay("group", "group: the defaults again forget an empty group");
    }

    #[test]
    fn group_rate_without_per() {
        replay("group", "group: RATE without PER");
    }

    #[test]
    fn group_per_without_rate() {
        replay("group", "group: PER without RATE");
    }

    #[test]
    fn group_a_weight_of_0() {
        replay("group", "group: a weight of 0");
    }

    #[test]
    fn group_a_weight_over_1000() {
        replay("group", "group: a weight over 1000");
    }

    #[test]
    fn group_no_name() {
        replay("group", "group: no name");
    }

    #[test]
    fn group_settings_that_do_not_read() {
        replay("group", "group: settings that do not read");
    }

    #[test]
    fn group_its_pending_set_of_another_type() {
        replay("group", "group: its pending set of another type");
    }

    #[test]
    fn group_resumed_it_wakes_a_waiting_claim() {
        replay("group", "group: resumed, it wakes a waiting claim");
    }
}

mod groups {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("groups", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("groups", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("groups", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("groups", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("groups", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("groups", "KEYS[2] holds a string");
    }

    #[test]
    fn groups_every_group_no_next_page() {
        replay("groups", "groups: every group, no next page");
    }

    #[test]
    fn groups_a_page_after_a_name_with_the_next() {
        replay("groups", "groups: a page after a name, with the next");
    }

    #[test]
    fn groups_a_limit_of_0() {
        replay("groups", "groups: a limit of 0");
    }

    #[test]
    fn groups_after_without_its_group() {
        replay("groups", "groups: AFTER without its group");
    }
}

mod permit {
    use crate::replay;

    #[test]
    fn one_key_only() {
        replay("permit", "one key only");
    }

    #[test]
    fn one_key_too_many() {
        replay("permit", "one key too many");
    }

    #[test]
    fn the_last_key_another_queue_s() {
        replay("permit", "the last key another queue's");
    }

    #[test]
    fn the_last_two_keys_swapped() {
        replay("permit", "the last two keys swapped");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("permit", "KEYS[1] holds a string");
    }

    #[test]
    fn keys_2_holds_a_string() {
        replay("permit", "KEYS[2] holds a string");
    }

    #[test]
    fn keys_3_holds_a_string() {
        replay("permit", "KEYS[3] holds a string");
    }

    #[test]
    fn permit_no_exact_rate_claim_freely() {
        replay("permit", "permit: no exact rate, claim freely");
    }

    #[test]
    fn permit_no_definition_at_all_claim_freely() {
        replay("permit", "permit: no definition at all, claim freely");
    }

    #[test]
    fn permit_a_rate_of_0_is_none() {
        replay("permit", "permit: a rate of 0 is none");
    }

    #[test]
    fn permit_a_rate_with_room_grants_all_logged_at_now() {
        replay("permit", "permit: a rate with room grants all, logged at now");
    }

    #[test]
    fn permit_only_the_rate_s_room() {
        replay("permit", "permit: only the rate's room");
    }

    #[test]
    fn permit_none_left_the_wait_for_the_oldest() {
        replay("permit", "permit: none left, the wait for the oldest");
    }

    #[test]
    fn permit_a_permit_counts_for_per_and_its_hold() {
        replay("permit", "permit: a permit counts for PER and its hold");
    }

    #[test]
    fn permit_permits_past_the_window_leave_it_trimmed() {
        replay("permit", "permit: permits past the window leave it, trimmed");
    }

    #[test]
    fn permit_numbers_go_on_from_the_definition_s() {
        replay("permit", "permit: numbers go on from the definition's");
    }

    #[test]
    fn permit_numbers_go_on_from_a_stored_07() {
        replay("permit", "permit: numbers go on from a stored 07");
    }

    #[test]
    fn permit_count_0() {
        replay("permit", "permit: COUNT 0");
    }

    #[test]
    fn permit_count_over_1000() {
        replay("permit", "permit: COUNT over 1000");
    }

    #[test]
    fn permit_an_unknown_option() {
        replay("permit", "permit: an unknown option");
    }

    #[test]
    fn permit_a_rate_that_is_no_integer() {
        replay("permit", "permit: a rate that is no integer");
    }

    #[test]
    fn permit_a_rate_over_100000() {
        replay("permit", "permit: a rate over 100000");
    }

    #[test]
    fn permit_a_rate_without_its_period() {
        replay("permit", "permit: a rate without its period");
    }

    #[test]
    fn permit_a_period_under_100_ms() {
        replay("permit", "permit: a period under 100 ms");
    }

    #[test]
    fn permit_a_negative_count_of_permits() {
        replay("permit", "permit: a negative count of permits");
    }

    #[test]
    fn permit_a_concurrency_with_room_grants_running_past_hold_and_lease() {
        replay("permit", "permit: a concurrency with room grants, running past hold and lease");
    }

    #[test]
    fn permit_only_the_concurrency_s_room() {
        replay("permit", "permit: only the concurrency's room");
    }

    #[test]
    fn permit_no_room_the_wait_for_the_first_to_stop() {
        replay("permit", "permit: no room, the wait for the first to stop");
    }

    #[test]
    fn permit_lapsed_running_permits_free_their_room_trimmed() {
        replay("permit", "permit: lapsed running permits free their room, trimmed");
    }

    #[test]
    fn permit_a_rate_and_a_concurrency_the_lesser_room() {
        replay("permit", "permit: a rate and a concurrency, the lesser room");
    }

    #[test]
    fn permit_both_at_their_limit_the_longer_wait() {
        replay("permit", "permit: both at their limit, the longer wait");
    }

    #[test]
    fn permit_a_concurrency_of_0_is_none() {
        replay("permit", "permit: a concurrency of 0 is none");
    }

    #[test]
    fn permit_a_concurrency_without_lease() {
        replay("permit", "permit: a concurrency without LEASE");
    }

    #[test]
    fn permit_a_concurrency_without_its_running_key() {
        replay("permit", "permit: a concurrency without its running key");
    }

    #[test]
    fn permit_a_rate_alone_needs_no_running_key() {
        replay("permit", "permit: a rate alone needs no running key");
    }

    #[test]
    fn permit_a_concurrency_over_100000() {
        replay("permit", "permit: a concurrency over 100000");
    }

    #[test]
    fn permit_a_concurrency_that_is_no_integer() {
        replay("permit", "permit: a concurrency that is no integer");
    }

    #[test]
    fn permit_running_that_is_no_sorted_set() {
        replay("permit", "permit: running that is no sorted set");
    }

    #[test]
    fn permit_a_lease_of_0() {
        replay("permit", "permit: a LEASE of 0");
    }
}

mod renew {
    use crate::replay;

    #[test]
    fn one_key_too_many() {
        replay("renew", "one key too many");
    }

    #[test]
    fn keys_1_holds_a_string() {
        replay("renew", "KEYS[1] holds a string");
    }

    #[test]
    fn renew_a_running_permit_runs_past_the_lease_and_the_slack_from_now() {
        replay("renew", "renew: a running permit runs past the lease and the slack from now");
    }

    #[test]
    fn renew_one_gone_is_not_written_back() {
        replay("renew", "renew: one gone is not written back");
    }

    #[test]
    fn renew_one_lapsed_but_not_yet_trimmed_is_gone() {
        replay("renew", "renew: one lapsed but not yet trimmed is gone");
    }

    #[test]
    fn renew_never_shortened() {
        replay("renew", "renew: never shortened");
    }

    #[test]
    fn renew_a_number_spelt_07_is_permit_7() {
        replay("renew", "renew: a number spelt 07 is permit 7");
    }

    #[test]
    fn renew_no_permit_named() {
        replay("renew", "renew: no permit named");
    }

    #[test]
    fn renew_a_lease_of_0() {
        replay("renew", "renew: a lease of 0");
    }

    #[test]
    fn renew_over_1000_permits() {
        replay("renew", "renew: over 1000 permits");
    }

    #[test]
    fn renew_a_permit_that_is_no_number() {
        replay("renew", "renew: a permit that is no number");
    }

    #[test]
    fn renew_permit_0() {
        replay("renew", "renew: permit 0");
    }
}
