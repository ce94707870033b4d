//! FACT versions in time (MT-2): a write of a key supersedes its current
//! version, which is closed in transaction time and kept; bounded reads of
//! a key's history and of its version as of a valid or a transaction time.

mod support;

use engram::history::{AsOfRequest, TimeAxis, VersionsRequest};
use engram::io::ReadError;
use engram::types::*;
use engram::{Config, Domain, Engram, Mode};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, LazyLock};
use support::*;

/// The engine's clock for these tests, set by hand.
static NOW: AtomicI64 = AtomicI64::new(0);

fn engram_with_clock() -> &'static Engram {
    static ENGRAM: LazyLock<Engram> = LazyLock::new(|| {
        Engram::with_config(Config {
            read_limit_ceiling: CEILING,
            clock: Arc::new(|| NOW.load(Ordering::SeqCst)),
            ..Config::default()
        })
        .expect("the engine compiles")
    });
    &ENGRAM
}

fn open(fx: &Fixture) -> Domain {
    engram_with_clock()
        .open("alice", Mode::Online, fx.backend.clone(), fx.audit.clone())
        .unwrap()
}

fn diet(content: &str, valid_at: i64, invalid_at: Option<i64>) -> MemoryRecord {
    let mut memory = semantic(content);
    memory.valid_at = valid_at;
    memory.invalid_at = invalid_at;
    MemoryRecord::Fact(Fact {
        key: "user.diet".into(),
        payload: FactPayload::Semantic(memory),
    })
}

fn content(fact: &StoredFact) -> &str {
    match &fact.fact.payload {
        FactPayload::Semantic(m) => &m.content,
        _ => "",
    }
}

fn versions(domain: &mut Domain, key: &str, limit: u32) -> Result<Vec<StoredFact>, ReadError> {
    let request = VersionsRequest {
        request_id: "h".into(),
        key: key.into(),
        limit,
    };
    domain.versions(&request).unwrap()
}

/// Each version's content and transaction times.
fn timeline(history: &[StoredFact]) -> Vec<(&str, i64, Option<i64>)> {
    history
        .iter()
        .map(|v| (content(v), v.created_at, v.superseded_at))
        .collect()
}

fn as_of(domain: &mut Domain, axis: TimeAxis, at: i64) -> Option<String> {
    let request = AsOfRequest {
        request_id: "a".into(),
        key: "user.diet".into(),
        axis,
        at,
        limit: 10,
    };
    domain
        .as_of(&request)
        .unwrap()
        .unwrap()
        .map(|f| content(&f).to_owned())
}

/// Three versions of `user.diet`, learned at 100, 200 and 300: vegetarian
/// from valid time 10 on; vegan from 20 to 30; pescatarian from 40 on.
fn three_versions(fx: &Fixture) -> (Domain, Vec<String>) {
    let mut alice = open(fx);
    let mut ids = Vec::new();
    for (i, (t, record)) in [
        (100, diet("vegetarian", 10, None)),
        (200, diet("vegan", 20, Some(30))),
        (300, diet("pescatarian", 40, None)),
    ]
    .into_iter()
    .enumerate()
    {
        NOW.store(t, Ordering::SeqCst);
        ids.push(accept(&mut alice, &format!("v{i}"), record));
    }
    (alice, ids)
}

backend_test! {
    fn mt_2_superseding_keeps_every_version_closed_in_transaction_time(fx) {
        // proves MT-2
        let _clock = CLOCK.lock().unwrap();
        let (mut alice, written) = three_versions(&fx);
        let history = versions(&mut alice, "user.diet", 10).unwrap();
        let got = timeline(&history);
        assert_eq!(
            got,
            [
                ("pescatarian", 300, None),
                ("vegan", 200, Some(300)),
                ("vegetarian", 100, Some(200))
            ],
            "{}",
            fx.name
        );
        assert_eq!(
            history
                .iter()
                .map(|v| v.id.clone())
                .rev()
                .collect::<Vec<_>>(),
            written
        );
        // ByKey answers the current version; ById still finds the old ones.
        assert_eq!(
            ids(&records(&mut alice, RecordType::Fact, by_key("user.diet"))),
            [written[2].clone()]
        );
        assert_eq!(
            records(&mut alice, RecordType::Fact, by_id(&written[0])).len(),
            1
        );
        // The bound holds: the newest versions only.
        assert_eq!(versions(&mut alice, "user.diet", 2).unwrap().len(), 2);
        assert!(versions(&mut alice, "user.other", 10).unwrap().is_empty());
    }
}

