//! The JavaScript package (`host/js`) made ready to run or pack: its
//! pinned npm dependencies installed (the Node it pins among them), the
//! components of this build transpiled into it, and its Node addon (the
//! Rust host, `host/node`) built for this machine beside it.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// What npm is needed for, said when it is missing.
const NEEDS_NPM: &str = "the JavaScript package needs Node.js with npm (any Node from 20 up)";

/// The package's folder.
pub fn package() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../js")
}

/// The Node the package pins (the `node` package of the npm registry),
/// there once [`install`] ran.
pub fn node() -> PathBuf {
    package().join("node_modules/.bin/node")
}

/// Runs npm in the package's folder with `args` and the variables `env`:
/// its output, or an error that says what failed or what is missing.
pub fn npm(args: &[&str], env: &[(&str, &str)]) -> Result<Output> {
    let mut command = Command::new("npm");
    command.args(args).current_dir(package());
    for (name, value) in env {
        command.env(name, value);
    }
    crate::run(&mut command, &format!("npm {}", args.join(" ")), NEEDS_NPM)
}

/// Installs the package's dependencies unless the lock file is the one
/// installed last (a copy is kept in `node_modules`).
pub fn install() -> Result<()> {
    let dir = package();
    let lock = std::fs::read(dir.join("package-lock.json"))
        .context("reading host/js/package-lock.json")?;
    let stamp = dir.join("node_modules/.engram-installed-lock.json");
    if std::fs::read(&stamp).ok().as_deref() != Some(&lock[..]) {
        // `npm install` from the lock file, not `npm ci`: jco 1.35.0 names
        // optional packages for other platforms in versions never
        // published, which `npm install` passes over and `npm ci` refuses.
        npm(&["install", "--no-save", "--no-audit", "--no-fund"], &[])?;
        std::fs::write(&stamp, &lock)
            .context("writing the install stamp in host/js/node_modules")?;
    }
    Ok(())
}

/// Transpiles the components in `components` into the package's `gen/`
/// (`npm run build`, under the pinned Node: npm puts `node_modules/.bin`
/// first on the script's `PATH`).
pub fn build(components: &Path) -> Result<()> {
    let folder = components
        .to_str()
        .context("the components' folder is not valid UTF-8")?;
    npm(&["run", "build"], &[("ENGRAM_JS_WASM_DIR", folder)])?;
    Ok(())
}

/// [`install`], then [`build`] with this build's components, then the
/// addon for this machine beside it ([`install_addon`]).
pub fn ready() -> Result<()> {
    install()?;
    build(crate::components())?;
    install_addon()
}

/// A platform the npm package ships its Node addon for: the package
/// `engram-memory-<name>` carries `engram-memory.<name>.node`, and npm
/// installs it only where `os`, `cpu` and `libc` say (the layout napi-rs
/// projects use: an optional dependency of the main package each).
pub struct Platform {
    /// The platform's name as `src/addon.js` makes it: `linux-x64-gnu`.
    pub name: &'static str,
    /// The Rust target the addon is built for.
    pub target: &'static str,
    /// npm's `os`, `cpu` and `libc` of the platform package.
    pub os: &'static str,
    /// See [`Platform::os`].
    pub cpu: &'static str,
    /// See [`Platform::os`].
    pub libc: &'static str,
    /// The ELF machine of the platform's shared libraries (`e_machine`: 62
    /// for x86-64, 183 for AArch64).
    pub elf_machine: u16,
}

/// The platforms `engram-dist` builds the addon and the Python wheel for:
/// this machine's kind (built and tested here) and Linux on arm64
/// (cross-built with zig). The others are built by the release workflow
/// (docs/hosts.md).
pub const PLATFORMS: [Platform; 2] = [
    Platform {
        name: "linux-x64-gnu",
        target: "x86_64-unknown-linux-gnu",
        os: "linux",
        cpu: "x64",
        libc: "glibc",
        elf_machine: 62,
    },
    Platform {
        name: "linux-arm64-gnu",
        target: "aarch64-unknown-linux-gnu",
        os: "linux",
        cpu: "arm64",
        libc: "glibc",
        elf_machine: 183,
    },
];

impl Platform {
    /// The addon's file name: `engram-memory.<name>.node`.
    pub fn addon_file(&self) -> String {
        format!("engram-memory.{}.node", self.name)
    }

    /// The platform package's name: `engram-memory-<name>`.
    pub fn package(&self) -> String {
        format!("engram-memory-{}", self.name)
    }

    /// Whether this is the platform of the machine this runs on.
    pub fn is_host(&self) -> bool {
        let (os, arch) = (std::env::consts::OS, std::env::consts::ARCH);
        let cpu = match arch {
            "x86_64" => "x64",
            "aarch64" => "arm64",
            other => other,
        };
        os == self.os && cpu == self.cpu && cfg!(target_env = "gnu") == (self.libc == "glibc")
    }
}

/// The platform of the machine this runs on, if the package ships the
/// addon for it.
pub fn host_platform() -> Option<&'static Platform> {
    PLATFORMS.iter().find(|platform| platform.is_host())
}

/// Builds the addon (`engram-node`, release) for `platform`: with cargo for
/// this machine's, into the workspace's target folder (where `cargo bench`
/// finds the same build); for another, the platform's native libraries
/// ([`crate::native::cross_build`], the Python module's with it). The
/// built library.
pub fn build_addon(platform: &Platform) -> Result<PathBuf> {
    if !platform.is_host() {
        return Ok(crate::native::cross_build(platform)?.addon);
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(&cargo);
    command
        .arg("build")
        .current_dir(crate::workspace())
        .args(["--release", "--locked", "--package", "engram-node"])
        .args(["--message-format", "json-render-diagnostics"]);
    crate::as_shipped(&mut command);
    crate::with_built_engine(&mut command)?;
    let what = format!("building the Node addon for {}", platform.name);
    let output = crate::run(&mut command, &what, "the addon's build needs cargo")?;
    crate::native::built_library(&output.stdout, "engram_node")
        .with_context(|| format!("{what}: cargo named no library it built"))
}

/// The addon for this machine built ([`build_addon`]) and put beside the
/// package as `src/addon.js` finds it there (`engram-memory.<name>.node`,
/// which the package's `files` leave out of its tarball): what the tests
/// load.
pub fn install_addon() -> Result<()> {
    let platform = host_platform().with_context(|| {
        format!(
            "the npm package ships no Node addon for this machine ({} {}): build it for one of {}",
            std::env::consts::OS,
            std::env::consts::ARCH,
            PLATFORMS.map(|p| p.name).join(", ")
        )
    })?;
    let built = build_addon(platform)?;
    let target = package().join(platform.addon_file());
    // A copy beside, renamed over the addon: a process that loaded the old
    // one keeps its pages.
    let staged = package().join(format!(".{}.tmp", platform.addon_file()));
    std::fs::copy(&built, &staged)
        .with_context(|| format!("copying {} to {}", built.display(), staged.display()))?;
    std::fs::rename(&staged, &target)
        .with_context(|| format!("renaming {} to {}", staged.display(), target.display()))?;
    Ok(())
}
