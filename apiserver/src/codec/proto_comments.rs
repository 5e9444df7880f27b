//! Comment stripping for `.proto` text, shared by `build.rs` (which embeds the schemas without
//! their comments) and the schema parser (which accepts commented text too).

/// The text without `//` and `/* */` comments and blank lines, lines trimmed.
pub(crate) fn strip_comments(text: &str) -> String {
    let mut out = String::new();
    let mut in_block = false;
    for line in text.lines() {
        let mut line = line;
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
