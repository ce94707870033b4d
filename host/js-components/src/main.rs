//! Prints the folder the components are built in (the build script's
//! output folder), for the JavaScript package's build:
//! `cargo run -q -p engram-js-components`.

fn main() {
    let folder = std::path::Path::new(engram_js_components::HOST)
        .parent()
        .expect("the components are in a folder");
    println!("{}", folder.display());
}
