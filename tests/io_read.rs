//! The read half of the Memory IO contract, rule by rule (IO-R*, IO-T1,
//! IO-G2 … IO-G6), on the real component in wasmtime over every backend.

mod support;

use engram::audit::Outcome as Audited;
use engram::io::{ReadError, WriteResult};
use engram::types::*;
use std::sync::atomic::Ordering;
use support::*;

const TYPES: [RecordType; 3] = [RecordType::Fact, RecordType::Event, RecordType::State];

backend_test! {
    fn io_r1_a_read_never_mixes_record_types(fx) {
        // proves IO-R1
        let mut alice = fx.open("alice");
        let written = [
            (
                RecordType::Fact,
                accept(&mut alice, "f", fact("user.diet", "x")),
            ),
            (RecordType::Event, accept(&mut alice, "e", ingested(5, "x"))),
            (RecordType::State, accept(&mut alice, "s", state(5, "x"))),
        ];
        for (kind, id) in &written {
            for other in TYPES {
                let found = records(&mut alice, other, by_id(id));
                assert_eq!(
                    found.len(),
                    usize::from(other == *kind),
                    "{}: {kind:?} id read as {other:?}",
                    fx.name
                );
            }
            assert_eq!(
                ids(&records(&mut alice, *kind, limit(10))),
                std::slice::from_ref(id),
                "{}",
                fx.name
            );
        }
    }
}

backend_test! {
    fn io_r4_each_selector_applies_only_to_its_record_types(fx) {
        // proves IO-R4, IO-R2
        let mut alice = fx.open("alice");
        for kind in [RecordType::Event, RecordType::State] {
            assert_eq!(
                refused(&mut alice, kind, by_key("user.diet")),
                ReadError::SelectorNotAllowed,
                "ByKey on {kind:?}"
            );
            records(&mut alice, kind, range(0, 10, 5));
            records(&mut alice, kind, latest(5));
        }
        assert_eq!(
            refused(&mut alice, RecordType::Fact, range(0, 10, 5)),
            ReadError::SelectorNotAllowed
        );
        assert_eq!(
            refused(&mut alice, RecordType::Fact, latest(5)),
            ReadError::SelectorNotAllowed
        );
        records(&mut alice, RecordType::Fact, by_key("user.diet"));
        for kind in TYPES {
            records(&mut alice, kind, by_id("0000000000000001"));
            records(&mut alice, kind, limit(5));
        }
        let trail = fx.trail();
        assert_eq!(
            trail
                .iter()
                .filter(|e| e.outcome == Audited::Failed)
                .count(),
            4,
            "{}",
            fx.name
        );
    }
}

backend_test! {
    fn io_r4_a_key_not_in_normalized_form_is_refused_never_rewritten(fx) {
        // proves IO-R4, S-KEY
        let mut alice = fx.open("alice");
        accept(&mut alice, "f", fact("user.diet", "x"));
        for key in [
            "User.Diet",
            "USER.DIET",
            "user diet",
            " user.diet",
            "user.diet ",
            "user..diet",
            "user/diet",
            "",
        ] {
            assert_eq!(
                refused(&mut alice, RecordType::Fact, by_key(key)),
                ReadError::InvalidKey,
                "{key:?}"
            );
            let write = alice
                .write(&request("alice", &format!("w{key}"), fact(key, "y")))
                .unwrap();
            assert_eq!(
                write,
                WriteResult::Rejected,
                "{}: write with key {key:?}",
                fx.name
            );
        }
        assert_eq!(
            records(&mut alice, RecordType::Fact, limit(10)).len(),
            1,
            "no rewritten key was stored"
        );
    }
}

backend_test! {
    fn a_time_range_is_the_closed_window_it_names(fx) {
        // proves S-RANGE, IO-R4 (ByTimeRange on EVENT and STATE, truncated at its limit)
        let mut alice = fx.open("alice");
        for ts in 0..10 {
            accept(&mut alice, &format!("e{ts}"), ingested(ts, "x"));
            accept(&mut alice, &format!("s{ts}"), state(ts, "x"));
        }
        let times = |rs: Vec<StoredRecord>| rs.iter().map(timestamp_of).collect::<Vec<_>>();
        assert_eq!(
            times(records(&mut alice, RecordType::Event, range(3, 6, 10))),
            [3, 4, 5, 6],
            "{}",
            fx.name
        );
        assert_eq!(
            times(records(&mut alice, RecordType::State, range(3, 6, 10))),
            [6, 5, 4, 3],
            "{}",
            fx.name
        );
        assert_eq!(
            times(records(&mut alice, RecordType::Event, range(4, 4, 10))),
            [4]
        );
        assert_eq!(
            times(records(&mut alice, RecordType::Event, range(20, 30, 10))),
            Vec::<i64>::new()
        );
        // The limit truncates in the type's order.
        assert_eq!(
            times(records(&mut alice, RecordType::Event, range(0, 9, 3))),
            [0, 1, 2]
        );
        assert_eq!(
            times(records(&mut alice, RecordType::State, range(0, 9, 3))),
            [9, 8, 7]
        );
    }
}

