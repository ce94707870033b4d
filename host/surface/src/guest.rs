//! A component's own binding of the engine (`wit_bindgen::generate!` of a
//! world that imports the engine's exports: the JSON layer, the `engram`
//! command built for `wasm32-wasip2`) as a `Domain` with the calls of the
//! Rust library's `engram::Domain`, written once ([`guest_domain!`]): over
//! it the component gets [`domain_cycles!`](crate::domain_cycles) and
//! [`domain_engine!`](crate::domain_engine), the command line and the call
//! surface. What differs between the components is only what their hosts
//! give them ([`GuestHost`]).

use engram_model::audit::AuditEntry;

/// What a component's host gives the `Domain` of [`guest_domain!`] besides
/// the engine's exports.
pub trait GuestHost {
    /// The largest record a write may carry, in bytes (the host's
    /// `max_record_bytes`).
    fn max_record_bytes() -> u64;

    /// Keeps the audit entry of a write the component REJECTED for its size
    /// (IO-W8). `at` is 0: the host stamps the entry with its own clock.
    fn append_refusal(entry: AuditEntry) -> anyhow::Result<()>;

    /// Tells the engine `time` instead of the clock's (none: the clock's).
    fn set_time(time: Option<i64>);

    /// 128 random bits, for a fresh request id.
    fn entropy() -> anyhow::Result<[u64; 2]>;

    /// The failure the host held back for the last call (a commit whose
    /// audit entries could not be kept), if any: it fails the call.
    fn take_failure() -> Option<String> {
        None
    }
}

/// Writes, in the module where `wit` names the
/// `engram:memory` interfaces as it imports them, the binding's modules the
/// rest of this crate's macros are written against: `types`, `io`,
/// `history`, `graph`, `cycle`, `export` (`engram:memory/maintenance`) and
/// `json` (the JSON model with its conversions to this binding).
#[macro_export]
macro_rules! contract_modules {
    () => {
        /// The record model of the contract (`engram:memory/types`).
        pub mod types {
            pub use super::wit::types::*;
        }

        /// The IO contract (`engram:memory/io`).
        pub mod io {
            pub use super::wit::io::*;
        }

        /// Versions of a FACT in time (`engram:memory/history`).
        pub mod history {
            pub use super::wit::history::*;
        }

        /// Entities, relationships and their lookups (`engram:memory/graph`).
        pub mod graph {
            pub use super::wit::graph::*;
        }

        /// Execution cycles (`engram:memory/cycle`).
        pub mod cycle {
            pub use super::wit::cycle::*;
        }

        /// Export and import of a domain (`engram:memory/maintenance`).
        pub mod export {
            pub use super::wit::maintenance::*;
        }

        /// The JSON model of the contract, with its conversions to this binding.
        pub mod json {
            pub use $crate::engram_model::json::*;
            $crate::engram_model::json_wit_conversions!();
        }
    };
}

