//! Which tests prove which rule, host by host, read from the tests
//! themselves: a test names the rules it proves in its name (`io_w8_…`,
//! `test_b5_d1_…`) or in a comment that starts with `proves` (`// proves
//! IO-W8, MT-2: …`, `# proves B5-D1`; the IDs before the first colon, words
//! in parentheses left out); a line of a shared scenario names them at the
//! start of its `note`. The rules are those of `docs/rules.md` and the
//! choices listed in `docs/choices.md` ("Where the seeds are silent", `S-…`).
//!
//! `docs/traceability.md` is generated from them and must be up to date
//! (`ENGRAM_UPDATE_TRACEABILITY=1 cargo test --test traceability` writes
//! it); every ID a test claims must be a rule; and every crate of the
//! workspace that holds tests, and every test file, must be run by the
//! README's `cargo test`, which must reuse every crate the README's `cargo
//! run -- demo` built.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's top folder.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository's folder")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A rule of the contract or a choice of Engram's, with what it says.
struct Rule {
    id: String,
    text: String,
}

/// The rules of `docs/rules.md` (the rows of its tables) and the choices of
/// `docs/choices.md`, "Where the seeds are silent" (the bullets that give an ID).
fn rules() -> Vec<Rule> {
    let mut rules = Vec::new();
    for line in read(&root().join("docs/rules.md")).lines() {
        let cells: Vec<&str> = line.split(" | ").collect();
        if let [first, text @ ..] = &cells[..]
            && let Some(id) = first.strip_prefix("| ")
            && contract_id(id)
        {
            let text = text.join(" | ");
            let text = text.strip_suffix(" |").unwrap_or(&text);
            rules.push(Rule {
                id: id.to_string(),
                text: text.to_string(),
            });
        }
    }
    let choices = read(&root().join("docs/choices.md"));
    for line in choices.lines() {
        let Some(bullet) = line.strip_prefix("- **") else {
            continue;
        };
        let Some((title, rest)) = bullet.split_once("**") else {
            continue;
        };
        let Some(id) = ids_in(rest).into_iter().find(|id| id.starts_with("S-")) else {
            continue;
        };
        rules.push(Rule {
            id,
            text: title.to_string(),
        });
    }
    rules
}

/// Whether `id` has the shape of a contract rule's ID: `IO-W1`, `B5-D2`,
/// `MT-5`.
fn contract_id(id: &str) -> bool {
    let numbered = |rest: &str, letters: &str| {
        let mut chars = rest.chars();
        let letter_ok = letters.is_empty() || chars.next().is_some_and(|c| letters.contains(c));
        let digits = chars.as_str();
        letter_ok && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
    };
    if let Some(rest) = id.strip_prefix("IO-") {
        numbered(rest, "WRTG")
    } else if let Some(rest) = id.strip_prefix("B5-") {
        numbered(rest, "SPDF")
    } else if let Some(rest) = id.strip_prefix("MT-") {
        numbered(rest, "")
    } else {
        false
    }
}

/// The IDs written in `text` the way the rules page writes them.
fn ids_in(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|word| {
            contract_id(word)
                || word.strip_prefix("S-").is_some_and(|rest| {
                    !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_uppercase())
                })
        })
        .map(str::to_string)
        .collect()
}

/// The IDs a test's name carries: `io_w8`, `b5_d1`, `mt_1` or `mt1` as
/// words of a snake-case name, or written as on the rules page.
fn ids_in_name(name: &str) -> Vec<String> {
    let mut ids = ids_in(name);
    let lower = name.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    for (i, word) in words.iter().enumerate() {
        let next = words.get(i + 1).copied().unwrap_or("");
        let candidate = match *word {
            "io" => format!("IO-{}", next.to_ascii_uppercase()),
            "b5" => format!("B5-{}", next.to_ascii_uppercase()),
            "mt" => format!("MT-{next}"),
            w if w.starts_with("mt") => format!("MT-{}", &w[2..]),
            _ => continue,
        };
        if contract_id(&candidate) {
            ids.push(candidate);
        }
    }
    ids
}

/// Where a test runs.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Host {
    Library,
    CommandLine,
    Wasi,
    JavaScript,
    Python,
    Mcp,
    Scenarios,
}

const HOSTS: [(Host, &str); 7] = [
    (Host::Library, "Rust library"),
    (Host::CommandLine, "command line"),
    (Host::Wasi, "WASI"),
    (Host::JavaScript, "JavaScript"),
    (Host::Python, "Python"),
    (Host::Mcp, "MCP"),
    (Host::Scenarios, "scenarios (every host)"),
];