/// The tests of this file share the hand-set clock.
static CLOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

backend_test! {
    fn mt_2_as_of_reads_answer_on_both_time_axes(fx) {
        // proves MT-2: valid time is the writer's, transaction time the engine's
        let _clock = CLOCK.lock().unwrap();
        let (mut alice, _) = three_versions(&fx);
        // What the engine knew at a transaction time.
        for (at, expected) in [
            (50, None),
            (100, Some("vegetarian")),
            (199, Some("vegetarian")),
            (200, Some("vegan")),
            (299, Some("vegan")),
            (300, Some("pescatarian")),
            (i64::MAX, Some("pescatarian")),
        ] {
            assert_eq!(
                as_of(&mut alice, TimeAxis::Transaction, at).as_deref(),
                expected,
                "{}: known at {at}",
                fx.name
            );
        }
        // What was true in the world at a valid time, as known now.
        for (at, expected) in [
            (5, None),
            (10, Some("vegetarian")),
            (19, Some("vegetarian")),
            (20, Some("vegan")),
            (29, Some("vegan")),
            (30, Some("vegetarian")),
            (40, Some("pescatarian")),
            (1_000, Some("pescatarian")),
        ] {
            assert_eq!(
                as_of(&mut alice, TimeAxis::Valid, at).as_deref(),
                expected,
                "{}: valid at {at}",
                fx.name
            );
        }
    }
}

backend_test! {
    fn mt_2_history_reads_are_bounded_and_refuse_bad_requests(fx) {
        // proves MT-2, IO-G6
        let _clock = CLOCK.lock().unwrap();
        let (mut alice, _) = three_versions(&fx);
        assert_eq!(
            versions(&mut alice, "user.diet", 0),
            Err(ReadError::LimitOutOfBounds(CEILING))
        );
        assert_eq!(
            versions(&mut alice, "user.diet", CEILING + 1),
            Err(ReadError::LimitOutOfBounds(CEILING))
        );
        assert_eq!(
            versions(&mut alice, "User.Diet", 5),
            Err(ReadError::InvalidKey)
        );
        let request = AsOfRequest {
            request_id: "".into(),
            key: "user.diet".into(),
            axis: TimeAxis::Valid,
            at: 0,
            limit: 5,
        };
        assert_eq!(
            alice.as_of(&request).unwrap(),
            Err(ReadError::InvalidRequestId),
            "{}",
            fx.name
        );
        // An as-of read looks at its newest `limit` versions only.
        let request = AsOfRequest {
            request_id: "a".into(),
            key: "user.diet".into(),
            axis: TimeAxis::Valid,
            at: 15,
            limit: 2,
        };
        assert_eq!(
            alice.as_of(&request).unwrap(),
            Ok(None),
            "vegetarian is the third version"
        );
    }
}

thread_local! {
    /// The clock of [`engram_with_odd_clock`] on this thread: the time it
    /// answers next, and how much it moves at each call.
    static ODD_CLOCK: std::cell::Cell<(i64, i64)> = const { std::cell::Cell::new((0, 0)) };
}

/// An engine whose clock is this thread's [`ODD_CLOCK`]: one that never
/// moves, or one that goes backwards.
fn engram_with_odd_clock() -> &'static Engram {
    static ENGRAM: LazyLock<Engram> = LazyLock::new(|| {
        Engram::with_config(Config {
            read_limit_ceiling: CEILING,
            clock: Arc::new(|| {
                ODD_CLOCK.with(|clock| {
                    let (now, step) = clock.get();
                    clock.set((now + step, step));
                    now
                })
            }),
            ..Config::default()
        })
        .expect("the engine compiles")
    });
    &ENGRAM
}

/// `agent`'s domain over the fixture's store in `mode`, under the odd
/// clock.
fn odd_clock_domain(fx: &Fixture, agent: &str, mode: Mode) -> Domain {
    engram_with_odd_clock()
        .open(agent, mode, fx.backend.clone(), fx.audit.clone())
        .unwrap()
}

