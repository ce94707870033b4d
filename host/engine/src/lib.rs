//! The Engram engine as a WebAssembly component, built from `guest/` by this
//! crate's build script: `cargo rustc -p engram-guest --crate-type cdylib
//! --target wasm32-unknown-unknown --profile guest` in a target folder of
//! its own, then the core module encoded as a component with
//! `wit-component`. Hosts embed [`COMPONENT`]; the native host (`engram`)
//! compiles it with wasmtime, the WASI build (`engram-wasi`) composes it
//! unchanged with its provider and command components.
//!
//! The build scripts of crates that depend on this one find the component's
//! file in `DEP_ENGRAM_ENGINE_PATH`.

/// The engine component, as built from `guest/` by the build script.
pub const COMPONENT: &[u8] = include_bytes!(env!("ENGRAM_ENGINE_PATH"));

/// XXH3-128 of [`COMPONENT`], computed by the build script, so that a host
/// naming files by it need not hash the component at start-up.
pub const COMPONENT_XXH3: u128 = match u128::from_str_radix(env!("ENGRAM_ENGINE_XXH3"), 16) {
    Ok(hash) => hash,
    Err(_) => panic!("the build script's component hash is not hexadecimal"),
};
