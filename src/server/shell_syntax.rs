//! Reads a shell command the way a shell would, for the safety floor: every simple command in
//! it (lists, pipelines, subshells, groups, bodies of `if`/`for`/`while`/functions, command and
//! process substitutions, here-document bodies), each as its words after quote removal, with
//! whether it reads its standard input from a pipe or a here-document.
//!
//! Parsing is tree-sitter's bash grammar: built for hostile, half-written input (it never
//! panics or loops on it, and nesting does not grow the stack), which matters here because
//! the text comes from the agent. Anything it marks as an error is *unreadable*; the floor
//! then asks rather than guesses.
//!
//! Before words are split, a `\` at a line's end joins the two lines, as bash's reader does
//! (outside single quotes, `$'…'`, comments and quoted here-documents): the grammar reads
//! `counter\⏎sign` as two words where bash runs one. Here-document bodies and here-strings
//! are kept as the script's documents (what a command reads on its standard input).
//!
//! A leaf: the floor (`gate::floor`), standing rules (`gate::rules`) and the shell tool's
//! reading of what a command touches (`tools::shell_disk`) all read shell code through it.

use std::borrow::Cow;
use std::cell::RefCell;

use tree_sitter::{Node, Parser};

/// Commands longer than this are not read (the floor asks).
const MAX_SOURCE_BYTES: usize = 64 * 1024;

/// One word of a command as the program will receive it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Word {
    /// The text after quote removal; parts only known when it runs are left out (an unquoted
    /// glob's characters are kept: the text is then its pattern).
    pub text: String,
    /// Holds an expansion (`$X`, `$(…)`, `$((…))`) or an unquoted glob: its value, and so
    /// whether it is a flag or which program it names, is only known when it runs.
    pub dynamic: bool,
    /// Holds an unquoted glob (`*`, `?`, `[`): `text` is the pattern the shell expands.
    pub glob: bool,
    /// The variables it expands (`$F`, `${F}`, `"$F"`, `$1`, `$@`), by name.
    pub vars: Vec<String>,
    /// Holds a command or process substitution, or a parameter expansion with operators:
    /// nothing about its value is known before it runs.
    pub opaque: bool,
    /// The word with each variable in its place: `\u{1}NAME\u{2}` (and `\u{1}\u{2}` for
    /// any other part only known when it runs), so a variable's value can be put where it
    /// stands (`.e${X}v` with `X=n` is `.env`).
    pub template: String,
    /// Holds an unquoted `~` the shell may expand to a home folder: at its start (`~`,
    /// `~/x`, `~root`), or after an `=` or `:` (`X=~`, `PATH=a:~/bin`). `text` keeps the
    /// `~` as written; `'~'` and `\~` are literal and not marked.
    pub tilde: bool,
}

impl Word {
    /// A word whose text is all there is to it.
    pub fn literal(text: impl Into<String>) -> Word {
        let text = text.into();
        Word {
            template: text.clone(),
            text,
            ..Word::default()
        }
    }

    /// A word only known when it runs, of which nothing else is known.
    pub fn unknown() -> Word {
        Word {
            dynamic: true,
            template: "\u{1}\u{2}".into(),
            ..Word::default()
        }
    }

    /// The word with `value` put where `name` stands, and every other run-time part left out.
    pub fn with_value(&self, name: &str, value: &str) -> String {
        let mut out = String::with_capacity(self.template.len());
        let mut rest = self.template.as_str();
        while let Some(start) = rest.find('\u{1}') {
            out.push_str(&rest[..start]);
            let after = &rest[start + 1..];
            let end = after.find('\u{2}').unwrap_or(after.len());
            if &after[..end] == name {
                out.push_str(value);
            }
            rest = after.get(end + 1..).unwrap_or("");
        }
        out.push_str(rest);
        out
    }