/// The files of `tests/` whose tests run the `engram` command line.
const COMMAND_LINE_FILES: [&str; 6] = [
    "tests/cli.rs",
    "tests/scenarios.rs",
    "tests/io_faults.rs",
    "tests/crash_consistency.rs",
    "tests/cache.rs",
    "tests/multihost.rs",
];

/// A test and the rules it claims.
struct Test {
    host: Host,
    /// The file, from the repository's top.
    file: String,
    name: String,
    ids: BTreeSet<String>,
}

/// A claim that names no rule: the file and line, and what is wrong.
type Problem = String;

/// The language of a test file: how a comment starts, how a test is
/// declared, what may stand between a comment and the test it is above.
struct Language {
    comment: &'static str,
    /// The name of the test declared at `lines[i]`, if one is.
    header: fn(&[&str], usize) -> Option<String>,
    /// Whether a line may stand between a test's comment and its header.
    attribute: fn(&str) -> bool,
}

fn rust_header(lines: &[&str], i: usize) -> Option<String> {
    let line = lines[i].trim();
    let opens = line == "#[test]"
        || line.starts_with("backend_test!")
        || line.starts_with("postgres_test!");
    if !opens {
        return None;
    }
    lines[i + 1..].iter().take(6).find_map(|line| {
        let rest = line.trim().strip_prefix("fn ")?;
        let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
        Some(rest[..end].to_string())
    })
}

fn python_header(lines: &[&str], i: usize) -> Option<String> {
    let rest = lines[i].trim().strip_prefix("def test")?;
    let end = rest.find('(')?;
    Some(format!("test{}", &rest[..end]))
}

fn javascript_header(lines: &[&str], i: usize) -> Option<String> {
    let rest = lines[i].trim().strip_prefix("test(")?;
    let quote = rest.chars().next().filter(|c| "'\"`".contains(*c))?;
    let name = &rest[1..];
    let end = name.find(quote)?;
    Some(name[..end].to_string())
}

const RUST: Language = Language {
    comment: "//",
    header: rust_header,
    attribute: |line| line.starts_with("#[") || line.starts_with("#!["),
};
const PYTHON: Language = Language {
    comment: "#",
    header: python_header,
    attribute: |line| line.starts_with('@'),
};
const JAVASCRIPT: Language = Language {
    comment: "//",
    header: javascript_header,
    attribute: |_| false,
};

/// The tests of one source file and the rules each claims. A `proves`
/// comment belongs to the test declared right below it (past comments and
/// attributes), or else to the test it stands in.
fn tests_in(file: &str, host: Host, text: &str, language: &Language) -> (Vec<Test>, Vec<Problem>) {
    let lines: Vec<&str> = text.lines().collect();
    let mut tests: Vec<Test> = Vec::new();
    let mut problems = Vec::new();
    let mut header_at: BTreeMap<usize, usize> = BTreeMap::new();
    for i in 0..lines.len() {
        if let Some(name) = (language.header)(&lines, i) {
            header_at.insert(i, tests.len());
            tests.push(Test {
                host,
                file: file.to_string(),
                ids: ids_in_name(&name).into_iter().collect(),
                name,
            });
        }
    }
    let proves = format!("{} proves ", language.comment);
    for (i, line) in lines.iter().enumerate() {
        let Some(claim) = line.trim().strip_prefix(&proves) else {
            continue;
        };
        let below = (i + 1..lines.len())
            .find(|&j| {
                let next = lines[j].trim();
                header_at.contains_key(&j)
                    || !(next.is_empty()
                        || next.starts_with(language.comment)
                        || (language.attribute)(next))
            })
            .and_then(|j| header_at.get(&j));
        let above = header_at.range(..i).next_back().map(|(_, &t)| t);
        let Some(&test) = below.or(above.as_ref()) else {
            problems.push(format!(
                "{file}:{}: a `proves` comment above no test",
                i + 1
            ));
            continue;
        };
        let ids = claimed(claim);
        if ids.is_empty() {
            problems.push(format!(
                "{file}:{}: a `proves` comment names no rule",
                i + 1
            ));
        }
        tests[test].ids.extend(ids);
    }
    (tests, problems)
}

/// The IDs a claim names: those before its first colon, words in
/// parentheses left out (`IO-W2 (within S-IDEMP)` claims IO-W2).
fn claimed(claim: &str) -> Vec<String> {
    let head = claim.split(':').next().unwrap_or(claim);
    let mut outside = String::new();
    let mut depth = 0usize;
    for c in head.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            c if depth == 0 => outside.push(c),
            _ => {}
        }
    }
    ids_in(&outside)
}

