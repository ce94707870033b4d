//! Prints the folder `engram-cli.wasm` and `engram-standalone.wasm` are
//! built in (the build script's output folder):
//! `wasmtime run "$(cargo run -q -p engram-wasi)/engram-cli.wasm" …`.

fn main() {
    let folder = std::path::Path::new(engram_wasi::CLI)
        .parent()
        .expect("the components are in a folder");
    println!("{}", folder.display());
}
