//! A domain's execution cycles (B-005) and its maintenance calls: export,
//! expiry and import (IO-W7).

use super::Domain;
use crate::{cycle, export};
use anyhow::{Result, bail};

impl Domain {
    /// Validates `plan` and begins a cycle (B-005). `Ok(Err(_))` is a
    /// refused plan: nothing ran.
    pub fn begin_cycle(
        &mut self,
        plan: &cycle::ExecutionPlan,
        session_ref: &str,
        request_id: &str,
    ) -> Result<Result<Cycle, cycle::PlanError>> {
        let begun = self.call(None, |engine, store| {
            engine
                .engram_memory_cycle()
                .cycle()
                .call_begin(store, plan, session_ref, request_id)
        })?;
        let instance = self.restarts;
        Ok(begun.map(|resource| Cycle { resource, instance }))
    }

    /// The cycle's resource, if the instance it was begun in still runs.
    fn resource(&self, cycle: &Cycle) -> Result<wasmtime::component::ResourceAny> {
        if cycle.instance != self.restarts || self.live.is_none() {
            bail!(
                "this cycle was lost when its instance was stopped; \
                 nothing it staged was persisted (B5-D1)"
            );
        }
        Ok(cycle.resource)
    }

    /// Runs one stage of a cycle with the transient inputs given.
    pub fn run_stage(
        &mut self,
        cycle: &Cycle,
        stage: cycle::Stage,
        input: &cycle::TurnInput,
    ) -> Result<Result<Vec<cycle::StepResult>, cycle::CycleError>> {
        let resource = self.resource(cycle)?;
        self.call(None, |engine, store| {
            engine
                .engram_memory_cycle()
                .cycle()
                .call_run_stage(store, resource, stage, input)
        })
    }

    /// The output of a step of a cycle, if it ran.
    pub fn step_output(&mut self, cycle: &Cycle, step: &str) -> Result<Option<cycle::StepOutput>> {
        let resource = self.resource(cycle)?;
        self.call(None, |engine, store| {
            engine
                .engram_memory_cycle()
                .cycle()
                .call_output(store, resource, step)
        })
    }

    /// Commits a cycle: every staged memory in one atomic commit (B5-D1).
    /// A cycle whose instance was stopped answers `Err`: nothing it staged
    /// is left to commit.
    pub fn commit_cycle(
        &mut self,
        cycle: &Cycle,
    ) -> Result<Result<Vec<String>, cycle::CycleError>> {
        let resource = self.resource(cycle)?;
        self.call_exclusive(None, |engine, store| {
            engine
                .engram_memory_cycle()
                .cycle()
                .call_commit(store, resource)
        })
    }

    /// Drops a cycle; anything it staged and did not commit is gone. A
    /// cycle whose instance was stopped is gone already.
    pub fn drop_cycle(&mut self, cycle: Cycle) -> Result<()> {
        let Ok(resource) = self.resource(&cycle) else {
            return Ok(());
        };
        self.call(None, |_, store| resource.resource_drop(store))
    }

    /// One page of a maintenance export of the domain, from `start` (none
    /// for the first page), at most `limit` items (IO-W7).
    pub fn export_page(
        &mut self,
        start: Option<&[u8]>,
        limit: u32,
    ) -> Result<Result<export::ExportPage, export::MaintenanceError>> {
        self.call(None, |engine, store| {
            engine
                .engram_memory_maintenance()
                .call_export(store, start, limit)
        })
    }

    /// Removes at most `limit` records whose expiry has passed from every
    /// index, in one commit with an audit entry each (IO-W7): how many
    /// went. Fewer than `limit` means none is left.
    pub fn expire(&mut self, limit: u32) -> Result<Result<u32, export::MaintenanceError>> {
        self.call_exclusive(None, |engine, store| {
            engine.engram_memory_maintenance().call_expire(store, limit)
        })
    }

    /// Makes the vectors of at most `limit` ingested memories with this
    /// domain's embedder, from their stored summaries, in one commit
    /// (S-VECTOR): after a model change, or for memories written before an
    /// embedder. Call it until `done`; it goes on where the last commit
    /// left off, after a crash too. A maintenance call (IO-W7).
    pub fn reembed(
        &mut self,
        limit: u32,
    ) -> Result<Result<export::ReembedProgress, export::MaintenanceError>> {
        self.call_exclusive(None, |engine, store| {
            engine
                .engram_memory_maintenance()
                .call_reembed(store, limit)
        })
    }

    /// The model that made this domain's vectors; `None` while it has none.
    pub fn vector_model(
        &mut self,
    ) -> Result<Result<Option<crate::algorithms::Model>, export::MaintenanceError>> {
        let model = self.call(None, |engine, store| {
            engine.engram_memory_maintenance().call_vector_model(store)
        })?;
        Ok(model.map(|model| {
            model.map(|m| crate::algorithms::Model {
                name: m.name,
                dimension: m.dimension,
            })
        }))
    }

    /// Refuses an embedder of another model than the domain's vectors',
    /// naming both (S-VECTOR). In maintenance mode a domain opens with any,
    /// so that [`Domain::reembed`] can make its vectors again.
    pub(crate) fn check_model(&mut self) -> Result<()> {
        let Some(embedder) = self.state.embedder.clone() else {
            return Ok(());
        };
        if self.state.mode == crate::Mode::Maintenance {
            return Ok(());
        }
        let host = embedder.model();
        let domain = self
            .vector_model()?
            .map_err(|e| anyhow::anyhow!("reading the domain's model: {e:?}"))?;
        match domain {
            Some(domain) if domain != host => Err(crate::ModelChanged(format!(
                "agent {:?}: {}",
                self.agent_id(),
                engram_model::json::model_changed(
                    (&domain.name, domain.dimension),
                    (&host.name, host.dimension)
                )
            ))
            .into()),
            _ => Ok(()),
        }
    }

    /// Imports exported items in one commit (IO-W7): how many were new.
    pub fn import(
        &mut self,
        items: &[export::ExportedItem],
    ) -> Result<Result<u32, export::MaintenanceError>> {
        self.call_exclusive(None, |engine, store| {
            engine.engram_memory_maintenance().call_import(store, items)
        })
    }
}

/// A cycle in flight in a [`Domain`]; pass it back to the domain's cycle
/// calls, and to [`Domain::drop_cycle`] when done. It lives as long as the
/// instance it was begun in.
#[derive(Debug)]
pub struct Cycle {
    resource: wasmtime::component::ResourceAny,
    /// The domain's restart count when the cycle began: which instance.
    instance: u64,
}