/// The lines of a shared scenario that name rules at the start of their
/// `note`, each as a test named by its line number.
fn scenario_lines(file: &str, text: &str) -> (Vec<Test>, Vec<Problem>) {
    let mut tests = Vec::new();
    let mut problems = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let step: Value = match serde_json::from_str(line) {
            Ok(step) => step,
            Err(e) => {
                problems.push(format!("{file}:{}: {e}", i + 1));
                continue;
            }
        };
        let Some(note) = step.get("note").and_then(Value::as_str) else {
            continue;
        };
        let ids: BTreeSet<String> = match note.split_once(':') {
            Some((head, _)) => claimed(head).into_iter().collect(),
            None => BTreeSet::new(),
        };
        if !ids.is_empty() {
            tests.push(Test {
                host: Host::Scenarios,
                file: file.to_string(),
                name: format!("line {}", i + 1),
                ids,
            });
        }
    }
    (tests, problems)
}

/// The files under `dir` (recursively) whose names end in `suffix`, sorted,
/// leaving out dependencies and build output.
fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !["node_modules", "target", "build", "support", ".venv"].contains(&name.as_str()) {
                found.extend(files(&path, suffix));
            }
        } else if name.ends_with(suffix) {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// Every test of the repository and the rules it claims, with the claims
/// that are not well formed.
fn every_test() -> (Vec<Test>, Vec<Problem>) {
    let root = root();
    let relative = |path: &Path| {
        path.strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/")
    };
    let mut tests = Vec::new();
    let mut problems = Vec::new();
    let mut add = |(found, wrong): (Vec<Test>, Vec<Problem>)| {
        tests.extend(found);
        problems.extend(wrong);
    };
    for path in files(&root.join("tests"), ".rs") {
        let file = relative(&path);
        if file == "tests/traceability.rs" {
            continue;
        }
        let host = if COMMAND_LINE_FILES.contains(&file.as_str()) {
            Host::CommandLine
        } else if file.starts_with("tests/wasi_") {
            Host::Wasi
        } else if file == "tests/javascript.rs" {
            Host::JavaScript
        } else {
            Host::Library
        };
        add(tests_in(&file, host, &read(&path), &RUST));
    }
    for path in files(&root.join("guest"), ".rs")
        .into_iter()
        .chain(files(&root.join("host"), ".rs"))
    {
        let file = relative(&path);
        let host = if file.starts_with("host/wasi/") {
            Host::Wasi
        } else if file.starts_with("host/js/")
            || file.starts_with("host/node/")
            || file.starts_with("host/js-components/")
        {
            Host::JavaScript
        } else {
            Host::Library
        };
        add(tests_in(&file, host, &read(&path), &RUST));
    }
    // The package's tests, on PostgreSQL and in Chromium too.
    let javascript = ["test", "test-postgres", "test-browser"]
        .into_iter()
        .flat_map(|folder| files(&root.join("host/js").join(folder), ".test.js"));
    for path in javascript {
        add(tests_in(
            &relative(&path),
            Host::JavaScript,
            &read(&path),
            &JAVASCRIPT,
        ));
    }
    for path in files(&root.join("host/python/tests"), ".py") {
        let file = relative(&path);
        // `engram mcp` driven by the MCP Python SDK's client.
        let host = if file.ends_with("/test_mcp.py") || file.ends_with("/test_knowledge_graph.py") {
            Host::Mcp
        } else {
            Host::Python
        };
        add(tests_in(&file, host, &read(&path), &PYTHON));
    }
    for path in files(&root.join("tests/scenarios"), ".jsonl") {
        add(scenario_lines(&relative(&path), &read(&path)));
    }
    (tests, problems)
}

/// Where each rule is implemented: the source files (the contract, the
/// engine, the hosts; no test, no bench) whose code or comments name its
/// ID, as the code cites the rule it serves.
fn implementations() -> BTreeMap<String, BTreeSet<String>> {
    let root = root();
    let sources = files(&root.join("wit"), ".wit")
        .into_iter()
        .chain(files(&root.join("guest"), ".rs"))
        .chain(files(&root.join("host"), ".rs"))
        .chain(files(&root.join("host/js/src"), ".js"))
        .chain(files(&root.join("host/python/src"), ".py"));
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in sources {
        let file = path
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if file.starts_with("host/bench/") || file.contains("/tests/") || file.contains("/test-") {
            continue;
        }
        let text = read(&path);
        // A Rust file's unit tests are tests.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for id in ids_in(code) {
            found.entry(id).or_default().insert(file.clone());
        }
    }
    found
}

