//! Compositions: a component of a composition, the wiring of its imports
//! to other components' exports, and the writing of a built file.

use anyhow::{Context, Result, ensure};
use std::fs;
use std::path::{Path, PathBuf};
use wac_graph::types::Package;
use wac_graph::{CompositionGraph, NodeId, PackageId};

/// A component of a composition and its one instance.
pub struct Part {
    pub name: &'static str,
    pub package: PackageId,
    pub node: NodeId,
}

impl Part {
    pub fn register(
        graph: &mut CompositionGraph,
        name: &'static str,
        bytes: &[u8],
    ) -> Result<Self> {
        let package = Package::from_bytes(name, None, bytes.to_vec(), graph.types_mut())
            .with_context(|| format!("reading the component `{name}`"))?;
        let package = graph.register_package(package)?;
        let node = graph.instantiate(package);
        Ok(Self {
            name,
            package,
            node,
        })
    }

    pub fn imports(&self, graph: &CompositionGraph) -> Vec<String> {
        graph.types()[graph[self.package].ty()]
            .imports
            .keys()
            .cloned()
            .collect()
    }

    pub fn exports(&self, graph: &CompositionGraph) -> Vec<String> {
        graph.types()[graph[self.package].ty()]
            .exports
            .keys()
            .cloned()
            .collect()
    }
}

/// Satisfies each import of `consumer` with the export of the same name of
/// the first supplier that has one. What no supplier has must start with
/// one of `outside` (the interfaces the composition's host supplies): it
/// stays an import of the composition.
pub fn wire(
    graph: &mut CompositionGraph,
    consumer: &Part,
    suppliers: &[&Part],
    outside: &[&str],
) -> Result<()> {
    for name in consumer.imports(graph) {
        let supplier = suppliers
            .iter()
            .find(|supplier| supplier.exports(graph).contains(&name));
        match supplier {
            Some(supplier) => {
                let export = graph.alias_instance_export(supplier.node, &name)?;
                graph
                    .set_instantiation_argument(consumer.node, &name, export)
                    .with_context(|| {
                        format!(
                            "wiring `{name}` of `{}` to `{}`",
                            consumer.name, supplier.name
                        )
                    })?;
            }
            None => ensure!(
                outside.iter().any(|prefix| name.starts_with(prefix)),
                "nothing in the composition exports `{name}`, which `{}` imports, and its host supplies only {outside:?}",
                consumer.name
            ),
        }
    }
    Ok(())
}

/// Reads a built file.
pub fn read(path: &Path) -> Result<Vec<u8>> {
    fs::read(path).with_context(|| format!("reading {}", path.display()))
}

/// Writes `bytes` to `path` through a file beside it, unless `path` already
/// holds them (its time stays, and two builds writing at once do not tear
/// it).
pub fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<()> {
    if fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    let mut partial = path.as_os_str().to_owned();
    partial.push(format!(".{}.partial", std::process::id()));
    let partial = PathBuf::from(partial);
    fs::write(&partial, bytes).with_context(|| format!("writing {}", partial.display()))?;
    fs::rename(&partial, path).with_context(|| format!("writing {}", path.display()))
}