backend_test! {
    fn io_r6_io_g2_a_read_may_return_nothing(fx) {
        // proves IO-R6, IO-G2
        let mut alice = fx.open("alice");
        for kind in TYPES {
            assert!(
                records(&mut alice, kind, limit(5)).is_empty(),
                "{}",
                fx.name
            );
            assert!(records(&mut alice, kind, by_id("no-such-id")).is_empty());
        }
        assert!(records(&mut alice, RecordType::Fact, by_key("no.such.key")).is_empty());
        assert!(records(&mut alice, RecordType::Event, latest(5)).is_empty());
        assert!(records(&mut alice, RecordType::State, range(i64::MIN, i64::MAX, 5)).is_empty());
    }
}

backend_test! {
    fn io_r7_events_are_oldest_first_with_ties_in_write_order(fx) {
        // proves IO-R7, S-ORDER
        let mut alice = fx.open("alice");
        let times = [5, 3, 5, 1, 3, 5, 5];
        let written: Vec<(i64, String)> = times
            .iter()
            .enumerate()
            .map(|(i, &ts)| (ts, accept(&mut alice, &format!("e{i}"), ingested(ts, "x"))))
            .collect();
        let mut expected = written.clone();
        expected.sort_by_key(|(ts, _)| *ts); // stable: ties keep write order
        let expected: Vec<String> = expected.into_iter().map(|(_, id)| id).collect();
        for _ in 0..3 {
            assert_eq!(
                ids(&records(&mut alice, RecordType::Event, limit(20))),
                expected,
                "{}",
                fx.name
            );
            assert_eq!(
                ids(&records(&mut alice, RecordType::Event, range(0, 10, 20))),
                expected
            );
        }
        // Latest picks the newest and still answers oldest first.
        assert_eq!(
            ids(&records(&mut alice, RecordType::Event, latest(3))),
            expected[4..].to_vec(),
            "{}",
            fx.name
        );
    }
}

backend_test! {
    fn io_r7_states_are_newest_first_with_ties_latest_written_first(fx) {
        // proves IO-R7, S-ORDER
        let mut alice = fx.open("alice");
        let times = [5, 3, 5, 1, 3, 5];
        let written: Vec<(i64, String)> = times
            .iter()
            .enumerate()
            .map(|(i, &ts)| (ts, accept(&mut alice, &format!("s{i}"), state(ts, "x"))))
            .collect();
        let mut expected = written.clone();
        expected.reverse();
        expected.sort_by_key(|(ts, _)| std::cmp::Reverse(*ts));
        let expected: Vec<String> = expected.into_iter().map(|(_, id)| id).collect();
        for _ in 0..3 {
            assert_eq!(
                ids(&records(&mut alice, RecordType::State, limit(20))),
                expected,
                "{}",
                fx.name
            );
            assert_eq!(
                ids(&records(&mut alice, RecordType::State, latest(20))),
                expected
            );
            assert_eq!(
                ids(&records(&mut alice, RecordType::State, range(0, 10, 20))),
                expected
            );
        }
        assert_eq!(
            ids(&records(&mut alice, RecordType::State, latest(2))),
            expected[..2].to_vec()
        );
    }
}

backend_test! {
    fn io_r7_facts_are_in_key_order(fx) {
        // proves IO-R7, S-ORDER
        let mut alice = fx.open("alice");
        let keys = [
            "user.name",
            "a.b",
            "user.diet",
            "z",
            "user-x",
            "user_x",
            "user.diet.extra",
        ];
        for (i, key) in keys.iter().enumerate() {
            accept(&mut alice, &format!("f{i}"), fact(key, "x"));
        }
        let read: Vec<String> = records(&mut alice, RecordType::Fact, limit(20))
            .iter()
            .map(|r| match r {
                StoredRecord::Fact(f) => f.fact.key.clone(),
                _ => panic!("a FACT read returned another type"),
            })
            .collect();
        let mut sorted: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        sorted.sort();
        assert_eq!(read, sorted, "{}", fx.name);
    }
}