/// The part a source file belongs to: its crate's or package's folder
/// (`guest`, `host/store`, `host/js-components/adapter`), or `wit`.
fn part(file: &str) -> &str {
    match file.split_once("/src/") {
        Some((folder, _)) => folder,
        None => file.split('/').next().unwrap_or(file),
    }
}

/// `docs/traceability.md`, as the tests are now.
fn traceability() -> String {
    let rules = rules();
    let (tests, _) = every_test();
    let implemented = implementations();
    let mut by_rule: BTreeMap<&str, BTreeMap<Host, BTreeMap<&str, Vec<&str>>>> = BTreeMap::new();
    for test in &tests {
        for id in &test.ids {
            by_rule
                .entry(id)
                .or_default()
                .entry(test.host)
                .or_default()
                .entry(&test.file)
                .or_default()
                .push(&test.name);
        }
    }
    let mut doc = String::new();
    doc.push_str(
        "# Traceability: every rule, the tests that prove it\n\n\
         Generated from the tests by `tests/traceability.rs`; do not edit. `cargo test` fails \
         when this page\nis not what the tests say; `ENGRAM_UPDATE_TRACEABILITY=1 cargo test \
         --test traceability`\nwrites it again. A test proves a rule when its name or a \
         comment starting with `proves` names\nthe rule's ID ([rules.md](rules.md)); a \
         scenario line, when its `note` does. `S-…` are the\nchoices made where the seeds \
         are silent ([choices.md](choices.md)).\n\n\
         Hosts: **Rust library** — `tests/` over the library, and the crates' own tests; \
         **command\nline** — the `engram` binary (`tests/cli.rs`, `scenarios.rs`, \
         `io_faults.rs`,\n`crash_consistency.rs`, `cache.rs`, `multihost.rs`); **WASI** — \
         `tests/wasi_*.rs` and `host/wasi`; **JavaScript** —\n`host/js/test`, \
         `test-postgres`, `test-browser`, `tests/javascript.rs`, `host/node` and `host/js-components`; **Python** \
         and **MCP** — `host/python/tests` (MCP: `test_mcp.py`, `test_knowledge_graph.py`); \
         **scenarios** —\nthe lines of \
         `tests/scenarios/`, which every host runs.\n\n\
         Implemented in: the parts whose source (the contract in `wit/`, the engine, the hosts' \
         code; no test)\nnames the rule's ID where it is enforced or served; each rule's files \
         are listed below.\n\n",
    );
    doc.push_str("## Tests by rule and host\n\n| rule | implemented in |");
    for (_, name) in HOSTS {
        let _ = write!(doc, " {name} |");
    }
    doc.push_str("\n|---|---|");
    for _ in HOSTS {
        doc.push_str("---:|");
    }
    doc.push('\n');
    let mut unproven = Vec::new();
    for rule in &rules {
        let hosts = by_rule.get(rule.id.as_str());
        let _ = write!(doc, "| [{0}](#{1}) |", rule.id, rule.id.to_lowercase());
        let parts: BTreeSet<&str> = implemented
            .get(&rule.id)
            .map(|files| files.iter().map(|f| part(f)).collect())
            .unwrap_or_default();
        if parts.is_empty() {
            doc.push_str(" — |");
        } else {
            let parts: Vec<String> = parts.iter().map(|p| format!("`{p}`")).collect();
            let _ = write!(doc, " {} |", parts.join(", "));
        }
        for (host, _) in HOSTS {
            let count: usize = hosts
                .and_then(|h| h.get(&host))
                .map_or(0, |files| files.values().map(Vec::len).sum());
            if count == 0 {
                doc.push_str(" — |");
            } else {
                let _ = write!(doc, " {count} |");
            }
        }
        doc.push('\n');
        if hosts.is_none() {
            unproven.push(rule.id.as_str());
        }
    }
    let _ = write!(
        doc,
        "\n{} rules and choices; {} tests and scenario lines name at least one.\n",
        rules.len(),
        tests.iter().filter(|t| !t.ids.is_empty()).count()
    );
    if unproven.is_empty() {
        doc.push_str("Every rule is named by a test.\n");
    } else {
        let _ = writeln!(doc, "Named by no test: {}.", unproven.join(", "));
    }
    let uncited: Vec<&str> = rules
        .iter()
        .filter(|rule| !implemented.contains_key(&rule.id))
        .map(|rule| rule.id.as_str())
        .collect();
    if !uncited.is_empty() {
        let _ = writeln!(
            doc,
            "Named where it is implemented by no source yet: {}.",
            uncited.join(", ")
        );
    }
    doc.push_str("\n## The tests of each rule\n");
    for rule in &rules {
        let _ = write!(doc, "\n### {}\n\n{}\n\n", rule.id, rule.text);
        if let Some(files) = implemented.get(&rule.id) {
            let list: Vec<String> = files.iter().map(|f| format!("`{f}`")).collect();
            let _ = writeln!(doc, "- implemented in: {}", list.join(", "));
        }
        let Some(hosts) = by_rule.get(rule.id.as_str()) else {
            doc.push_str("No test names it.\n");
            continue;
        };
        for (host, name) in HOSTS {
            let Some(files) = hosts.get(&host) else {
                continue;
            };
            let _ = writeln!(doc, "- {name}:");
            for (file, names) in files {
                let list: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
                let _ = writeln!(doc, "  - `{file}`: {}", list.join(", "));
            }
        }
    }
    doc
}

