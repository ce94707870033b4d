//! What the commands read and print: requests from a file or standard
//! input, every one parsed before any runs; answers a line each on standard
//! output; messages on standard error. Nothing here panics when an output
//! cannot be written: an answer that cannot be printed is the command's
//! failure, saying what had already been committed.

use super::args::Io;
use super::{BAD_INPUT, Exit, FAILURE, OK, REFUSED, shown};
use crate::binding as engram;
use engram::cycle::ExecutionPlan;
use engram::json::Plan;
use serde::de::DeserializeOwned;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// Prints a message on standard error; one that cannot be written is lost
/// (there is nowhere left to say so), never a panic.
pub(super) fn say(message: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{message}").and_then(|()| stderr.flush());
}

/// The failure of an answer that could not be printed.
pub(super) fn unprinted(error: impl std::fmt::Display) -> Exit {
    Exit(FAILURE, format!("writing the answer: {error}"))
}

/// The failure of an answer that could not be printed after its request
/// `request_id` was committed: the user learns that it was, and how to get
/// the answer again without writing twice.
pub(super) fn committed_unprinted(request_id: &str, error: impl std::fmt::Display) -> Exit {
    Exit(
        FAILURE,
        format!(
            "request {request_id} was committed, but writing its answer failed: {error}; run it again with the same request id for the same answer (nothing is written twice)"
        ),
    )
}

/// Prints lines on standard output.
pub(super) fn print_lines(lines: Vec<String>) -> Result<(), Exit> {
    write_lines(lines).map_err(unprinted)
}

/// Writes lines on standard output: the error of the write, if it failed.
pub(super) fn write_lines(lines: Vec<String>) -> std::io::Result<()> {
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    for line in lines {
        writeln!(out, "{line}")?;
    }
    out.flush()
}

/// Prints one answer line: exit 1 when it is a refusal, else 0.
pub(super) fn print_answer(line: impl std::fmt::Display, refused: bool) -> Result<u8, Exit> {
    print_lines(vec![line.to_string()])?;
    Ok(if refused { REFUSED } else { OK })
}

/// Prints a read answer: `{"records":[…]}`, or `{"error":…}` with exit 1.
pub(super) fn print_read(answer: anyhow::Result<engram::json::ReadAnswer>) -> Result<u8, Exit> {
    let answer = answer.map_err(super::failure)?;
    let refused = matches!(answer, engram::json::ReadAnswer::Error { .. });
    let line = serde_json::to_string(&answer).map_err(unprinted)?;
    print_answer(line, refused)
}

/// Runs each request in order and prints its answer on a line of its own
/// as it comes. `answer` gives the line, whether it is a refusal, and the
/// request id when the request committed something.
pub(super) fn answer_each<T>(
    requests: Vec<T>,
    mut answer: impl FnMut(T) -> anyhow::Result<(String, bool, Option<String>)>,
) -> Result<u8, Exit> {
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut code = OK;
    for request in requests {
        let (line, refused, committed) = answer(request).map_err(|e| Exit(FAILURE, shown(&e)))?;
        if let Err(error) = writeln!(out, "{line}").and_then(|()| out.flush()) {
            return Err(match committed {
                Some(request_id) => committed_unprinted(&request_id, error),
                None => unprinted(error),
            });
        }
        if refused {
            code = REFUSED;
        }
    }
    Ok(code)
}

/// Reads and parses every request before any is run, so malformed input
/// changes nothing.
pub(super) fn parse_input<T: DeserializeOwned>(io: &Io, what: &str) -> Result<Vec<T>, Exit> {
    let (name, bytes) = read_input(io.file.as_deref())?;
    let at = |line: Option<usize>| line.map(|n| format!(" line {n}:")).unwrap_or_default();
    let parse = |line: Option<usize>, bytes: &[u8]| -> Result<T, Exit> {
        let text = std::str::from_utf8(bytes).map_err(|e| {
            let at = at(line);
            let byte = e.valid_up_to();
            Exit(
                BAD_INPUT,
                format!("{name}:{at} not UTF-8 text (at byte {byte})"),
            )
        })?;
        serde_json::from_str(text).map_err(|e| {
            Exit(
                BAD_INPUT,
                format!("{name}:{} not a valid {what}: {e}", at(line)),
            )
        })
    };
    if !io.batch {
        return parse(None, &bytes).map(|r| vec![r]);
    }
    bytes
        .split(|b| *b == b'\n')
        .enumerate()
        .filter(|(_, line)| !line.trim_ascii().is_empty())
        .map(|(i, line)| parse(Some(i + 1), line))
        .collect()
}

/// The bytes of `file` (standard input when absent or `-`) and its name.
pub(super) fn read_input(file: Option<&Path>) -> Result<(String, Vec<u8>), Exit> {
    match file {
        Some(path) if path != Path::new("-") => {
            let name = path.display().to_string();
            let bytes = std::fs::read(path).map_err(|e| Exit(BAD_INPUT, format!("{name}: {e}")))?;
            Ok((name, bytes))
        }
        _ => {
            let mut bytes = Vec::new();
            std::io::stdin()
                .read_to_end(&mut bytes)
                .map_err(|e| Exit(BAD_INPUT, format!("standard input: {e}")))?;
            Ok(("standard input".to_owned(), bytes))
        }
    }
}

/// The execution plan in the file at `path`.
pub(super) fn parse_plan(path: &Path) -> Result<ExecutionPlan, Exit> {
    let name = path.display();
    let text =
        std::fs::read_to_string(path).map_err(|e| Exit(BAD_INPUT, format!("{name}: {e}")))?;
    let plan: Plan = serde_json::from_str(&text).map_err(|e| {
        Exit(
            BAD_INPUT,
            format!("{name}: not a valid execution plan: {e}"),
        )
    })?;
    Ok(plan.into())
}

/// A text given on the command line, or read from a file.
pub(super) fn text_input(
    text: Option<String>,
    file: Option<PathBuf>,
) -> Result<Option<String>, Exit> {
    match (text, file) {
        (Some(text), _) => Ok(Some(text)),
        (None, Some(path)) => std::fs::read_to_string(&path)
            .map(Some)
            .map_err(|e| Exit(BAD_INPUT, format!("{}: {e}", path.display()))),
        (None, None) => Ok(None),
    }
}
