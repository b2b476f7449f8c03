//! The shape of a command line for the history reviewer: one plain command, or a pipeline or
//! list (`|`, `|&`, `&&`, `||`, `;`) of them, with only redirects that write nothing
//! ([`HARMLESS_REDIRECTS`]). Anything else — a subshell, a group, a loop, a background `&`, a
//! `!`, a here-document, a redirect to a file — has no shape, and so no subject.
//!
//! A harmless redirect is left out of the shape, except where it changes what a pipe carries
//! ([`fold`]): `a 2>&1 | b` is `a |& b` (bash's own shorthand for it), and any other redirect
//! of a part's standard output before a pipe leaves the line with no shape.
//!
//! Its own reading of the tree (the safety floor's `shell_syntax` flattens it, losing the
//! operators between commands); `shell_syntax::read` still vets the whole line first, and each
//! part is read again on its own by the single-command rules.

use std::cell::RefCell;

use tree_sitter::{Node, Parser};

/// Redirects that write no file and feed nothing in, spaces removed: the rest of a line that
/// has one of these reads the same as without it.
pub const HARMLESS_REDIRECTS: &[&str] = &[
    "2>&1",
    ">/dev/null",
    "1>/dev/null",
    "2>/dev/null",
    "&>/dev/null",
    ">>/dev/null",
    "2>>/dev/null",
];

/// One piece of a command line, in order: a plain command's text, or the operator after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    Command(&'a str),
    Operator(&'static str),
}

/// One step of the walk: a piece, or a harmless redirect of the command just before it.
enum Step<'a> {
    Piece(Piece<'a>),
    Redirect(&'static str),
}

thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// The pieces of `source`, or `None` when it is not a plain command, pipeline or list.
/// `source` must already have been read by `shell_syntax::read` (no syntax error) and hold no
/// line continuation (the text here is taken as written).
pub fn pieces(source: &str) -> Option<Vec<Piece<'_>>> {
    if source.contains("\\\n") || source.contains('\r') {
        return None;
    }
    let tree = PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .ok()?;
            *slot = Some(parser);
        }
        slot.as_mut()?.parse(source, None)
    })?;
    let root = tree.root_node();
    if root.has_error() || root.kind() != "program" {
        return None;
    }
    let mut steps = Vec::new();
    program(root, source, &mut steps)?;
    let out = fold(steps)?;
    matches!(out.first(), Some(Piece::Command(_))).then_some(out)
}

/// The pieces, each part's redirects read against what follows it. Before a pipe, `2>&1`
/// makes it `|&` (standard error piped too), a redirect of standard error to `/dev/null`
/// changes nothing that is piped, and anything else (`>/dev/null`, two redirects) changes what
/// the next part reads: no shape. Elsewhere a harmless redirect is left out.
fn fold(steps: Vec<Step<'_>>) -> Option<Vec<Piece<'_>>> {
    let mut out = Vec::with_capacity(steps.len());
    let mut redirects: Vec<&str> = Vec::new();
    for step in steps {
        match step {
            Step::Redirect(redirect) => redirects.push(redirect),
            Step::Piece(Piece::Operator(pipe @ ("|" | "|&"))) => {
                let pipe = match redirects.as_slice() {
                    [] | ["2>/dev/null" | "2>>/dev/null"] => pipe,
                    ["2>&1"] => "|&",
                    _ => return None,
                };
                redirects.clear();
                out.push(Piece::Operator(pipe));
            }
            Step::Piece(piece) => {
                redirects.clear();
                out.push(piece);
            }
        }
    }
    Some(out)
}

/// The statements of the line, a `;` between each two (a newline reads as one).
fn program<'a>(node: Node, source: &'a str, out: &mut Vec<Step<'a>>) -> Option<()> {
    let mut cursor = node.walk();
    let mut open = false;
    for child in node.children(&mut cursor) {
        match child.kind() {
            ";" => {
                if !open {
                    return None;
                }
                open = false;
                out.push(Step::Piece(Piece::Operator(";")));
            }
            _ => {
                if open {
                    out.push(Step::Piece(Piece::Operator(";")));
                }
                statement(child, source, out)?;
                open = true;
            }
        }
    }
    // A trailing `;` ends the line: nothing follows it.
    if matches!(out.last(), Some(Step::Piece(Piece::Operator(";")))) {
        out.pop();
    }
    Some(())
}

/// A list, a pipeline or a plain command; `None` for anything else.
fn statement<'a>(node: Node, source: &'a str, out: &mut Vec<Step<'a>>) -> Option<()> {
    let mut cursor = node.walk();
    let children: Vec<Node> = node.children(&mut cursor).collect();
    match node.kind() {
        "list" | "pipeline" => {
            for child in children {
                let operator = match child.kind() {
                    "&&" => "&&",
                    "||" => "||",
                    "|" => "|",
                    // Standard error is piped too: not what `|` gives the next part.
                    "|&" => "|&",
                    _ => {
                        statement(child, source, out)?;
                        continue;
                    }
                };
                out.push(Step::Piece(Piece::Operator(operator)));
            }
            Some(())
        }
        "redirected_statement" => {
            let body = node.child_by_field_name("body")?;
            (body.kind() == "command").then_some(())?;
            out.push(Step::Piece(Piece::Command(source.get(body.byte_range())?)));
            for child in children {
                if child.id() == body.id() {
                    continue;
                }
                let text: String = source
                    .get(child.byte_range())?
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .collect();
                let harmless = HARMLESS_REDIRECTS.iter().find(|h| **h == text.as_str());
                match harmless {
                    Some(redirect) if child.kind() == "file_redirect" => {
                        out.push(Step::Redirect(redirect));
                    }
                    _ => return None,
                }
            }
            Some(())
        }
        "command" => {
            out.push(Step::Piece(Piece::Command(source.get(node.byte_range())?)));
            Some(())
        }
        _ => None,
    }
}