    /// Folds the parts of a concatenation or a string into one word.
    fn joined(parts: &[Word]) -> Word {
        Word {
            template: parts.iter().map(|p| p.template.as_str()).collect(),
            text: parts.iter().map(|p| p.text.as_str()).collect(),
            dynamic: parts.iter().any(|p| p.dynamic),
            glob: parts.iter().any(|p| p.glob),
            vars: parts.iter().flat_map(|p| p.vars.iter().cloned()).collect(),
            opaque: parts.iter().any(|p| p.opaque),
            tilde: parts.iter().any(|p| p.tilde),
        }
    }
}

/// One simple command: a program and its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The program's name (or path) first; assignments before it are not words.
    pub words: Vec<Word>,
    /// Its standard input comes from a pipe, a here-document or a here-string.
    pub stdin_fed: bool,
}

/// Everything a command line would run, and the files it redirects to or from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Script {
    /// In the order they appear.
    pub commands: Vec<SimpleCommand>,
    pub redirect_targets: Vec<Word>,
    /// Every value a variable is given in it (`F=.env`, `export F=…`, `for F in …`; what
    /// `read F` gives is unknown), by name.
    pub assignments: Vec<(String, Word)>,
    /// The here-document bodies and here-strings in it: text fed to a command's standard
    /// input (a body with expansions is dynamic, its text what is written).
    pub documents: Vec<Word>,
    /// It changes the environment its commands run with: an assignment, `export`, `unset`,
    /// `declare`, `source`/`.`, `set`, `eval`.
    pub changes_env: bool,
}

thread_local! {
    /// One parser per thread: creating one is cheap, but not free.
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// Reads `source`. `Err` says, in words, why it cannot be read safely.
pub fn read(source: &str) -> Result<Script, String> {
    if source.len() > MAX_SOURCE_BYTES {
        return Err(format!("it is longer than {} KiB", MAX_SOURCE_BYTES / 1024));
    }
    // bash reads `\` + CR as an escaped CR inside a word, the grammar as a line continuation.
    if source.contains("\\\r") {
        return Err(
            "it has a `\\` before a carriage return, which bash and this reading split differently"
                .into(),
        );
    }
    let joined = join_continuations(source)?;
    let tree = parse(&joined)?;
    let root = tree.root_node();
    if root.has_error() {
        return Err(syntax_error(root, &joined));
    }
    Ok(collect(root, &joined))
}

fn parse(source: &str) -> Result<tree_sitter::Tree, String> {
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .map_err(|e| format!("the shell grammar did not load: {e}"))?;
            *slot = Some(parser);
        }
        slot.as_mut()
            .and_then(|parser| parser.parse(source, None))
            .ok_or_else(|| "the parser gave up".to_owned())
    })
}

/// The source with every line continuation (`\` + newline where bash's reader removes it)
/// taken out. Read again until none is left (twice at most).
fn join_continuations(source: &str) -> Result<Cow<'_, str>, String> {
    if !source.contains("\\\n") {
        return Ok(Cow::Borrowed(source));
    }
    let mut text = source.to_owned();
    for _ in 0..3 {
        let tree = parse(&text)?;
        let cuts = continuations(tree.root_node(), &text);
        if cuts.is_empty() {
            return Ok(Cow::Owned(text));
        }
        let mut joined = String::with_capacity(text.len());
        let mut at = 0;
        for cut in cuts {
            joined.push_str(&text[at..cut]);
            at = cut + 2;
        }
        joined.push_str(&text[at..]);
        text = joined;
    }
    Err("it continues lines (`\\` at a line's end) in a way that cannot be read safely".into())
}

/// Where a `\` + newline is a line continuation: not inside single quotes, `$'…'`, a comment or
/// a quoted here-document, and not itself escaped (an odd run of backslashes ends there).
fn continuations(root: Node, text: &str) -> Vec<usize> {
    let kept = protected(root, text);
    let inside = |at: usize| kept.iter().any(|(start, end)| *start <= at && at < *end);
    let bytes = text.as_bytes();
    let mut cuts = Vec::new();
    for (newline, _) in text.match_indices('\n') {
        let mut run = 0;
        while newline > run && bytes[newline - run - 1] == b'\\' && !inside(newline - run - 1) {
            run += 1;
        }
        if run % 2 == 1 {
            cuts.push(newline - 1);
        }
    }
    cuts
}

