//! Expiry (S-EXPIRY): a record a domain keeps for a while only is answered
//! by no read path from the moment it expires, with nothing run to sweep it;
//! maintenance then removes it from every index, one audit entry each; an
//! export carries the expiry and an import keeps it. The host's clock is
//! moved past the expiry (`Domain::set_time`), on every backend.

mod support;

use engram::Mode;
use engram::audit::{Operation, Outcome as Audited};
use engram::export::ExportedItem;
use engram::graph::{EdgeDirection, RelationshipsRequest, TraversalOrder, TraverseRequest};
use engram::history::VersionsRequest;
use engram::io::{Latest, Limit, ReadSelector, WriteResult};
use engram::types::*;
use std::collections::BTreeSet;
use support::*;

/// When the records are written.
const T0: i64 = 1_800_000_000_000;
/// How long the domain keeps them.
const KEPT_FOR: u64 = 60_000;
/// Later than every expiry: the populated records' transaction times are
/// at most a few dozen milliseconds after `T0`.
const AFTER: i64 = T0 + KEPT_FOR as i64 + 10_000;

fn limit(limit: u32) -> ReadSelector {
    ReadSelector::Limit(Limit { limit })
}

fn latest(limit: u32) -> ReadSelector {
    ReadSelector::Latest(Latest { limit })
}

/// The ids of the records an export holds.
fn record_ids(items: &[ExportedItem]) -> BTreeSet<String> {
    items
        .iter()
        .filter_map(|item| match item {
            ExportedItem::Record(r) => Some(r.id.clone()),
            _ => None,
        })
        .collect()
}

/// `agent`'s domain at `T0`, keeping what it writes for `KEPT_FOR`.
fn writing_at_t0(fx: &Fixture, agent: &str) -> engram::Domain {
    let mut domain = fx.open(agent);
    domain.set_time(Some(T0));
    domain.set_expire_after(Some(KEPT_FOR));
    domain
}

/// How many versions of `key` the domain answers.
fn versions(domain: &mut engram::Domain, key: &str) -> usize {
    let request = VersionsRequest {
        request_id: "versions".into(),
        key: key.into(),
        limit: CEILING,
    };
    domain.versions(&request).unwrap().unwrap().len()
}

/// Removes every expired record of `agent` at `at`: how many went.
fn expire_at(fx: &Fixture, agent: &str, at: i64) -> u32 {
    let mut maintainer = fx.open_in(agent, Mode::Maintenance);
    maintainer.set_time(Some(at));
    let mut removed = 0;
    loop {
        let n = maintainer.expire(CEILING).unwrap().unwrap();
        removed += n;
        if n < CEILING {
            return removed;
        }
    }
}