backend_test! {
    fn io_t1_timestamps_are_signed_64_bit_and_order_as_numbers(fx) {
        // proves IO-T1
        let mut alice = fx.open("alice");
        let times = [
            i64::MAX,
            0,
            -1,
            i64::MIN,
            1,
            -1_000_000_000_000,
            1_700_000_000_000,
        ];
        for (i, ts) in times.iter().enumerate() {
            accept(&mut alice, &format!("e{i}"), ingested(*ts, "x"));
        }
        let mut sorted = times.to_vec();
        sorted.sort();
        let read: Vec<i64> = records(&mut alice, RecordType::Event, range(i64::MIN, i64::MAX, 20))
            .iter()
            .map(timestamp_of)
            .collect();
        assert_eq!(read, sorted, "{}", fx.name);
        let negative: Vec<i64> = records(&mut alice, RecordType::Event, range(i64::MIN, -1, 20))
            .iter()
            .map(timestamp_of)
            .collect();
        assert_eq!(negative, [i64::MIN, -1_000_000_000_000, -1]);
    }
}

backend_test! {
    fn io_g3_an_ingested_memory_is_read_back_without_derived_or_index_data(fx) {
        // proves IO-G3, IO-G4, B5-S3: keywords are index data and stay inside
        let mut alice = fx.open("alice");
        let id = accept(&mut alice, "e", ingested(7, "Asked for a flight to Paris"));
        let back = records(&mut alice, RecordType::Event, by_id(&id));
        let StoredRecord::Event(StoredEvent {
            id: got,
            timestamp,
            payload: StoredEventPayload::Ingested(view),
        }) = &back[0]
        else {
            panic!("an ingested memory comes back as one");
        };
        assert_eq!((got.as_str(), *timestamp), (id.as_str(), 7));
        assert_eq!(
            view,
            &IngestedMemoryView {
                session_ref: "session-1".into(),
                summary: "Asked for a flight to Paris".into()
            }
        );
    }
}

backend_test! {
    fn io_g4_a_storage_fault_is_a_typed_error_that_exposes_no_detail(fx) {
        // proves IO-G4, IO-W8
        let faulty = Faulty::over(fx.backend.clone());
        let mut alice = fx.open_over("alice", faulty.clone());
        accept(&mut alice, "f", fact("user.diet", "x"));
        faulty.fail_reads.store(true, Ordering::SeqCst);
        for (kind, selector) in [
            (RecordType::Fact, by_key("user.diet")),
            (RecordType::Fact, by_id("0000000000000001")),
            (RecordType::Event, latest(5)),
            (RecordType::State, range(0, 1, 5)),
        ] {
            assert_eq!(
                refused(&mut alice, kind, selector),
                ReadError::StorageUnavailable,
                "{}",
                fx.name
            );
        }
        faulty.fail_reads.store(false, Ordering::SeqCst);
        faulty.fail_commits.store(true, Ordering::SeqCst);
        let before = fx.dump();
        let answer = alice
            .write(&request("alice", "w", ingested(1, "x")))
            .unwrap();
        assert_eq!(answer, WriteResult::Rejected, "{}", fx.name);
        assert_eq!(fx.dump(), before, "a failed commit stores nothing");
        // The detail is kept where operators look, never in the answer.
        let trail = fx.trail();
        assert!(
            trail
                .iter()
                .filter(|e| e
                    .reason
                    .as_deref()
                    .is_some_and(|r| r.contains(FAULT_DETAIL)))
                .count()
                >= 5
        );
        faulty.fail_commits.store(false, Ordering::SeqCst);
        accept(&mut alice, "w", ingested(1, "x"));
    }
}

