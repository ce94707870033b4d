//! Agent privacy (IO-W6): every write belongs to exactly one agent's domain
//! and no agent sees another's, whatever bytes the agent ids and keys hold.

mod support;

use engram::io::WriteResult;
use engram::types::*;
use support::*;

/// Everything an agent's domain can return, by every selector.
fn everything(domain: &mut engram::Domain) -> Vec<StoredRecord> {
    let mut all = records(domain, RecordType::Fact, limit(CEILING));
    all.extend(records(domain, RecordType::Event, limit(CEILING)));
    all.extend(records(domain, RecordType::State, limit(CEILING)));
    all
}

fn summary_of(record: &StoredRecord) -> String {
    match record {
        StoredRecord::Fact(f) => match &f.fact.payload {
            FactPayload::Semantic(m) => m.content.clone(),
            _ => String::new(),
        },
        StoredRecord::Event(e) => match &e.payload {
            StoredEventPayload::Ingested(m) => m.summary.clone(),
            StoredEventPayload::Episode(e) => e.situation.clone(),
        },
        StoredRecord::State(s) => s.state.payload.subject.clone(),
    }
}

backend_test! {
    fn io_w6_agents_whose_ids_share_a_prefix_never_see_each_other(fx) {
        // proves IO-W6
        // Ids that are prefixes of each other, hold the engine's own key tags
        // ("R", "K", "T", "I", "M") or separator bytes, or look like an encoded
        // length followed by another id.
        let agents = [
            "foo",
            "foobar",
            "fooR0000000000000001",
            "fooKuser.diet",
            "f",
            "foo\u{0}",
            "foo\u{0}bar",
            "\u{0}\u{0}\u{0}\u{3}foo",
            "/",
            "foo/bar",
            "foo:bar",
            "\u{ff}",
        ];
        for agent in agents {
            let mut domain = fx.open(agent);
            accept(&mut domain, "same-request", fact("user.diet", agent));
            accept(&mut domain, "e", ingested(1, agent));
            accept(&mut domain, "s", state(1, agent));
        }
        for agent in agents {
            let mut domain = fx.open(agent);
            let seen = everything(&mut domain);
            assert_eq!(
                seen.len(),
                3,
                "{}: {agent:?} sees exactly its own records",
                fx.name
            );
            for record in &seen {
                assert_eq!(
                    summary_of(record),
                    agent,
                    "{}: {agent:?} saw another agent's record",
                    fx.name
                );
            }
            // The same id and key name different records in each domain.
            let by_key = records(&mut domain, RecordType::Fact, by_key("user.diet"));
            assert_eq!(summary_of(&by_key[0]), agent);
            let first = records(&mut domain, RecordType::Fact, by_id(id_of(&by_key[0])));
            assert_eq!(summary_of(&first[0]), agent);
        }
    }
}

backend_test! {
    fn io_w6_a_write_for_another_agent_is_rejected(fx) {
        // proves IO-W6
        let mut foo_domain = fx.open("foo");
        let before = fx.dump();
        for claimed in ["foobar", "fo", "FOO", "foo ", ""] {
            let answer = foo_domain
                .write(&request(
                    claimed,
                    &format!("r-{claimed}"),
                    fact("user.diet", "x"),
                ))
                .unwrap();
            assert_eq!(
                answer,
                WriteResult::Rejected,
                "{}: a write claiming {claimed:?} in foo's domain",
                fx.name
            );
        }
        assert_eq!(fx.dump(), before, "{}", fx.name);
        assert!(everything(&mut fx.open("foobar")).is_empty());
        let trail = fx.trail();
        let writes: Vec<_> = trail
            .iter()
            .filter(|e| e.operation == engram::audit::Operation::Write)
            .collect();
        assert_eq!(writes.len(), 5, "{}: every write is audited", fx.name);
        for entry in writes {
            assert_eq!(entry.outcome, engram::audit::Outcome::Rejected);
            assert_eq!(entry.agent_id, "foo", "audited in the domain it reached");
            assert!(
                entry.reason.as_deref().is_some_and(|r| r.contains("IO-W6")),
                "{entry:?}"
            );
        }
    }
}

backend_test! {
    fn io_w6_idempotency_is_per_domain(fx) {
        // proves IO-W6, S-IDEMP: one agent's request ids do not collide with another's
        let mut foo_domain = fx.open("foo");
        let mut foobar = fx.open("foobar");
        let a = accept(&mut foo_domain, "shared-id", ingested(1, "foo"));
        let b = accept(&mut foobar, "shared-id", ingested(1, "foobar"));
        assert_eq!(
            ids(&records(&mut foo_domain, RecordType::Event, by_id(&a))).len(),
            1
        );
        assert_eq!(
            summary_of(&records(&mut foobar, RecordType::Event, by_id(&b))[0]),
            "foobar",
            "{}",
            fx.name
        );
    }
}

#[test]
fn io_w6_an_agent_id_must_name_one_domain() {
    // proves IO-W6, S-AGENT: there is no domain without an agent, nor one
    // whose id is longer than 256 bytes; ids of 1 and of 256 bytes open
    let fx = Fixture::memory();
    let open = |agent: &str| {
        engram().open(
            agent,
            engram::Mode::Online,
            fx.backend.clone(),
            fx.audit.clone(),
        )
    };
    let long = "a".repeat(engram::MAX_AGENT_ID_LEN + 1);
    for bad in ["", long.as_str()] {
        let error = open(bad).err().expect("refused").to_string();
        assert!(
            error.contains("an agent id must be 1 to 256 bytes long"),
            "{} bytes: {error}",
            bad.len()
        );
    }
    let longest = "a".repeat(engram::MAX_AGENT_ID_LEN);
    for good in ["a", longest.as_str()] {
        let mut domain = open(good).expect("the domain opens");
        accept(&mut domain, "w", state(1, "mission.current"));
        assert_eq!(records(&mut domain, RecordType::State, latest(1)).len(), 1);
    }
}