/// The byte ranges where a `\` + newline stays as written.
fn protected(root: Node, text: &str) -> Vec<(usize, usize)> {
    let mut kept = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        match node.kind() {
            "raw_string" | "ansi_c_string" | "comment" => {
                kept.push((node.start_byte(), node.end_byte()));
                continue;
            }
            "heredoc_redirect" if heredoc_quoted(node, text) => {
                kept.push((node.start_byte(), node.end_byte()));
                continue;
            }
            _ => {}
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    kept
}

/// `<<'EOF'`, `<<"EOF"`, `<<\EOF`: the body is taken as written.
fn heredoc_quoted(redirect: Node, source: &str) -> bool {
    let mut cursor = redirect.walk();
    let start = redirect
        .children(&mut cursor)
        .find(|c| c.kind() == "heredoc_start");
    start
        .and_then(|s| source.get(s.byte_range()))
        .is_some_and(|t| t.contains(['\'', '"', '\\']))
}

/// Where the first error is, in words.
fn syntax_error(root: Node, source: &str) -> String {
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if node.is_error() || node.is_missing() {
            let at: String = source
                .get(node.start_byte()..)
                .unwrap_or("")
                .chars()
                .take(24)
                .collect();
            return if node.is_missing() {
                format!("it is incomplete (`{}` expected)", node.kind())
            } else {
                format!("it has a syntax error near `{}`", at.trim())
            };
        }
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    "it has a syntax error".to_owned()
}

/// Walks the whole tree without recursion (nesting is unbounded in hostile input).
fn collect(root: Node, source: &str) -> Script {
    let mut script = Script::default();
    // (node, whether its standard input is fed by a pipe or a document)
    let mut stack: Vec<(Node, bool)> = vec![(root, false)];
    while let Some((node, fed)) = stack.pop() {
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        match node.kind() {
            "pipeline" => {
                // A stage after a `|` (even one that opens the node, as tree-sitter nests
                // `cat <<EOF | sh` inside the here-document) reads the pipe.
                let mut after_pipe = fed;
                let mut staged = Vec::with_capacity(children.len());
                for child in children {
                    if matches!(child.kind(), "|" | "|&") {
                        after_pipe = true;
                    } else {
                        staged.push((child, after_pipe));
                    }
                }
                stack.extend(staged.into_iter().rev());
            }
            "redirected_statement" => {
                let documents = children
                    .iter()
                    .any(|c| matches!(c.kind(), "heredoc_redirect" | "herestring_redirect"));
                for child in children.into_iter().rev() {
                    let is_body = !child.kind().ends_with("_redirect");
                    stack.push((child, fed || (is_body && documents)));
                }
            }
            _ => {
                record(node, &children, fed, source, &mut script);
                stack.extend(children.into_iter().rev().map(|c| (c, fed)));
            }
        }
    }
    script
}

/// What one node adds to the script: a command, a redirect target, a document, a value a
/// variable is given, a change of the environment.
fn record(node: Node, children: &[Node], fed: bool, source: &str, script: &mut Script) {
    match node.kind() {
        "heredoc_redirect" => {
            let quoted = heredoc_quoted(node, source);
            if let Some(body) = children.iter().find(|c| c.kind() == "heredoc_body") {
                script.documents.push(document(*body, source, quoted));
            }
        }
        "herestring_redirect" => {
            let mut cursor = node.walk();
            if let Some(text) = node.named_children(&mut cursor).last() {
                script.documents.push(word(text, source));
            }
        }
        "unset_command" | "declaration_command" => script.changes_env = true,
        "file_redirect" => {
            if let Some(target) = node.child_by_field_name("destination") {
                script.redirect_targets.push(word(target, source));
            }
        }
        "command" => record_command(simple_command(node, children, source, fed), script),
        "variable_assignment" => {
            script.changes_env = true;
            if let Some(name) = node.child_by_field_name("name") {
                let name = source.get(name.byte_range()).unwrap_or("").to_owned();
                let value = node
                    .child_by_field_name("value")
                    .map_or_else(|| Word::literal(""), |v| word(v, source));
                let appends = children.iter().any(|c| c.kind() == "+=");
                let value = if appends {
                    appended(&name, value)
                } else {
                    value
                };
                script.assignments.push((name, value));
            }
        }
        "for_statement" => {
            if let Some(name) = node.child_by_field_name("variable") {
                let name = source.get(name.byte_range()).unwrap_or("").to_owned();
                let mut cursor = node.walk();
                let values: Vec<Word> = node
                    .children_by_field_name("value", &mut cursor)
                    .map(|v| word(v, source))
                    .collect();
                // `for F; do`: the script's arguments.
                if values.is_empty() {
                    script.assignments.push((name.clone(), Word::unknown()));
                }
                script
                    .assignments
                    .extend(values.into_iter().map(|v| (name.clone(), v)));
            }
        }
        _ => {}
    }
}

/// The value `NAME+=value` gives: the variable's value before it (only known when it runs),
/// then `value` — never `value` alone, which `NAME=value` gives.
fn appended(name: &str, value: Word) -> Word {
    let before = Word {
        dynamic: true,
        template: format!("\u{1}{name}\u{2}"),
        vars: vec![name.to_owned()],
        ..Word::default()
    };
    Word::joined(&[before, value])
}

fn record_command(command: SimpleCommand, script: &mut Script) {
    if let Some(program) = command.words.first() {
        if matches!(
            program.text.as_str(),
            "source" | "." | "set" | "eval" | "export"
        ) {
            script.changes_env = true;
        }
        // `read F`, `mapfile F`: a value only known when it runs.
        if matches!(program.text.as_str(), "read" | "mapfile" | "readarray") {
            for name in command.words.iter().skip(1) {
                if !name.text.starts_with('-') {
                    script
                        .assignments
                        .push((name.text.clone(), Word::unknown()));
                }
            }
        }
    }
    script.commands.push(command);
}

fn simple_command(node: Node, children: &[Node], source: &str, fed: bool) -> SimpleCommand {
    let mut words = Vec::new();
    if let Some(name) = node.child_by_field_name("name") {
        let mut cursor = name.walk();
        let inner: Vec<Node> = name.named_children(&mut cursor).collect();
        words.push(match inner.as_slice() {
            [one] => word(*one, source),
            _ => word(name, source),
        });
    }
    for (i, child) in children.iter().enumerate() {
        let index = u32::try_from(i).unwrap_or(u32::MAX);
        if node.field_name_for_child(index) == Some("argument") {
            words.push(word(*child, source));
        }
    }
    let stdin_fed = fed
        || children
            .iter()
            .any(|c| c.kind() == "herestring_redirect" || c.kind() == "heredoc_redirect");
    SimpleCommand { words, stdin_fed }
}

/// A here-document's body as the command reads it: as written when its delimiter is quoted;
/// else with `\$ \` \\` undone and each expansion in its place (the body is then dynamic).
fn document(body: Node, source: &str, quoted: bool) -> Word {
    let raw = source.get(body.byte_range()).unwrap_or("");
    if quoted {
        return Word::literal(raw);
    }
    let unescape = |text: &str| {
        let mut out = String::with_capacity(text.len());
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, chars.peek()) {
                ('\\', Some(&next @ ('$' | '`' | '\\'))) => {
                    chars.next();
                    out.push(next);
                }
                _ => out.push(c),
            }
        }
        Word::literal(out)
    };
    let mut parts = Vec::new();
    let mut at = body.start_byte();
    let mut cursor = body.walk();
    for child in body.named_children(&mut cursor) {
        if child.kind() == "heredoc_content" || child.start_byte() < at {
            continue;
        }
        parts.push(unescape(source.get(at..child.start_byte()).unwrap_or("")));
        parts.push(Word {
            glob: false,
            ..word(child, source)
        });
        at = child.end_byte();
    }
    parts.push(unescape(source.get(at..body.end_byte()).unwrap_or("")));
    Word::joined(&parts)
}