backend_test! {
    fn io_g6_every_out_of_bounds_read_is_a_typed_error_that_touches_nothing(fx) {
        // proves IO-G6, IO-R4 (limit mandatory and bounded)
        let faulty = Faulty::over(fx.backend.clone());
        let mut alice = fx.open_over("alice", faulty.clone());
        accept(&mut alice, "e", ingested(1, "x"));
        faulty.reset_counts();
        let over = CEILING + 1;
        let mut cases = vec![
            (
                RecordType::Event,
                range(0, 10, 0),
                ReadError::LimitOutOfBounds(CEILING),
            ),
            (
                RecordType::Event,
                range(0, 10, over),
                ReadError::LimitOutOfBounds(CEILING),
            ),
            (
                RecordType::State,
                range(0, 10, u32::MAX),
                ReadError::LimitOutOfBounds(CEILING),
            ),
            (RecordType::Event, range(10, 0, 5), ReadError::InvalidRange),
            (
                RecordType::State,
                range(i64::MAX, i64::MIN, 5),
                ReadError::InvalidRange,
            ),
        ];
        for kind in [RecordType::Event, RecordType::State] {
            cases.push((kind, latest(0), ReadError::LimitOutOfBounds(CEILING)));
            cases.push((kind, latest(over), ReadError::LimitOutOfBounds(CEILING)));
        }
        for kind in TYPES {
            cases.push((kind, limit(0), ReadError::LimitOutOfBounds(CEILING)));
            cases.push((kind, limit(over), ReadError::LimitOutOfBounds(CEILING)));
        }
        for (kind, selector, error) in cases {
            assert_eq!(
                refused(&mut alice, kind, selector.clone()),
                error,
                "{}: {kind:?} {selector:?}",
                fx.name
            );
        }
        assert_eq!(
            faulty.gets.load(Ordering::SeqCst) + faulty.scanned.load(Ordering::SeqCst),
            0,
            "{}: refused reads touch no storage",
            fx.name
        );
        // The ceiling itself is allowed.
        records(&mut alice, RecordType::Event, limit(CEILING));
        records(&mut alice, RecordType::Event, range(10, 10, CEILING));
    }
}

backend_test! {
    fn io_g6_a_read_touches_at_most_its_limit_of_entries(fx) {
        // proves IO-G6: the bound holds at the storage boundary, not only in the answer
        let faulty = Faulty::over(fx.backend.clone());
        let mut alice = fx.open_over("alice", faulty.clone());
        for i in 0..120 {
            accept(&mut alice, &format!("e{i}"), ingested(i, "x"));
            accept(&mut alice, &format!("s{i}"), state(i, "x"));
            accept(
                &mut alice,
                &format!("f{i}"),
                fact(&format!("key.k{i:03}"), "x"),
            );
        }
        for n in [1u32, 7, CEILING] {
            for (kind, selector) in [
                (RecordType::Event, limit(n)),
                (RecordType::Event, latest(n)),
                (RecordType::Event, range(0, 200, n)),
                (RecordType::State, limit(n)),
                (RecordType::State, latest(n)),
                (RecordType::State, range(0, 200, n)),
                (RecordType::Fact, limit(n)),
            ] {
                faulty.reset_counts();
                let got = records(&mut alice, kind, selector.clone());
                assert_eq!(got.len(), n as usize, "{}: {kind:?} {selector:?}", fx.name);
                assert!(faulty.largest_scan_limit.load(Ordering::SeqCst) <= u64::from(n));
                assert!(faulty.scanned.load(Ordering::SeqCst) <= u64::from(n));
                assert!(
                    faulty.gets.load(Ordering::SeqCst) <= u64::from(n),
                    "one get per record returned"
                );
            }
        }
    }
}

backend_test! {
    fn a_value_stored_in_the_first_format_is_refused_by_name_never_misread(fx) {
        // proves IO-G4, S-FORMAT: stores written before the binary encoding hold JSON
        // values (format 1), which this build does not read (S-FORMAT):
        // a read of one fails as the store's fault, with the reason named in
        // the trail, and leaves the value as it was.
        let mut alice = fx.open("alice");
        let id = accept(&mut alice, "old", state(7, "mission.current"));
        let mut key = (b"alice".len() as u32).to_be_bytes().to_vec();
        key.extend_from_slice(b"alice");
        key.push(b'R');
        key.extend_from_slice(id.as_bytes());
        let mut json = vec![1u8];
        json.extend_from_slice(
            format!(
                r#"{{"State":{{"id":"{id}","state":{{"timestamp":7,"payload":{{"subject":"mission.current","properties":"{{\"step\":1}}"}}}}}}}}"#
            )
            .as_bytes(),
        );
        fx.backend
            .commit(&[], &[engram::backend::Op::Put(key.clone(), json.clone())])
            .unwrap();
        for selector in [by_id(&id), latest(5)] {
            assert_eq!(
                refused(&mut alice, RecordType::State, selector),
                ReadError::StorageUnavailable,
                "{}",
                fx.name
            );
        }
        let named = fx
            .trail()
            .iter()
            .filter(|e| {
                e.reason
                    .as_deref()
                    .is_some_and(|r| r.contains("the first store format (format byte 1"))
            })
            .count();
        assert_eq!(named, 2, "{}", fx.name);
        assert_eq!(fx.backend.get(&key).unwrap(), Some(json), "{}", fx.name);
    }
}
