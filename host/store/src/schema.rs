//! The schema texts' versions: each store's schema is one SQL text whose
//! versions start at a line `-- version N`; a new store runs them all, an
//! older one the versions after its own.

/// The statements of each version of `text`, oldest first: the text after
/// each line `-- version N`, up to the next.
pub(crate) fn versions(text: &'static str) -> Vec<(i32, &'static str)> {
    let mut versions = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("\n-- version ") {
        let after = &rest[at + "\n-- version ".len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let version = after[..digits]
            .parse()
            .expect("a version number after `-- version`");
        let body = after.find('\n').map_or("", |end| &after[end..]);
        let next = body.find("\n-- version ").unwrap_or(body.len());
        versions.push((version, &body[..next]));
        rest = &body[next..];
    }
    versions
}

/// The last version of `versions`.
pub(crate) fn last(versions: &[(i32, &str)]) -> i32 {
    versions.last().map_or(0, |(version, _)| *version)
}

/// The statements of `versions` that bring a store of version `from` to
/// the last one.
pub(crate) fn after(versions: &[(i32, &str)], from: i32) -> String {
    versions
        .iter()
        .filter(|(version, _)| *version > from)
        .map(|(_, statements)| *statements)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_splits_at_its_version_lines() {
        let text = "-- header\n\n-- version 1\nA;\n-- version 2: why\nB;\nC;\n";
        let found = versions(text);
        assert_eq!(found, vec![(1, "\nA;"), (2, "\nB;\nC;\n")]);
        assert_eq!(last(&found), 2);
        assert_eq!(after(&found, 1), "\nB;\nC;\n");
        assert_eq!(after(&found, 0), "\nA;\nB;\nC;\n");
    }
}