/// A word's value after quote removal.
fn word(node: Node, source: &str) -> Word {
    let raw = source.get(node.byte_range()).unwrap_or("");
    match node.kind() {
        "word" => unquoted(raw),
        "number" => Word::literal(raw),
        "raw_string" => Word::literal(
            raw.strip_prefix('\'')
                .and_then(|r| r.strip_suffix('\''))
                .unwrap_or(raw),
        ),
        "ansi_c_string" => ansi_c(raw),
        "string" | "translated_string" => double_quoted(node, source),
        "concatenation" => {
            let mut cursor = node.walk();
            let parts: Vec<Word> = node
                .children(&mut cursor)
                .map(|part| word(part, source))
                .collect();
            let mut joined = Word::joined(&parts);
            // tree-sitter splits `.{e,x}nv` into plain words; the braces are seen whole here.
            mark_braces(&mut joined);
            joined
        }
        "simple_expansion" => {
            // `$F`, `$1`, `$@`: the variable's name is what follows the `$`.
            let name = raw.trim_start_matches('$').to_owned();
            Word {
                dynamic: true,
                template: format!("\u{1}{name}\u{2}"),
                vars: vec![name],
                ..Word::default()
            }
        }
        "expansion" => {
            // `${F}` names its variable; `${F:-x}`, `${F/a/b}`, `${!F}` compute a value.
            let inner = raw
                .strip_prefix("${")
                .and_then(|r| r.strip_suffix('}'))
                .unwrap_or("");
            let plain =
                !inner.is_empty() && inner.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            Word {
                dynamic: true,
                template: if plain {
                    format!("\u{1}{inner}\u{2}")
                } else {
                    "\u{1}\u{2}".into()
                },
                vars: if plain {
                    vec![inner.to_owned()]
                } else {
                    Vec::new()
                },
                opaque: !plain,
                ..Word::default()
            }
        }
        // A number, whatever it computes.
        "arithmetic_expansion" => Word::unknown(),
        // Substitutions and anything unusual: nothing is known before it runs.
        _ => Word {
            dynamic: true,
            opaque: true,
            template: "\u{1}\u{2}".into(),
            ..Word::default()
        },
    }
}