/// Writes `Domain` (the engine's imported interfaces as the library's
/// `engram::Domain` calls them) and `Cycle` (a cycle in flight) into a
/// module where `wit` (the `engram:memory` interfaces) and the binding's
/// `io`, `history`, `graph`, `cycle`, `export`, `types` and `json` modules
/// are in scope. `$host` implements [`GuestHost`]: a record above its
/// `max_record_bytes` is REJECTED before it reaches the engine, and the
/// failure it holds back for a call fails the call.
#[macro_export]
macro_rules! guest_domain {
    ($host:ty) => {
        /// The domain the component's host opened the engine for: every
        /// call goes to the engine composed with the component.
        pub struct Domain {
            agent: String,
            /// The time the engine is told instead of the clock's, while set.
            time: Option<i64>,
        }

        /// The call's answer, or the failure the host held back for it.
        fn checked<T>(answer: T) -> anyhow::Result<T> {
            match <$host as $crate::guest::GuestHost>::take_failure() {
                Some(why) => Err(anyhow::anyhow!(why)),
                None => Ok(answer),
            }
        }

        impl Domain {
            /// The domain of `agent`, the engine told the clock's time.
            pub fn new(agent: String) -> Self {
                Domain { agent, time: None }
            }

            /// The agent this domain belongs to.
            pub fn agent_id(&self) -> &str {
                &self.agent
            }

            /// Why `record` is too large to write, if it is: the reason a
            /// write of it would be REJECTED with.
            pub fn oversized_record(&self, record: &types::MemoryRecord) -> Option<String> {
                let max = <$host as $crate::guest::GuestHost>::max_record_bytes();
                let max = usize::try_from(max).unwrap_or(usize::MAX);
                $crate::engram_model::size::record_refusal(json::record_size(record), max)
            }

            /// Writes one record (IO-W1 … IO-W8); a record above the host's
            /// size limit is REJECTED before it reaches the engine, the
            /// reason audited.
            pub fn write(&mut self, request: &io::WriteRequest) -> anyhow::Result<io::WriteResult> {
                if let Some(reason) = self.oversized_record(&request.record) {
                    <$host as $crate::guest::GuestHost>::append_refusal(json::refused_write(
                        0,
                        &self.agent,
                        &request.request_id,
                        &request.source,
                        json::record_type(&request.record),
                        reason,
                    ))?;
                    return Ok(io::WriteResult::Rejected);
                }
                checked(wit::io::write(request))
            }

            /// The time the engine is told instead of the clock's, while set.
            pub fn time(&self) -> Option<i64> {
                self.time
            }

            /// Tells the engine `time` instead of the clock's (none: the
            /// clock's).
            pub fn set_time(&mut self, time: Option<i64>) {
                self.time = time;
                <$host as $crate::guest::GuestHost>::set_time(time);
            }

            /// 128 random bits of the host's, for a fresh request id.
            pub fn entropy(&mut self) -> anyhow::Result<[u64; 2]> {
                <$host as $crate::guest::GuestHost>::entropy()
            }
        }

        /// A cycle in flight.
        pub struct Cycle(wit::cycle::Cycle);

        impl Domain {
            /// Reads records.
            pub fn read(
                &mut self,
                request: &io::ReadRequest,
            ) -> anyhow::Result<Result<io::ReadResult, io::ReadError>> {
                checked(wit::io::read(request))
            }

            /// The versions of a FACT key, newest first.
            pub fn versions(
                &mut self,
                request: &history::VersionsRequest,
            ) -> anyhow::Result<Result<Vec<types::StoredFact>, io::ReadError>> {
                checked(wit::history::versions(request))
            }

            /// The version of a FACT key as of a time.
            pub fn as_of(
                &mut self,
                request: &history::AsOfRequest,
            ) -> anyhow::Result<Result<Option<types::StoredFact>, io::ReadError>> {
                checked(wit::history::as_of(request))
            }

            /// The current FACTs of a namespace after a key, in key order.
            pub fn list_after(
                &mut self,
                request_id: &str,
                namespace: &[String],
                limit: u32,
                after: Option<&str>,
            ) -> anyhow::Result<Result<Vec<types::StoredFact>, io::ReadError>> {
                checked(wit::graph::list(request_id, namespace, limit, after))
            }

            /// The current entities of one type.
            pub fn entities_of_type(
                &mut self,
                request_id: &str,
                entity_type: types::EntityType,
                limit: u32,
            ) -> anyhow::Result<Result<Vec<types::StoredFact>, io::ReadError>> {
                checked(wit::graph::entities_of_type(request_id, entity_type, limit))
            }

            /// The current relationships of an entity.
            pub fn relationships_of(
                &mut self,
                request: &graph::RelationshipsRequest,
            ) -> anyhow::Result<Result<Vec<types::StoredFact>, io::ReadError>> {
                checked(wit::graph::relationships_of(request))
            }

            /// A bounded walk of the graph.
            pub fn traverse(
                &mut self,
                request: &graph::TraverseRequest,
            ) -> anyhow::Result<Result<graph::Traversal, io::ReadError>> {
                checked(wit::graph::traverse(request))
            }

            /// Starts a cycle of `plan`.
            pub fn begin_cycle(
                &mut self,
                plan: &cycle::ExecutionPlan,
                session_ref: &str,
                request_id: &str,
            ) -> anyhow::Result<Result<Cycle, cycle::PlanError>> {
                checked(wit::cycle::Cycle::begin(plan, session_ref, request_id).map(Cycle))
            }

            /// Runs every step of one stage.
            pub fn run_stage(
                &mut self,
                cycle: &Cycle,
                stage: cycle::Stage,
                input: &cycle::TurnInput,
            ) -> anyhow::Result<Result<Vec<cycle::StepResult>, cycle::CycleError>> {
                checked(cycle.0.run_stage(stage, input))
            }

            /// The output of a step that has run.
            pub fn step_output(
                &mut self,
                cycle: &Cycle,
                step: &str,
            ) -> anyhow::Result<Option<cycle::StepOutput>> {
                checked(cycle.0.output(step))
            }

            /// Commits what the cycle staged.
            pub fn commit_cycle(
                &mut self,
                cycle: &Cycle,
            ) -> anyhow::Result<Result<Vec<String>, cycle::CycleError>> {
                checked(cycle.0.commit())
            }

            /// Drops a cycle; what it staged and did not commit is gone.
            pub fn drop_cycle(&mut self, cycle: Cycle) -> anyhow::Result<()> {
                drop(cycle);
                Ok(())
            }

            /// One page of a maintenance export of the domain.
            pub fn export_page(
                &mut self,
                start: Option<&[u8]>,
                limit: u32,
            ) -> anyhow::Result<Result<export::ExportPage, export::MaintenanceError>> {
                checked(wit::maintenance::export(start, limit))
            }

            /// Removes at most `limit` expired records: how many went.
            pub fn expire(
                &mut self,
                limit: u32,
            ) -> anyhow::Result<Result<u32, export::MaintenanceError>> {
                checked(wit::maintenance::expire(limit))
            }

            /// Imports exported items in one commit: how many were new.
            pub fn import(
                &mut self,
                items: &[export::ExportedItem],
            ) -> anyhow::Result<Result<u32, export::MaintenanceError>> {
                checked(wit::maintenance::import(items))
            }

            /// Makes the vectors of at most `limit` memories again.
            pub fn reembed(
                &mut self,
                limit: u32,
            ) -> anyhow::Result<Result<export::ReembedProgress, export::MaintenanceError>> {
                checked(wit::maintenance::reembed(limit))
            }

            /// The model that made the domain's vectors; `None` while it
            /// has none.
            pub fn vector_model(
                &mut self,
            ) -> anyhow::Result<Result<Option<export::Model>, export::MaintenanceError>> {
                checked(wit::maintenance::vector_model())
            }
        }
    };
}