backend_test! {
    // proves S-EXPIRY, on IO-R4's selectors, MT-2's history and MT-8's lookups
    fn s_expiry_no_read_path_answers_an_expired_record_and_maintenance_leaves_nothing_of_it(fx) {
        let agent = "ivy";
        let mut domain = writing_at_t0(&fx, agent);
        // Every kind of record, FACT versions superseded, entities joined
        // by relationships, ingested memories with keywords.
        populate(&mut domain, 6);
        domain.set_expire_after(None);
        let kept = accept(&mut domain, "kept", fact("user.kept", "kept for good"));

        let entities = |domain: &mut engram::Domain| {
            domain
                .entities_of_type("entities", EntityType::Person, CEILING)
                .unwrap()
                .unwrap()
                .len()
        };
        let edges = |domain: &mut engram::Domain| {
            let request = RelationshipsRequest {
                request_id: "edges".into(),
                entity: format!("entities.{agent}.p1"),
                direction: EdgeDirection::Outgoing,
                relationship_types: vec![],
                valid_at: None,
                limit: CEILING,
            };
            domain.relationships_of(&request).unwrap().unwrap().len()
        };
        let walk = |domain: &mut engram::Domain| {
            let request = TraverseRequest {
                request_id: "walk".into(),
                start: format!("entities.{agent}.p0"),
                order: TraversalOrder::BreadthFirst,
                direction: EdgeDirection::Outgoing,
                relationship_types: vec![],
                valid_at: None,
                max_depth: 3,
                max_nodes: CEILING,
                max_edges: CEILING,
            };
            let walk = domain.traverse(&request).unwrap().unwrap();
            (
                walk.nodes.iter().filter(|n| n.entity.is_some()).count(),
                walk.edges.len(),
            )
        };
        // One millisecond before the first expiry, every path answers.
        domain.set_time(Some(T0 + KEPT_FOR as i64 - 1));
        assert!(records(&mut domain, RecordType::Fact, limit(CEILING)).len() > 1);
        assert_eq!(records(&mut domain, RecordType::Event, latest(CEILING)).len(), 12);
        assert_eq!(records(&mut domain, RecordType::State, latest(CEILING)).len(), 6);
        assert_eq!(entities(&mut domain), 6);
        assert_eq!(edges(&mut domain), 1);
        assert_ne!(walk(&mut domain), (0, 0));
        assert_eq!(versions(&mut domain, "notes.k0"), 3);

        // Once it has passed, none does, and the kept record still does.
        domain.set_time(Some(AFTER));
        let facts = records(&mut domain, RecordType::Fact, limit(CEILING));
        assert_eq!(ids(&facts), vec![kept.clone()]);
        assert!(records(&mut domain, RecordType::Event, latest(CEILING)).is_empty());
        assert!(records(&mut domain, RecordType::State, latest(CEILING)).is_empty());
        assert_eq!(entities(&mut domain), 0);
        assert_eq!(edges(&mut domain), 0);
        assert_eq!(walk(&mut domain), (0, 0));
        assert_eq!(versions(&mut domain, "notes.k0"), 0);
        drop(domain);

        // An export still holds them, each with its expiry.
        let mut maintainer = fx.open_in(agent, Mode::Maintenance);
        maintainer.set_time(Some(AFTER));
        let before = export_all(&mut maintainer);
        drop(maintainer);
        let mut expiring = record_ids(&before);
        assert!(expiring.remove(&kept));
        for item in &before {
            if let ExportedItem::Record(r) = item {
                assert_eq!(r.expires_at.is_some(), r.id != kept, "{}", r.id);
            }
        }

        // Maintenance removes every one of them, and nothing else.
        let pairs_before = domain_pairs(&fx, agent).len();
        assert_eq!(expire_at(&fx, agent, AFTER), expiring.len() as u32);
        assert_eq!(expire_at(&fx, agent, AFTER), 0, "nothing left to remove");
        let prefix_len = 4 + agent.len();
        let left: Vec<Vec<u8>> = domain_pairs(&fx, agent)
            .into_iter()
            .map(|(key, _)| key[prefix_len..].to_vec())
            // The counter, the clock and the requests' entries (ids only).
            .filter(|key| !matches!(key[0], b'M' | b'I'))
            .collect();
        let kept_keys: Vec<Vec<u8>> = {
            let mut keys = vec![
                b"Kuser.kept".to_vec(),
                b"Puser.kept".to_vec(),
                [b"R", kept.as_bytes()].concat(),
            ];
            let version = left.iter().find(|k| k.starts_with(b"Vuser.kept\0")).cloned();
            keys.extend(version);
            keys.sort();
            keys
        };
        assert_eq!(left, kept_keys, "only the kept record's keys stay");
        assert!(domain_pairs(&fx, agent).len() < pairs_before);

        // The trail says what went: one EXPIRE entry per record, its id,
        // nothing of its content.
        let trail = fx.trail();
        let expired: BTreeSet<String> = trail
            .iter()
            .filter(|e| e.operation == Operation::Expire && e.outcome == Audited::Expired)
            .map(|e| {
                assert_eq!(e.reason, None);
                assert!(e.record_type.is_some());
                e.stored_id.clone().unwrap()
            })
            .collect();
        assert_eq!(expired, expiring);
        let empty = trail
            .iter()
            .filter(|e| e.operation == Operation::Expire && e.outcome == Audited::Applied)
            .count();
        assert_eq!(empty, 1, "the run that found nothing says so once");

        // An import keeps each record's expiry: imported back, they stay
        // unanswered, and the export after it is the export before.
        let mut maintainer = fx.open_in(agent, Mode::Maintenance);
        maintainer.set_time(Some(AFTER));
        maintainer.import(&before).unwrap().unwrap();
        assert_eq!(export_all(&mut maintainer), before);
        drop(maintainer);
        let mut domain = fx.open(agent);
        domain.set_time(Some(AFTER));
        let facts = records(&mut domain, RecordType::Fact, limit(CEILING));
        assert_eq!(ids(&facts), vec![kept]);
        assert!(records(&mut domain, RecordType::Event, latest(CEILING)).is_empty());
    }

}

backend_test! {
    // proves S-EXPIRY within IO-W2: a retry of an expired record's request
    fn s_expiry_a_retry_of_an_expired_records_request_is_rejected_before_and_after_removal(fx) {
        let agent = "jay";
        let mut domain = writing_at_t0(&fx, agent);
        let retry = request(agent, "once", fact("user.once", "said once"));
        let WriteResult::Accepted(id) = domain.write(&retry).unwrap() else {
            panic!("the write is accepted");
        };
        assert_eq!(domain.write(&retry).unwrap(), WriteResult::Accepted(id));
        domain.set_time(Some(AFTER));
        assert_eq!(domain.write(&retry).unwrap(), WriteResult::Rejected);
        drop(domain);
        assert_eq!(expire_at(&fx, agent, AFTER), 1);
        let mut domain = fx.open(agent);
        domain.set_time(Some(AFTER));
        assert_eq!(domain.write(&retry).unwrap(), WriteResult::Rejected);
        let reasons: Vec<String> = fx
            .trail()
            .into_iter()
            .filter(|e| e.outcome == Audited::Rejected)
            .filter_map(|e| e.reason)
            .collect();
        assert_eq!(
            reasons,
            vec!["the record request_id stored has expired (IO-W2)"; 2]
        );
    }

}

backend_test! {
    // proves S-EXPIRY within MT-2: a new version of a key whose current
    // version expired is current again; the one it superseded keeps its expiry
    fn s_expiry_a_key_written_after_its_version_expired_is_answered_again(fx) {
        let agent = "kim";
        let mut domain = writing_at_t0(&fx, agent);
        accept(&mut domain, "v1", fact("user.city", "Porto"));
        domain.set_time(Some(AFTER));
        domain.set_expire_after(None);
        let v2 = accept(&mut domain, "v2", fact("user.city", "Lisbon"));
        let by_key = ReadSelector::ByKey(engram::io::ByKey {
            key: "user.city".into(),
        });
        assert_eq!(ids(&records(&mut domain, RecordType::Fact, by_key.clone())), vec![v2.clone()]);
        drop(domain);
        assert_eq!(expire_at(&fx, agent, AFTER), 1);
        let mut domain = fx.open(agent);
        assert_eq!(ids(&records(&mut domain, RecordType::Fact, by_key)), vec![v2]);
        assert_eq!(
            versions(&mut domain, "user.city"),
            1,
            "the expired version is gone from the history"
        );
    }
}