/// An unquoted word: backslashes escape the next character; an unescaped glob character
/// makes it dynamic (a file named `-rf` turns `rm *` into `rm -rf …`).
fn unquoted(raw: &str) -> Word {
    let mut text = String::with_capacity(raw.len());
    let mut word = Word::default();
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(escaped) => text.push(escaped),
            },
            '*' | '?' | '[' => {
                word.dynamic = true;
                word.glob = true;
                text.push(c);
            }
            '$' | '`' => {
                word.dynamic = true;
                word.opaque = true;
            }
            _ => text.push(c),
        }
    }
    let mut word = Word {
        template: text.clone(),
        text,
        tilde: expands_tilde(raw),
        ..word
    };
    mark_braces(&mut word);
    word
}

/// Whether an unquoted word's `~` may be expanded to a home folder: bash expands one at the
/// word's start, and after the `=` or a `:` of what reads as an assignment (`X=~`, also as an
/// argument: `echo x=~`). Read wider than bash (any `=~` or `:~`): a word wrongly marked only
/// loses the history reviewer's subject.
fn expands_tilde(raw: &str) -> bool {
    raw.starts_with('~') || raw.contains("=~") || raw.contains(":~")
}

/// Brace expansion (`.{e,x}nv`, `{1..3}`) makes several words of one: read as a glob, whose
/// `{a,b}` alternatives the floor's matching understands.
fn mark_braces(word: &mut Word) {
    let text = &word.text;
    if let Some(open) = text.find('{')
        && text[open..].find('}').is_some_and(|close| {
            let inside = &text[open..open + close];
            inside.contains(',') || inside.contains("..")
        })
    {
        word.dynamic = true;
        word.glob = true;
    }
}