fn fact(key: &str, content: &str) -> MemoryRecord {
    MemoryRecord::Fact(Fact {
        key: key.into(),
        payload: FactPayload::Semantic(semantic(content)),
    })
}

backend_test! {
    fn mt_2_transaction_time_strictly_increases_in_a_domain_under_a_frozen_or_backward_clock(fx) {
        // proves MT-2: every FACT version gets a transaction time later than
        // every one before it in its domain, whatever the host's clock says,
        // and a superseded version is closed at its successor's time.
        for (name, start, step) in [("frozen", 5_000, 0), ("backwards", 9_000_000, -1_000)] {
            ODD_CLOCK.with(|clock| clock.set((start, step)));
            let agent = format!("clock-{name}");
            let mut domain = odd_clock_domain(&fx, &agent, Mode::Online);
            // Versions of two keys, interleaved.
            let mut written = Vec::new();
            for (i, (key, content)) in [
                ("user.mood", "calm"),
                ("user.city", "Porto"),
                ("user.mood", "glad"),
                ("user.mood", "tired"),
                ("user.city", "Lisbon"),
                ("user.mood", "happy"),
            ]
            .into_iter()
            .enumerate()
            {
                written.push(accept(&mut domain, &format!("{name}-{i}"), fact(key, content)));
            }
            let mut held = std::collections::HashMap::new();
            for key in ["user.mood", "user.city"] {
                let mut chain = versions(&mut domain, key, 10).unwrap();
                chain.reverse(); // oldest first
                for pair in chain.windows(2) {
                    assert_eq!(
                        pair[0].superseded_at,
                        Some(pair[1].created_at),
                        "{name}: {key}: a version is closed at its successor's time"
                    );
                }
                assert_eq!(chain.last().unwrap().superseded_at, None);
                for version in chain {
                    held.insert(version.id.clone(), version);
                }
            }
            let times: Vec<i64> = written.iter().map(|id| held[id].created_at).collect();
            assert!(
                times.windows(2).all(|t| t[0] < t[1]),
                "{name}: transaction times in write order: {times:?}"
            );
            // As of each version's own time, it is the one the engine knew.
            for id in &written {
                let version = &held[id];
                let request = AsOfRequest {
                    request_id: "a".into(),
                    key: version.fact.key.clone(),
                    axis: TimeAxis::Transaction,
                    at: version.created_at,
                    limit: 10,
                };
                let known = domain.as_of(&request).unwrap().unwrap().map(|f| f.id);
                assert_eq!(known.as_ref(), Some(id), "{name}: as of {}", version.created_at);
            }
        }
    }
}

backend_test! {
    fn mt_2_after_an_import_a_new_version_is_later_than_every_imported_one(fx) {
        // proves MT-2: an import moves the domain's transaction clock past the
        // versions it brings, so a host whose clock is behind them still
        // writes a later version
        ODD_CLOCK.with(|clock| clock.set((8_000_000, 0)));
        let mut source = odd_clock_domain(&fx, "alice", Mode::Online);
        for (i, content) in ["calm", "glad", "tired"].into_iter().enumerate() {
            accept(&mut source, &format!("w{i}"), fact("user.mood", content));
        }
        drop(source);
        let items = export_all(&mut odd_clock_domain(&fx, "alice", Mode::Maintenance));
        let imported = versions(&mut odd_clock_domain(&fx, "alice", Mode::Online), "user.mood", 10).unwrap();
        let latest = imported.iter().map(|v| v.created_at).max().unwrap();

        let target = fx.another();
        let mut into = odd_clock_domain(&target, "alice", Mode::Maintenance);
        assert_eq!(into.import(&items).unwrap().unwrap() as usize, items.len());
        drop(into);
        // A clock far behind the imported versions.
        ODD_CLOCK.with(|clock| clock.set((1_000, 0)));
        let mut alice = odd_clock_domain(&target, "alice", Mode::Online);
        accept(&mut alice, "after", fact("user.city", "Porto"));
        let city = versions(&mut alice, "user.city", 10).unwrap();
        assert!(city[0].created_at > latest, "{} after {latest}", city[0].created_at);
        accept(&mut alice, "again", fact("user.mood", "happy"));
        let mood = versions(&mut alice, "user.mood", 10).unwrap();
        assert_eq!(mood[1].superseded_at, Some(mood[0].created_at));
        assert!(mood[0].created_at > city[0].created_at);
    }
}

