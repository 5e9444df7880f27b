//! The programs a simulated container runs for `kubectl exec`: kubemock runs no processes, so a
//! small built-in set stands for a container's userland, with a shell's exit codes. `echo`,
//! `cat` (stdin, or the files the pod mounts from ConfigMaps, Secrets and the downward API),
//! `env` / `printenv` (the container's environment as the kubelet would build it), `hostname`,
//! `true`, `false`, `exit N`, `sleep N` (on the server's clock, virtual in tests), and `sh -c`
//! (also `bash`, `ash`) running these joined by `;`, `&&`, `||` with `$VAR` expansion, or,
//! without `-c`, the lines it reads on stdin. Anything else writes a message naming the
//! built-ins on stderr and exits 127, as a shell does for a missing program.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;

/// The exit code of a program that does not exist (POSIX `sh`: command not found).
pub(crate) const NOT_FOUND: i32 = 127;

/// The exit code of a shell's usage error (`sh: syntax error`).
const USAGE: i32 = 2;

/// The built-in programs, as the refusal lists them.
const BUILTINS: &str = "cat, echo, env, exit, false, hostname, printenv, sh -c, sleep, true";

/// The directories whose programs resolve to the built-ins (`/bin/echo` is `echo`).
const BIN_DIRS: [&str; 4] = ["/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/"];

/// What a simulated container holds: its environment and the files it mounts.
#[derive(Debug, Clone, Default)]
pub(crate) struct Container {
    /// The container's name, for messages.
    pub(crate) name: String,
    /// `hostname`'s answer: the pod's `spec.hostname` or name.
    pub(crate) hostname: String,
    /// The environment, in the kubelet's order.
    pub(crate) env: Vec<(String, String)>,
    /// Mounted files by absolute path.
    pub(crate) files: BTreeMap<String, Vec<u8>>,
    /// Mounted directories (volume mount paths and their subdirectories).
    pub(crate) dirs: BTreeSet<String>,
    /// Whether the session is a terminal (`tty`): output lines end in CRLF, input is echoed.
    pub(crate) tty: bool,
}

/// A chunk a program writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Output {
    Stdout(Bytes),
    Stderr(Bytes),
}

/// A program's standard streams: stdin (absent, or closed, reads as end of file) and where
/// its output goes (a bounded channel: a slow client slows the program).
pub(crate) struct Stdio {
    pub(crate) stdin: Option<mpsc::Receiver<Bytes>>,
    pub(crate) output: mpsc::Sender<Output>,
}

impl Stdio {
    async fn out(&self, container: &Container, text: impl AsRef<[u8]>) {
        let bytes = terminal(container, text.as_ref());
        let _ = self.output.send(Output::Stdout(bytes)).await;
    }

    async fn err(&self, container: &Container, text: impl AsRef<[u8]>) {
        let bytes = terminal(container, text.as_ref());
        // A terminal has one output stream (upstream's tty sessions have no stderr stream).
        let chunk = if container.tty {
            Output::Stdout(bytes)
        } else {
            Output::Stderr(bytes)
        };
        let _ = self.output.send(chunk).await;
    }

    async fn read(&mut self) -> Option<Bytes> {
        match &mut self.stdin {
            Some(stdin) => stdin.recv().await,
            None => None,
        }
    }
}

/// A terminal's line discipline: LF becomes CRLF.
fn terminal(container: &Container, text: &[u8]) -> Bytes {
    if !container.tty {
        return Bytes::copy_from_slice(text);
    }
    let mut out = Vec::with_capacity(text.len() + 8);
    for &byte in text {
        if byte == b'\n' {
            out.push(b'\r');
        }
        out.push(byte);
    }
    Bytes::from(out)
}

type Run<'a> = Pin<Box<dyn Future<Output = i32> + Send + 'a>>;

/// Runs `argv` in `container`; returns its exit code (0 to 255).
pub(crate) async fn run(
    container: &Container,
    argv: &[String],
    io: &mut Stdio,
    clock: &kubemock_apimachinery::clock::Clock,
) -> i32 {
    program(container, argv, io, clock).await & 0xFF
}