/// `"…"`: its text parts, with `\$ \` \" \\` and line continuations undone; any expansion
/// inside makes it dynamic.
fn double_quoted(node: Node, source: &str) -> Word {
    let mut text = String::new();
    let mut template = String::new();
    let mut expanded: Vec<Word> = Vec::new();
    let mut cursor = node.walk();
    for part in node.children(&mut cursor) {
        match part.kind() {
            "\"" | "$\"" => {}
            "string_content" => {
                let raw = source.get(part.byte_range()).unwrap_or("");
                let mut chars = raw.chars().peekable();
                while let Some(c) = chars.next() {
                    if c == '\\'
                        && let Some(&next) = chars.peek()
                        && matches!(next, '$' | '`' | '"' | '\\' | '\n')
                    {
                        chars.next();
                        if next != '\n' {
                            text.push(next);
                            template.push(next);
                        }
                        continue;
                    }
                    text.push(c);
                    template.push(c);
                }
            }
            "string" => {
                let inner = double_quoted(part, source);
                text.push_str(&inner.text);
                template.push_str(&inner.template);
                expanded.push(Word {
                    text: String::new(),
                    ..inner
                });
            }
            // An expansion inside the quotes: never a glob there.
            _ => {
                let inner = word(part, source);
                template.push_str(&inner.template);
                expanded.push(Word {
                    glob: false,
                    ..inner
                });
            }
        }
    }
    let mut joined = Word::joined(&expanded);
    joined.text = text;
    joined.template = template;
    joined
}

/// `$'…'`: the common escapes decoded; an unusual one leaves the word dynamic. So does a
/// `\xHH` or `\NNN` above 0x7F: one raw byte bash passes as is, no Unicode character (`$'\xff'`
/// is the byte 0xFF, not `ÿ`'s two bytes), only known for what it is when it runs.
fn ansi_c(raw: &str) -> Word {
    let (text, dynamic) = ansi_c_text(raw);
    Word {
        template: text.clone(),
        text,
        dynamic,
        ..Word::default()
    }
}

fn ansi_c_text(raw: &str) -> (String, bool) {
    let body = raw
        .strip_prefix("$'")
        .and_then(|r| r.strip_suffix('\''))
        .unwrap_or(raw);
    let mut text = String::new();
    let mut dynamic = false;
    let mut chars = body.chars().peekable();
    // Up to `max` digits of `radix` after an escape letter, as a character.
    let number = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>, radix: u32, max: usize| {
        let mut value: u32 = 0;
        let mut seen = 0;
        while seen < max
            && let Some(d) = chars.peek().and_then(|c| c.to_digit(radix))
        {
            value = value * radix + d;
            chars.next();
            seen += 1;
        }
        (seen > 0).then(|| char::from_u32(value)).flatten()
    };
    while let Some(c) = chars.next() {
        if c != '\\' {
            text.push(c);
            continue;
        }
        let decoded = match chars.peek() {
            Some('x') => {
                chars.next();
                Some(number(&mut chars, 16, 2).filter(char::is_ascii))
            }
            Some('u') => {
                chars.next();
                Some(number(&mut chars, 16, 4))
            }
            Some('U') => {
                chars.next();
                Some(number(&mut chars, 16, 8))
            }
            Some('0'..='7') => Some(number(&mut chars, 8, 3).filter(char::is_ascii)),
            _ => None,
        };
        match decoded {
            Some(Some(c)) => {
                text.push(c);
                continue;
            }
            Some(None) => {
                dynamic = true;
                continue;
            }
            None => {}
        }
        match chars.next().and_then(one_letter_escape) {
            Some(c) => text.push(c),
            None => dynamic = true,
        }
    }
    (text, dynamic)
}