/// Lays a domain's fact keys out as the builds before 2026-11-25 did: a key's
/// entry holds its current version's id alone, and the current version has
/// a version entry too.
fn lay_out_as_earlier_builds(fx: &Fixture, agent: &str) -> usize {
    use engram::backend::Op;
    let prefix_len = 4 + agent.len();
    let mut ops = Vec::new();
    for (key, value) in domain_pairs(fx, agent) {
        if key[prefix_len] != b'K' {
            continue;
        }
        let at = value
            .iter()
            .position(|&b| b == 0)
            .expect("a key entry keeps its sequence");
        let (id, seq) = (&value[..at], &value[at + 1..]);
        let version = [&key[..prefix_len], b"V", &key[prefix_len + 1..], &[0], seq].concat();
        ops.push(Op::Put(key.clone(), id.to_vec()));
        ops.push(Op::Put(version, id.to_vec()));
    }
    fx.backend.commit(&[], &ops).unwrap();
    ops.len() / 2
}

fn sorted(items: Vec<engram::export::ExportedItem>) -> Vec<String> {
    let mut items: Vec<String> = items.iter().map(|item| format!("{item:?}")).collect();
    items.sort();
    items
}

backend_test! {
    fn mt_2_a_key_laid_out_by_earlier_builds_keeps_its_history_export_and_next_version(fx) {
        // proves MT-2, S-VERSIONS
        let _clock = CLOCK.lock().unwrap();
        let (mut alice, written) = three_versions(&fx);
        let before = versions(&mut alice, "user.diet", 10).unwrap();
        drop(alice);
        let export = |fx: &Fixture, limit: u32| {
            let mut domain = engram_with_clock()
                .open("alice", Mode::Maintenance, fx.backend.clone(), fx.audit.clone())
                .unwrap();
            let mut items = Vec::new();
            let mut start: Option<Vec<u8>> = None;
            loop {
                let page = domain.export_page(start.as_deref(), limit).unwrap().unwrap();
                assert!(page.items.len() <= limit as usize);
                items.extend(page.items);
                match page.next {
                    Some(next) => start = Some(next),
                    None => return items,
                }
            }
        };
        let exported = sorted(export(&fx, CEILING));
        // Written now, the current version is found through its key's entry
        // alone: one version entry per superseded version.
        let pairs = domain_pairs(&fx, "alice");
        let version_entries = pairs.iter().filter(|(k, _)| k[9] == b'V').count();
        assert_eq!(version_entries, 2, "{}", fx.name);

        assert_eq!(lay_out_as_earlier_builds(&fx, "alice"), 1);
        let mut alice = open(&fx);
        let again = versions(&mut alice, "user.diet", 10).unwrap();
        assert_eq!(again, before, "{}", fx.name);
        assert_eq!(versions(&mut alice, "user.diet", 1).unwrap(), before[..1]);
        drop(alice);
        // The export is the same items, paged by one item or by many (a key
        // entry of the earlier layout stands for no item).
        assert_eq!(sorted(export(&fx, CEILING)), exported, "{}", fx.name);
        assert_eq!(sorted(export(&fx, 1)), exported, "{}", fx.name);

        // A write over the earlier layout supersedes the version it holds,
        // and the history lists every version once.
        let mut alice = open(&fx);
        NOW.store(400, Ordering::SeqCst);
        let newest = accept(&mut alice, "v3", diet("flexitarian", 50, None));
        let history = versions(&mut alice, "user.diet", 10).unwrap();
        let got = timeline(&history);
        assert_eq!(
            got,
            [
                ("flexitarian", 400, None),
                ("pescatarian", 300, Some(400)),
                ("vegan", 200, Some(300)),
                ("vegetarian", 100, Some(200))
            ],
            "{}",
            fx.name
        );
        assert_eq!(history[1].id, written[2]);
        assert_eq!(
            ids(&records(&mut alice, RecordType::Fact, by_key("user.diet"))),
            [newest]
        );
        assert_eq!(as_of(&mut alice, TimeAxis::Transaction, 350).as_deref(), Some("pescatarian"));
    }
}