fn program<'a>(
    container: &'a Container,
    argv: &'a [String],
    io: &'a mut Stdio,
    clock: &'a kubemock_apimachinery::clock::Clock,
) -> Run<'a> {
    Box::pin(async move {
        let Some(first) = argv.first() else {
            return 0;
        };
        let name = BIN_DIRS
            .iter()
            .find_map(|dir| first.strip_prefix(dir))
            .filter(|rest| !rest.contains('/'))
            .unwrap_or(first);
        let args = argv.get(1..).unwrap_or_default();
        match name {
            "echo" => {
                let (newline, words) = match args.first().map(String::as_str) {
                    Some("-n") => (false, args.get(1..).unwrap_or_default()),
                    _ => (true, args),
                };
                let mut text = words.join(" ");
                if newline {
                    text.push('\n');
                }
                io.out(container, text).await;
                0
            }
            "true" => 0,
            "false" => 1,
            "exit" => match args.first() {
                None => 0,
                Some(code) => code.parse::<i64>().map_or_else(
                    |_| {
                        // Go's strconv-free shells say "Illegal number"; so does dash.
                        USAGE
                    },
                    |n| (n & 0xFF) as i32,
                ),
            },
            "hostname" => {
                io.out(container, format!("{}\n", container.hostname)).await;
                0
            }
            "env" | "printenv" if args.is_empty() => {
                let text: String = container
                    .env
                    .iter()
                    .map(|(k, v)| format!("{k}={v}\n"))
                    .collect();
                io.out(container, text).await;
                0
            }
            "printenv" => {
                let mut code = 0;
                for wanted in args {
                    match lookup(container, wanted) {
                        Some(value) => io.out(container, format!("{value}\n")).await,
                        None => code = 1,
                    }
                }
                code
            }
            "env" => {
                io.err(
                    container,
                    format!(
                        "kubemock: the simulated env takes no arguments ({}); built-ins are {BUILTINS}\n",
                        args.join(" ")
                    ),
                )
                .await;
                NOT_FOUND
            }
            "cat" => cat(container, args, io).await,
            "sleep" => {
                let Some(seconds) = args.first().and_then(|a| parse_interval(a)) else {
                    let arg = args.first().map_or("", String::as_str);
                    io.err(container, format!("sleep: invalid time interval '{arg}'\n"))
                        .await;
                    return 1;
                };
                clock.sleep(seconds).await;
                0
            }
            "sh" | "bash" | "ash" | "dash" => shell(container, name, args, io, clock).await,
            other => {
                io.err(
                    container,
                    format!(
                        "kubemock: container {} runs no program {other}; built-ins are {BUILTINS}\n",
                        container.name
                    ),
                )
                .await;
                NOT_FOUND
            }
        }
    })
}

/// An environment variable of the container.
fn lookup<'a>(container: &'a Container, name: &str) -> Option<&'a str> {
    container
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// `sleep`'s interval: seconds, fractions allowed, with an optional s/m/h/d suffix.
fn parse_interval(text: &str) -> Option<Duration> {
    let (number, unit) = match text.char_indices().last()? {
        (at, 's') => (&text[..at], 1.0),
        (at, 'm') => (&text[..at], 60.0),
        (at, 'h') => (&text[..at], 3600.0),
        (at, 'd') => (&text[..at], 86_400.0),
        _ => (text, 1.0),
    };
    let seconds = number.parse::<f64>().ok()? * unit;
    (seconds.is_finite() && seconds >= 0.0)
        .then(|| Duration::try_from_secs_f64(seconds).ok())
        .flatten()
}

/// `cat`: files, or stdin when there are none (or for `-`).
async fn cat(container: &Container, args: &[String], io: &mut Stdio) -> i32 {
    let stdin_only = [String::from("-")];
    let args = if args.is_empty() { &stdin_only } else { args };
    let mut code = 0;
    for path in args {
        if path == "-" {
            while let Some(chunk) = io.read().await {
                io.out(container, &chunk).await;
            }
            continue;
        }
        let normal = normalize(path);
        if let Some(content) = container.files.get(&normal) {
            io.out(container, content).await;
        } else if container.dirs.contains(&normal) {
            io.err(container, format!("cat: {path}: Is a directory\n"))
                .await;
            code = 1;
        } else {
            io.err(
                container,
                format!("cat: {path}: No such file or directory\n"),
            )
            .await;
            code = 1;
        }
    }
    code
}