/// The character a one-letter `$'…'` escape (`\n`, `\t`, `\'` …) stands for; `None` for one
/// this reader does not decode (`\cX`).
fn one_letter_escape(letter: char) -> Option<char> {
    Some(match letter {
        'n' => '\n',
        't' => '\t',
        'r' => '\r',
        c @ ('\\' | '\'' | '"' | '?') => c,
        'a' => '\u{7}',
        'b' => '\u{8}',
        'e' | 'E' => '\u{1b}',
        'f' => '\u{c}',
        'v' => '\u{b}',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(source: &str) -> Vec<Vec<String>> {
        read(source)
            .unwrap_or_else(|e| panic!("{source}: {e}"))
            .commands
            .iter()
            .map(|c| c.words.iter().map(|w| w.text.clone()).collect())
            .collect()
    }

    #[test]
    fn quotes_are_removed_as_a_shell_removes_them() {
        assert_eq!(names(r#"echo "rm -rf x""#), [["echo", "rm -rf x"]]);
        assert_eq!(
            names(r#"'rm' -r"f" a\ b $'c\nd'"#),
            [["rm", "-rf", "a b", "c\nd"]]
        );
        assert_eq!(names(r"r\m -rf x"), [["rm", "-rf", "x"]]);
        assert_eq!(names(r#"echo "a\"b\\c\$d""#), [["echo", r#"a"b\c$d"#]]);
    }

    #[test]
    fn every_command_of_lists_pipelines_and_substitutions_is_found() {
        let found = names(
            "a; b && c || d | e & f\n(g) ; { h; } ; if i; then j; fi; for x in 1; do k; done; \
             echo \"$(l)\" `m` <(n) $((1+$(o))); fn() { p; }; x=$(q) r",
        );
        let programs: Vec<&str> = found.iter().map(|c| c[0].as_str()).collect();
        for p in [
            "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "echo", "l", "m", "n", "o", "p",
            "q", "r",
        ] {
            assert!(programs.contains(&p), "{p} not in {programs:?}");
        }
    }

    #[test]
    fn piped_and_document_fed_commands_are_marked() {
        let script =
            read("curl u |sh; cat <<EOF | bash\nrm -rf x\nEOF\npython3 <<< 'x'; ls").unwrap();
        let fed: Vec<(&str, bool)> = script
            .commands
            .iter()
            .map(|c| (c.words[0].text.as_str(), c.stdin_fed))
            .collect();
        assert_eq!(
            fed,
            [
                ("curl", false),
                ("sh", true),
                ("cat", true),
                ("bash", true),
                ("python3", true),
                ("ls", false)
            ]
        );
    }

    #[test]
    fn expansions_and_globs_are_dynamic() {
        let script = read("rm $FLAGS \"$x\" *.o plain \"quoted*\"").unwrap();
        let dynamic: Vec<bool> = script.commands[0].words.iter().map(|w| w.dynamic).collect();
        assert_eq!(dynamic, [false, true, true, true, false, false]);
    }

    #[test]
    fn redirect_targets_are_collected() {
        let script = read("echo x > .git/HEAD 2>&1; cat < 'in.txt'").unwrap();
        let targets: Vec<&str> = script
            .redirect_targets
            .iter()
            .map(|w| w.text.as_str())
            .collect();
        assert_eq!(targets, [".git/HEAD", "1", "in.txt"]);
    }

    #[test]
    fn broken_or_huge_input_is_unreadable_not_a_crash() {
        for bad in [
            "echo \"abc",
            "rm -rf x )",
            "echo $(cat << ( a ",
            "if true; then",
        ] {
            assert!(read(bad).is_err(), "{bad}");
        }
        let deep = format!("{}x{}", "$(".repeat(5000), ")".repeat(5000));
        let _ = read(&deep);
        assert!(read(&"a".repeat(MAX_SOURCE_BYTES + 1)).is_err());
    }

    #[test]
    fn line_continuations_join_where_bash_joins_them() {
        assert_eq!(
            names("counter\\\nsign passkey reset"),
            [["countersign", "passkey", "reset"]]
        );
        assert_eq!(names("cat \"a\\\nb\""), [["cat", "ab"]]);
        assert_eq!(names("echo 'a\\\nb'"), [["echo", "a\\\nb"]]);
        assert_eq!(names("echo $'a\\\nb'")[0].len(), 2);
        assert_eq!(names("echo x # y \\\nz"), [vec!["echo", "x"], vec!["z"]]);
        // An escaped backslash before the newline is not a continuation.
        assert_eq!(names("echo a\\\\\nb"), [vec!["echo", "a\\"], vec!["b"]]);
        let quoted = read("cat <<'EOF'\nx\\\ny\nEOF").unwrap();
        assert_eq!(quoted.documents[0].text, "x\\\ny\n");
        let open = read("cat <<EOF\ncounter\\\nsign $HOME\nEOF").unwrap();
        assert_eq!(open.documents[0].text, "countersign \n");
        assert!(open.documents[0].dynamic);
        assert!(read("echo a\\\r\nb").is_err());
    }

    #[test]
    fn documents_and_environment_changes_are_kept() {
        let script = read("python3 <<< 'print(1)'; X=1 y; unset Z").unwrap();
        assert_eq!(script.documents[0].text, "print(1)");
        assert!(script.changes_env);
        for quiet in ["ls -la", "cat a | sort"] {
            assert!(!read(quiet).unwrap().changes_env, "{quiet}");
        }
        for loud in [
            "export A=1",
            "unset A",
            "declare -x A",
            ". ./env",
            "source x",
            "eval x",
            "set -a",
        ] {
            assert!(read(loud).unwrap().changes_env, "{loud}");
        }
    }

    /// bash runs a program named `X=1` for each of these: a quoted or escaped name part (or
    /// `=`) makes the word a command word, not an assignment.
    #[test]
    fn a_quoted_assignment_is_a_command_word() {
        for line in [
            "'X=1' git status",
            "\\X=1 git status",
            "\"X\"=1 git status",
            "X\"=1\" git status",
            "X\\=1 git status",
        ] {
            let script = read(line).unwrap();
            assert!(script.assignments.is_empty(), "{line}");
            assert_eq!(names(line), [["X=1", "git", "status"]], "{line}");
        }
        let script = read("X=1 git status").unwrap();
        assert_eq!(script.assignments, [("X".into(), Word::literal("1"))]);
    }

    /// `X+=1` appends to X's value before it, which only the running shell knows.
    #[test]
    fn an_append_is_not_a_plain_assignment() {
        let script = read("X+=1 git status").unwrap();
        let [(name, value)] = script.assignments.as_slice() else {
            panic!("{script:?}");
        };
        assert_eq!(name, "X");
        assert!(value.dynamic, "{value:?}");
        assert_eq!(value.vars, ["X"]);
        assert_eq!(value.with_value("X", "a"), "a1");
    }

    #[test]
    fn an_unquoted_tilde_is_marked_a_quoted_one_is_not() {
        let tilde = |line: &str| -> Vec<bool> {
            let script = read(line).unwrap();
            let words = script.commands[0].words.iter().skip(1);
            let values = script.assignments.iter().map(|(_, v)| v);
            values.chain(words).map(|w| w.tilde).collect()
        };
        for line in ["ls ~", "cat ~/x", "ls ~root", "echo x=~", "echo ~\"/x\""] {
            assert_eq!(tilde(line), [true], "{line}");
        }
        assert_eq!(tilde("X=~ cmd"), [true]);
        assert_eq!(tilde("X=a:~/bin cmd"), [true]);
        for line in ["ls '~'", "ls \"~\"", "ls \\~", "ls HEAD~1", "ls a~"] {
            assert_eq!(tilde(line), [false], "{line}");
        }
    }
}
