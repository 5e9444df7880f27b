//! Static bearer tokens (`--token-auth-file`), read as kube-apiserver reads them
//! (`staging/src/k8s.io/apiserver/pkg/authentication/token/tokenfile/tokenfile.go`): a CSV file,
//! one `token,user,uid,"group1,group2"` record per line, at least three columns, the groups
//! optional. Empty tokens are skipped and a token given twice is the last record's, each with
//! a warning, as upstream.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::Map;
use tracing::warn;

use crate::identity::{SYSTEM_AUTHENTICATED, UserInfo};

/// The users of the tokens of a token file.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tokens {
    users: HashMap<String, Arc<UserInfo>>,
}

impl Tokens {
    /// The tokens of the CSV file at `path` (its contents `text`).
    pub(crate) fn parse(path: &Path, text: &str) -> Result<Tokens, String> {
        let mut users = HashMap::new();
        for (number, (line, record)) in read_csv(text)?.into_iter().enumerate() {
            let number = number + 1;
            if record.len() < 3 {
                return Err(format!(
                    "token file '{}' must have at least 3 columns (token, user name, user uid), \
                     found {}",
                    path.display(),
                    record.len()
                ));
            }
            if record[0].is_empty() {
                warn!(path = %path.display(), record = number, line, "empty token in the token file");
                continue;
            }
            let mut groups: Vec<String> = match record.get(3) {
                Some(groups) => groups.split(',').map(str::to_owned).collect(),
                None => Vec::new(),
            };
            // `group.AuthenticatedGroupAdder`.
            if !groups.iter().any(|g| g == SYSTEM_AUTHENTICATED) {
                groups.push(SYSTEM_AUTHENTICATED.to_owned());
            }
            let user = UserInfo {
                name: record[1].clone(),
                uid: record[2].clone(),
                groups,
                extra: Map::new(),
            };
            if users.insert(record[0].clone(), Arc::new(user)).is_some() {
                warn!(path = %path.display(), record = number, line, "duplicate token in the token file");
            }
        }
        Ok(Tokens { users })
    }

    /// The user of `token`, if the file has it.
    pub(crate) fn user(&self, token: &str) -> Option<&Arc<UserInfo>> {
        self.users.get(token)
    }
}

/// The records of a CSV text as Go's `encoding/csv` reads them (no lazy quotes, any number of
/// fields, empty lines skipped, `""` an escaped quote inside a quoted field, which may span
/// lines), each with the line it starts on.
fn read_csv(text: &str) -> Result<Vec<(usize, Vec<String>)>, String> {
    let mut records = Vec::new();
    let mut line = 1;
    let mut chars = text.chars().peekable();
    while chars.peek().is_some() {
        let start = line;
        // An empty line is no record.
        if matches!(chars.peek(), Some('\n')) {
            chars.next();
            line += 1;
            continue;
        }
        if matches!(chars.peek(), Some('\r')) {
            let mut ahead = chars.clone();
            ahead.next();
            if matches!(ahead.peek(), Some('\n')) {
                chars.next();
                chars.next();
                line += 1;
                continue;
            }
        }
        let mut record = Vec::new();
        loop {
            let mut field = String::new();
            if chars.peek() == Some(&'"') {
                chars.next();
                loop {
                    match chars.next() {
                        None => {
                            return Err(format!(
                                "record on line {start}: extraneous or missing \" in quoted-field"
                            ));
                        }
                        Some('"') if chars.peek() == Some(&'"') => {
                            chars.next();
                            field.push('"');
                        }
                        Some('"') => break,
                        Some('\n') => {
                            line += 1;
                            field.push('\n');
                        }
                        Some(c) => field.push(c),
                    }
                }
                match chars.peek() {
                    None | Some(',' | '\n' | '\r') => {}
                    Some(_) => {
                        return Err(format!(
                            "record on line {start}: extraneous or missing \" in quoted-field"
                        ));
                    }
                }
            } else {
                while let Some(&c) = chars.peek() {
                    if matches!(c, ',' | '\n') {
                        break;
                    }
                    if c == '\r' {
                        let mut ahead = chars.clone();
                        ahead.next();
                        if matches!(ahead.peek(), Some('\n') | None) {
                            break;
                        }
                    }
                    if c == '"' {
                        return Err(format!(
                            "record on line {start}: bare \" in non-quoted-field"
                        ));
                    }
                    field.push(c);
                    chars.next();
                }
            }
            record.push(field);
            match chars.next() {
                Some(',') => continue,
                Some('\r') => {
                    if chars.peek() == Some(&'\n') {
                        chars.next();
                    }
                    line += 1;
                    break;
                }
                Some('\n') => {
                    line += 1;
                    break;
                }
                None => break,
                Some(c) => return Err(format!("record on line {start}: unexpected {c:?}")),
            }
        }
        records.push((start, record));
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_give_users_with_their_groups_and_the_authenticated_group() {
        let text = "secret1,alice,1001,\"dev,ops\"\n\nsecret2,bob,1002\r\n,nobody,0\n";
        let tokens = Tokens::parse(Path::new("tokens.csv"), text).unwrap();
        let alice = tokens.user("secret1").unwrap();
        assert_eq!(alice.name, "alice");
        assert_eq!(alice.uid, "1001");
        assert_eq!(alice.groups, ["dev", "ops", "system:authenticated"]);
        let bob = tokens.user("secret2").unwrap();
        assert_eq!(bob.groups, ["system:authenticated"]);
        assert!(tokens.user("").is_none(), "empty tokens are skipped");
        assert!(tokens.user("secret3").is_none());
    }

    #[test]
    fn short_records_and_bad_quotes_are_refused_as_upstream_words_it() {
        let err = Tokens::parse(Path::new("/etc/tokens.csv"), "secret,alice\n").unwrap_err();
        assert_eq!(
            err,
            "token file '/etc/tokens.csv' must have at least 3 columns (token, user name, user \
             uid), found 2"
        );
        assert!(read_csv("a,b\"c,d\n").is_err());
        assert!(read_csv("a,\"b\n").is_err());
        assert_eq!(
            read_csv("a,\"x \"\"y\"\"\nz\",c\nd,e,f").unwrap(),
            vec![
                (
                    1,
                    vec!["a".to_owned(), "x \"y\"\nz".to_owned(), "c".to_owned()]
                ),
                (3, vec!["d".to_owned(), "e".to_owned(), "f".to_owned()]),
            ]
        );
    }
}