#[test]
fn the_traceability_page_is_what_the_tests_say() {
    let path = root().join("docs/traceability.md");
    let generated = traceability();
    if std::env::var_os("ENGRAM_UPDATE_TRACEABILITY").is_some() {
        std::fs::write(&path, &generated).expect("writing docs/traceability.md");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/traceability.md is not what the tests say: run \
         `ENGRAM_UPDATE_TRACEABILITY=1 cargo test --test traceability` and commit it"
    );
}

#[test]
fn every_rule_a_test_claims_is_a_rule_of_the_contract_or_a_named_choice() {
    let known: BTreeSet<String> = rules().into_iter().map(|r| r.id).collect();
    assert!(
        known.len() > 50,
        "the rules were not found in docs/rules.md and docs/choices.md: {known:?}"
    );
    let (tests, mut problems) = every_test();
    assert!(
        tests.iter().filter(|t| !t.ids.is_empty()).count() > 100,
        "too few tests name a rule: the test names or comments were not read"
    );
    for test in &tests {
        for id in test.ids.difference(&known) {
            problems.push(format!(
                "{}: `{}` names {id}, which is no rule",
                test.file, test.name
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// What a cargo command of the workspace prints on its standard output, as
/// JSON (the pinned toolchain's cargo, which takes `-Z` flags here).
fn cargo_json(args: &[&str]) -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let output = Command::new(cargo)
        .args(args)
        .env("RUSTC_BOOTSTRAP", "1")
        .current_dir(root())
        .output()
        .expect("running cargo");
    assert!(
        output.status.success(),
        "cargo {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("cargo {}: its JSON: {e}", args.join(" ")))
}

#[test]
fn cargo_test_runs_every_crate_and_every_test_file_of_the_workspace() {
    let metadata = cargo_json(&[
        "metadata",
        "--format-version",
        "1",
        "--no-deps",
        "--offline",
    ]);
    let ids = |field: &str| -> BTreeSet<String> {
        metadata[field]
            .as_array()
            .unwrap_or_else(|| panic!("cargo metadata has no {field}"))
            .iter()
            .map(|id| id.as_str().unwrap().to_string())
            .collect()
    };
    let default_members = ids("workspace_default_members");
    let mut left_out = Vec::new();
    let mut test_sources = BTreeSet::new();
    let packages = metadata["packages"].as_array().unwrap();
    for package in packages {
        let manifest = PathBuf::from(package["manifest_path"].as_str().unwrap());
        let dir = manifest.parent().unwrap();
        let mut holds_tests = false;
        for target in package["targets"].as_array().unwrap() {
            let source = PathBuf::from(target["src_path"].as_str().unwrap());
            if target["kind"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k == "test")
            {
                holds_tests = true;
                test_sources.insert(source.canonicalize().unwrap());
            }
        }
        holds_tests |= files(&dir.join("src"), ".rs")
            .iter()
            .any(|file| read(file).contains("#[test]"));
        if holds_tests && !default_members.contains(package["id"].as_str().unwrap()) {
            left_out.push(package["name"].as_str().unwrap().to_string());
        }
    }
    assert!(
        packages.len() >= 10,
        "cargo metadata listed {} packages",
        packages.len()
    );
    assert!(
        left_out.is_empty(),
        "crates with tests that `cargo test` does not run (add them to the workspace's \
         default-members): {left_out:?}"
    );
    let root = root();
    let mut never_run = Vec::new();
    if let Ok(entries) = std::fs::read_dir(root.join("tests")) {
        for entry in entries.flatten() {
            let path = entry.path().canonicalize().unwrap();
            if path.extension().is_some_and(|e| e == "rs") && !test_sources.contains(&path) {
                never_run.push(path.strip_prefix(&root).unwrap().display().to_string());
            }
        }
    }

    assert!(
        never_run.is_empty(),
        "test files no crate's [[test]] names, so no `cargo test` runs them: {never_run:?}"
    );
}

/// One crate build of a cargo command's `--unit-graph`: what it is (package,
/// target, mode, features) and the hash of everything that decides whether two
/// builds of it are one (those, its profile without the profile's name, which
/// `cargo test` calls `test`, and the same hash of each crate it is built on).
struct Unit {
    what: String,
    package: String,
    hash: u64,
    dependencies: Vec<usize>,
}

/// The crates one cargo command would build, from its `--unit-graph` (an
/// unstable flag, taken here from the pinned toolchain's cargo with
/// `RUSTC_BOOTSTRAP`).
fn units(args: &[&str]) -> Vec<Unit> {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let args = [
        args,
        &[
            "--locked",
            "--offline",
            "--unit-graph",
            "-Z",
            "unstable-options",
        ],
    ]
    .concat();
    let graph = cargo_json(&args);
    let graph = graph["units"].as_array().expect("the unit graph's units");
    let mut units: Vec<Option<Unit>> = (0..graph.len()).map(|_| None).collect();
    // Each unit after the units it is built on (the graph has no cycles).
    fn hash_of(i: usize, graph: &[Value], units: &mut Vec<Option<Unit>>) -> u64 {
        if let Some(unit) = &units[i] {
            return unit.hash;
        }
        let unit = &graph[i];
        let dependencies: Vec<usize> = unit["dependencies"]
            .as_array()
            .expect("a unit's dependencies")
            .iter()
            .map(|d| d["index"].as_u64().expect("a dependency's index") as usize)
            .collect();
        let mut hashes: Vec<u64> = dependencies
            .iter()
            .map(|&d| hash_of(d, graph, units))
            .collect();
        hashes.sort_unstable();
        let mut profile = unit["profile"].clone();
        profile
            .as_object_mut()
            .expect("a unit's profile")
            .remove("name");
        let package = unit["pkg_id"]
            .as_str()
            .expect("a unit's package")
            .to_string();
        let what = format!(
            "{package} {} {} features {}",
            unit["target"]["name"], unit["mode"], unit["features"]
        );
        let mut hasher = DefaultHasher::new();
        (&what, profile.to_string(), hashes).hash(&mut hasher);
        let hash = hasher.finish();
        units[i] = Some(Unit {
            what,
            package,
            hash,
            dependencies,
        });
        hash
    }
    for i in 0..graph.len() {
        hash_of(i, graph, &mut units);
    }
    units
        .into_iter()
        .map(|u| u.expect("every unit hashed"))
        .collect()
}

#[test]
fn cargo_test_reuses_every_crate_cargo_run_built() {
    // `cargo run -- demo` builds what `cargo build` does: the libraries and
    // binaries of the default members.
    let run = units(&["build"]);
    let test = units(&["test", "--no-run"]);
    assert!(
        run.len() >= 100,
        "cargo build's unit graph has {} units",
        run.len()
    );
    let in_test: BTreeSet<u64> = test.iter().map(|u| u.hash).collect();
    let rebuilt: BTreeSet<usize> = (0..run.len())
        .filter(|&i| !in_test.contains(&run[i].hash))
        .collect();
    // The first of them: those whose own crates are all shared.
    let first: Vec<String> = rebuilt
        .iter()
        .filter(|&&i| run[i].dependencies.iter().all(|d| !rebuilt.contains(d)))
        .map(|&i| {
            let theirs: Vec<&str> = test
                .iter()
                .filter(|u| u.package == run[i].package)
                .map(|u| u.what.as_str())
                .collect();
            format!("{}\n    `cargo test` builds: {theirs:#?}", run[i].what)
        })
        .collect();
    assert!(
        rebuilt.is_empty(),
        "`cargo test` builds {} crates of `cargo run`'s build again, from these on (turn the \
         features `cargo test` adds on in host/rust/Cargo.toml's pins, or make the profiles \
         agree):\n{}",
        rebuilt.len(),
        first.join("\n")
    );
}