/// An absolute path without `.`, `..` and repeated slashes (relative paths from `/`, the
/// working directory of a container without `workingDir`).
pub(crate) fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    format!("/{}", parts.join("/"))
}

/// `sh -c SCRIPT`, or `sh` reading lines from stdin.
async fn shell(
    container: &Container,
    name: &str,
    args: &[String],
    io: &mut Stdio,
    clock: &kubemock_apimachinery::clock::Clock,
) -> i32 {
    match args.first().map(String::as_str) {
        Some("-c") => {
            let Some(script) = args.get(1) else {
                io.err(
                    container,
                    format!("{name}: -c: option requires an argument\n"),
                )
                .await;
                return USAGE;
            };
            script_run(container, name, script, io, clock, &mut 0)
                .await
                .0
        }
        None => {
            // Lines from stdin, as `echo 'echo hi' | kubectl exec -i POD -- sh` or an
            // interactive `kubectl exec -it POD -- sh`.
            let mut last = 0;
            let mut line = Vec::new();
            if container.tty {
                io.out(container, "# ").await;
            }
            while let Some(chunk) = io.read().await {
                for &byte in chunk.iter() {
                    if container.tty {
                        // A terminal echoes what is typed.
                        let echo = if byte == b'\r' { b'\n' } else { byte };
                        io.out(container, [echo]).await;
                    }
                    if byte != b'\n' && byte != b'\r' {
                        line.push(byte);
                        continue;
                    }
                    let text = String::from_utf8_lossy(&line).into_owned();
                    line.clear();
                    let (code, exited) =
                        script_run(container, name, &text, io, clock, &mut last).await;
                    last = code;
                    if exited {
                        return code;
                    }
                    if container.tty {
                        io.out(container, "# ").await;
                    }
                }
            }
            if !line.is_empty() {
                let text = String::from_utf8_lossy(&line).into_owned();
                last = script_run(container, name, &text, io, clock, &mut last)
                    .await
                    .0;
            }
            last
        }
        Some(other) => {
            io.err(
                container,
                format!(
                    "kubemock: the simulated {name} runs `{name} -c SCRIPT` or reads stdin, not {other}; built-ins are {BUILTINS}\n"
                ),
            )
            .await;
            NOT_FOUND
        }
    }
}

/// Stands for `$?` in a parsed word until the command runs (a NUL cannot be in an argument).
const LAST_STATUS: char = '\0';

/// How a command of a script joins the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Join {
    Always,
    And,
    Or,
}

/// Runs a script: returns its exit code and whether it ran `exit`.
async fn script_run(
    container: &Container,
    name: &str,
    script: &str,
    io: &mut Stdio,
    clock: &kubemock_apimachinery::clock::Clock,
    last: &mut i32,
) -> (i32, bool) {
    let commands = match parse_script(script, container) {
        Ok(commands) => commands,
        Err(message) => {
            io.err(container, format!("{name}: {message}\n")).await;
            return (USAGE, false);
        }
    };
    let mut code = *last;
    for (join, argv) in commands {
        let runs = match join {
            Join::Always => true,
            Join::And => code == 0,
            Join::Or => code != 0,
        };
        if !runs || argv.is_empty() {
            continue;
        }
        // `$VAR` was expanded when parsed, `$?` is now; `exit` ends the script.
        let status = code.to_string();
        let argv: Vec<String> = argv
            .iter()
            .map(|word| word.replace(LAST_STATUS, &status))
            .collect();
        code = program(container, &argv, io, clock).await & 0xFF;
        *last = code;
        if argv.first().map(String::as_str) == Some("exit") {
            return (code, true);
        }
    }
    (code, false)
}

