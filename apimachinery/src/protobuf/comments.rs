//! Comment stripping for `.proto` text, shared by `build.rs` (which embeds the schemas without
//! their comments) and the schema parser (which accepts commented text too). The Go markers
//! that drive strategic merge patch and server-side apply (`// +patchStrategy=merge`,
//! `// +listType=map`, ...) are kept, as `@patchStrategy=merge` lines before the field or
//! message they describe.

/// The markers kept from comments.
pub(crate) const MARKERS: &[&str] = &[
    "patchStrategy",
    "patchMergeKey",
    "listType",
    "listMapKey",
    "mapType",
    "structType",
];

/// The text without `//` and `/* */` comments and blank lines, lines trimmed; marker comments
/// become `@name=value` lines.
pub(crate) fn strip_comments(text: &str) -> String {
    let mut out = String::new();
    let mut in_block = false;
    for line in text.lines() {
        let mut line = line;
        if !in_block
            && let Some(marker) = line
                .trim()
                .strip_prefix("// +")
                .or_else(|| line.trim().strip_prefix("@"))
            && let Some((name, value)) = marker.split_once('=')
            && MARKERS.contains(&name)
        {
            out.push('@');
            out.push_str(name);
            out.push('=');
            out.push_str(value.trim());
            out.push('\n');
            continue;
        }
        if in_block {
            match line.find("*/") {
                Some(end) => {
                    in_block = false;
                    line = &line[end + 2..];
                }
                None => continue,
            }
        }
        // Whichever comes first: a line comment, or a block comment's start.
        let line_comment = line.find("//");
        if let Some(start) = line.find("/*")
            && line_comment.is_none_or(|l| start < l)
        {
            in_block = !line[start..].contains("*/");
            line = &line[..start];
        }
        let line = line.split("//").next().unwrap_or("").trim();
        if !line.is_empty() {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}
