//! A component's own binding of the engine (`wit_bindgen::generate!` of a
//! world that imports the engine's exports: the JSON layer, the `engram`
//! command built for `wasm32-wasip2`) as a `Domain` with the calls of the
//! Rust library's `engram::Domain`, written once: over it the component
//! gets [`domain_cycles!`](crate::domain_cycles) and
//! [`domain_engine!`](crate::domain_engine), the command line and the call
//! surface.

/// Writes `Cycle` (a cycle in flight) and the calls of a component's
/// `Domain` that go straight to the engine's imported interfaces, each
/// answer passed through `$checked` (`fn<T>(T) -> anyhow::Result<T>`: what
/// the host held back for the call, if anything, fails it), into a module
/// where `wit` (the `engram:memory` interfaces) and the binding's `io`,
/// `history`, `graph`, `cycle`, `export` and `types` modules are in scope.
/// The component writes the rest of `Domain` (`agent_id`, `write`, `time`,
/// `set_time`, `entropy`): what its host gives it.
#[macro_export]
macro_rules! guest_domain_calls {
    ($checked:ident) => {
        /// A cycle in flight.
        pub struct Cycle(wit::cycle::Cycle);

        impl Domain {
            /// Reads records.
            pub fn read(
                &mut self,
                request: &io::ReadRequest,
            ) -> anyhow::Result<Result<io::ReadResult, io::ReadError>> {
                $checked(wit::io::read(request))
            }

            /// The versions of a FACT key, newest first.
            pub fn versions(
                &mut self,
                request: &history::VersionsRequest,
            ) -> anyhow::Result<Result<Vec<types::StoredFact>, io::ReadError>> {
                $checked(wit::history::versions(request))
            }

            /// The version of a FACT key as of a time.
            pub fn as_of(
                &mut self,
                request: &history::AsOfRequest,
            ) -> anyhow::Result<Result<Option<types::StoredFact>, io::ReadError>> {
                $checked(wit::history::as_of(request))
            }

            /// The current FACTs of a namespace after a key, in key order.
            pub fn list_after(
                &mut self,
                request_id: &str,
                namespace: &[String],
                limit: u32,
                after: Option<&str>,
            ) -> anyhow::Result<Result<Vec<types::StoredFact>, io::ReadError>> {
                $checked(wit::graph::list(request_id, namespace, limit, after))
            }

            /// The current entities of one type.
            pub fn entities_of_type(
                &mut self,
                request_id: &str,
                entity_type: types::EntityType,
                limit: u32,
            ) -> anyhow::Result<Result<Vec<types::StoredFact>, io::ReadError>> {
                $checked(wit::graph::entities_of_type(request_id, entity_type, limit))
            }

            /// The current relationships of an entity.
            pub fn relationships_of(
                &mut self,
                request: &graph::RelationshipsRequest,
            ) -> anyhow::Result<Result<Vec<types::StoredFact>, io::ReadError>> {
                $checked(wit::graph::relationships_of(request))
            }

            /// A bounded walk of the graph.
            pub fn traverse(
                &mut self,
                request: &graph::TraverseRequest,
            ) -> anyhow::Result<Result<graph::Traversal, io::ReadError>> {
                $checked(wit::graph::traverse(request))
            }

            /// Starts a cycle of `plan`.
            pub fn begin_cycle(
                &mut self,
                plan: &cycle::ExecutionPlan,
                session_ref: &str,
                request_id: &str,
            ) -> anyhow::Result<Result<Cycle, cycle::PlanError>> {
                $checked(wit::cycle::Cycle::begin(plan, session_ref, request_id).map(Cycle))
            }

            /// Runs every step of one stage.
            pub fn run_stage(
                &mut self,
                cycle: &Cycle,
                stage: cycle::Stage,
                input: &cycle::TurnInput,
            ) -> anyhow::Result<Result<Vec<cycle::StepResult>, cycle::CycleError>> {
                $checked(cycle.0.run_stage(stage, input))
            }

            /// The output of a step that has run.
            pub fn step_output(
                &mut self,
                cycle: &Cycle,
                step: &str,
            ) -> anyhow::Result<Option<cycle::StepOutput>> {
                $checked(cycle.0.output(step))
            }

            /// Commits what the cycle staged.
            pub fn commit_cycle(
                &mut self,
                cycle: &Cycle,
            ) -> anyhow::Result<Result<Vec<String>, cycle::CycleError>> {
                $checked(cycle.0.commit())
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
                $checked(wit::maintenance::export(start, limit))
            }

            /// Removes at most `limit` expired records: how many went.
            pub fn expire(
                &mut self,
                limit: u32,
            ) -> anyhow::Result<Result<u32, export::MaintenanceError>> {
                $checked(wit::maintenance::expire(limit))
            }

            /// Imports exported items in one commit: how many were new.
            pub fn import(
                &mut self,
                items: &[export::ExportedItem],
            ) -> anyhow::Result<Result<u32, export::MaintenanceError>> {
                $checked(wit::maintenance::import(items))
            }
        }
    };
}