/// Splits a script into commands and words: quotes, backslashes, `$NAME`, `${NAME}`, `$?`;
/// `;`, newlines, `&&`, `||` between commands. Pipes, redirections and substitutions are
/// refused with a message, not ignored.
fn parse_script(script: &str, container: &Container) -> Result<Vec<(Join, Vec<String>)>, String> {
    let mut commands = Vec::new();
    let mut join = Join::Always;
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = script.chars().peekable();
    let unsupported = |what: &str| {
        format!(
            "kubemock's simulated shell runs simple commands joined by ;, && and ||; {what} is not supported (built-ins are {BUILTINS})"
        )
    };
    let expand = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
                  word: &mut String|
     -> Result<(), String> {
        match chars.peek() {
            Some('?') => {
                // Expanded when the command runs, after the ones before it.
                chars.next();
                word.push(LAST_STATUS);
            }
            Some('{') => {
                chars.next();
                let mut name = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(c) => name.push(c),
                        None => return Err("bad substitution".to_owned()),
                    }
                }
                word.push_str(lookup(container, &name).unwrap_or(""));
            }
            Some('(') => return Err(unsupported("$(...)")),
            Some(c) if c.is_ascii_alphanumeric() || *c == '_' => {
                let mut name = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_ascii_alphanumeric() || c == '_' {
                        name.push(c);
                        chars.next();
                    } else {
                        break;
                    }
                }
                word.push_str(lookup(container, &name).unwrap_or(""));
            }
            _ => word.push('$'),
        }
        Ok(())
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("unterminated quoted string".to_owned()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err("unterminated quoted string".to_owned()),
                        },
                        Some('$') => expand(&mut chars, &mut word)?,
                        Some('`') => return Err(unsupported("`...`")),
                        Some(c) => word.push(c),
                        None => return Err("unterminated quoted string".to_owned()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(c) = chars.next() {
                    word.push(c);
                }
            }
            '$' => {
                in_word = true;
                expand(&mut chars, &mut word)?;
            }
            '`' => return Err(unsupported("`...`")),
            '|' | '&' | ';' | '\n' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                let next = match c {
                    '|' if chars.peek() == Some(&'|') => {
                        chars.next();
                        Join::Or
                    }
                    '&' if chars.peek() == Some(&'&') => {
                        chars.next();
                        Join::And
                    }
                    '|' => return Err(unsupported("a pipe (|)")),
                    '&' => return Err(unsupported("a background job (&)")),
                    _ => Join::Always,
                };
                if words.is_empty() && next != Join::Always {
                    return Err(format!("syntax error: unexpected \"{c}{c}\""));
                }
                commands.push((join, std::mem::take(&mut words)));
                join = next;
            }
            '>' | '<' => return Err(unsupported("a redirection")),
            '(' | ')' => return Err(unsupported("a subshell")),
            '#' if !in_word => {
                // A comment runs to the end of the line.
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
                if !words.is_empty() {
                    commands.push((join, std::mem::take(&mut words)));
                    join = Join::Always;
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() && join != Join::Always {
        return Err("syntax error: end of file unexpected".to_owned());
    }
    commands.push((join, words));
    Ok(commands)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container() -> Container {
        Container {
            name: "app".to_owned(),
            hostname: "web-0".to_owned(),
            env: vec![
                ("PATH".to_owned(), "/usr/bin:/bin".to_owned()),
                ("GREETING".to_owned(), "hello world".to_owned()),
            ],
            files: [("/etc/config/a.txt".to_owned(), b"alpha\n".to_vec())]
                .into_iter()
                .collect(),
            dirs: ["/etc/config".to_owned()].into_iter().collect(),
            tty: false,
        }
    }

    /// Runs `argv` with `stdin` (closed after); returns (code, stdout, stderr).
    async fn exec(container: &Container, argv: &[&str], stdin: &[&str]) -> (i32, String, String) {
        let (in_tx, in_rx) = mpsc::channel(16);
        for chunk in stdin {
            in_tx
                .send(Bytes::copy_from_slice(chunk.as_bytes()))
                .await
                .expect("open");
        }
        drop(in_tx);
        let (out_tx, mut out_rx) = mpsc::channel(64);
        let mut io = Stdio {
            stdin: Some(in_rx),
            output: out_tx,
        };
        let argv: Vec<String> = argv.iter().map(|s| (*s).to_owned()).collect();
        let clock = kubemock_apimachinery::clock::Clock::system();
        let code = run(container, &argv, &mut io, &clock).await;
        drop(io);
        let (mut out, mut err) = (String::new(), String::new());
        while let Some(chunk) = out_rx.recv().await {
            match chunk {
                Output::Stdout(b) => out.push_str(&String::from_utf8_lossy(&b)),
                Output::Stderr(b) => err.push_str(&String::from_utf8_lossy(&b)),
            }
        }
        (code, out, err)
    }

    /// argv, stdin chunks, (exit code, stdout, stderr).
    type Case = (
        &'static [&'static str],
        &'static [&'static str],
        (i32, &'static str, &'static str),
    );

    #[tokio::test]
    async fn builtins_write_and_exit_as_a_shell_would() {
        let c = container();
        let cases: Vec<Case> = vec![
            (&["echo", "hi", "there"], &[], (0, "hi there\n", "")),
            (&["/bin/echo", "-n", "x"], &[], (0, "x", "")),
            (&["true"], &[], (0, "", "")),
            (&["false"], &[], (1, "", "")),
            (&["exit", "3"], &[], (3, "", "")),
            (&["exit", "256"], &[], (0, "", "")),
            (&["hostname"], &[], (0, "web-0\n", "")),
            (&["printenv", "GREETING"], &[], (0, "hello world\n", "")),
            (&["printenv", "NOPE"], &[], (1, "", "")),
            (
                &["env"],
                &[],
                (0, "PATH=/usr/bin:/bin\nGREETING=hello world\n", ""),
            ),
            (&["cat"], &["a", "b\n"], (0, "ab\n", "")),
            (
                &["cat", "/etc/config/../config/a.txt"],
                &[],
                (0, "alpha\n", ""),
            ),
            (
                &["cat", "/etc/config"],
                &[],
                (1, "", "cat: /etc/config: Is a directory\n"),
            ),
            (
                &["cat", "/nope"],
                &[],
                (1, "", "cat: /nope: No such file or directory\n"),
            ),
            (
                &[
                    "sh",
                    "-c",
                    "echo \"$GREETING\" ${PATH}; false || echo $?; exit 4; echo no",
                ],
                &[],
                (4, "hello world /usr/bin:/bin\n1\n", ""),
            ),
            (
                &["sh", "-c", "true && echo 'a  b' && false"],
                &[],
                (1, "a  b\n", ""),
            ),
            (
                &["sh"],
                &["echo one\n", "exit 5\necho two\n"],
                (5, "one\n", ""),
            ),
            (&["sleep", "0"], &[], (0, "", "")),
            (
                &["sleep", "x"],
                &[],
                (1, "", "sleep: invalid time interval 'x'\n"),
            ),
        ];
        for (argv, stdin, (code, out, err)) in cases {
            assert_eq!(
                exec(&c, argv, stdin).await,
                (code, out.to_owned(), err.to_owned()),
                "{argv:?}"
            );
        }
    }

    #[tokio::test]
    async fn unknown_programs_and_shell_features_are_refused_clearly() {
        let c = container();
        let (code, out, err) = exec(&c, &["nginx", "-s", "reload"], &[]).await;
        assert_eq!((code, out.as_str()), (127, ""));
        assert_eq!(
            err,
            format!("kubemock: container app runs no program nginx; built-ins are {BUILTINS}\n")
        );
        for script in [
            "echo a | cat",
            "echo a > /tmp/x",
            "echo $(hostname)",
            "echo 'open",
        ] {
            let (code, _, err) = exec(&c, &["sh", "-c", script], &[]).await;
            assert_eq!(code, 2, "{script}");
            assert!(err.starts_with("sh: "), "{script}: {err}");
        }
    }

    #[tokio::test]
    async fn a_terminal_has_crlf_and_one_output_stream() {
        let mut c = container();
        c.tty = true;
        let (code, out, err) = exec(&c, &["sh", "-c", "echo a; cat /nope"], &[]).await;
        assert_eq!(code, 1);
        assert_eq!(out, "a\r\ncat: /nope: No such file or directory\r\n");
        assert_eq!(err, "");
    }

    #[test]
    fn sleep_intervals() {
        assert_eq!(parse_interval("1.5"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_interval("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_interval("-1"), None);
        assert_eq!(parse_interval("inf"), None);
        assert_eq!(parse_interval(""), None);
    }
}
