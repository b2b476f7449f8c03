//! The shape of a command line for the history reviewer: one plain command, or a pipeline or
//! list (`|`, `&&`, `||`, `;`) of them, with only redirects that write nothing
//! ([`HARMLESS_REDIRECTS`]). Anything else — a subshell, a group, a loop, a background `&`, a
//! `!`, a here-document, a redirect to a file — has no shape, and so no subject.
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
    let mut out = Vec::new();
    program(root, source, &mut out)?;
    matches!(out.first(), Some(Piece::Command(_))).then_some(out)
}

/// The statements of the line, a `;` between each two (a newline reads as one).
fn program<'a>(node: Node, source: &'a str, out: &mut Vec<Piece<'a>>) -> Option<()> {
    let mut cursor = node.walk();
    let mut open = false;
    for child in node.children(&mut cursor) {
        match child.kind() {
            ";" => {
                if !open {
                    return None;
                }
                open = false;
                out.push(Piece::Operator(";"));
            }
            _ => {
                if open {
                    out.push(Piece::Operator(";"));
                }
                statement(child, source, out)?;
                open = true;
            }
        }
    }
    // A trailing `;` ends the line: nothing follows it.
    if matches!(out.last(), Some(Piece::Operator(";"))) {
        out.pop();
    }
    Some(())
}

/// A list, a pipeline or a plain command; `None` for anything else.
fn statement<'a>(node: Node, source: &'a str, out: &mut Vec<Piece<'a>>) -> Option<()> {
    let mut cursor = node.walk();
    let children: Vec<Node> = node.children(&mut cursor).collect();
    match node.kind() {
        "list" | "pipeline" => {
            for child in children {
                match child.kind() {
                    "&&" => out.push(Piece::Operator("&&")),
                    "||" => out.push(Piece::Operator("||")),
                    "|" => out.push(Piece::Operator("|")),
                    // Standard error is piped too: not what `|` gives the next part.
                    "|&" => out.push(Piece::Operator("|&")),
                    _ => statement(child, source, out)?,
                }
            }
            Some(())
        }
        "redirected_statement" => {
            let body = node.child_by_field_name("body")?;
            for child in children {
                if child.id() == body.id() {
                    continue;
                }
                let text: String = source
                    .get(child.byte_range())?
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .collect();
                if child.kind() != "file_redirect" || !HARMLESS_REDIRECTS.contains(&text.as_str()) {
                    return None;
                }
            }
            (body.kind() == "command").then_some(())?;
            out.push(Piece::Command(source.get(body.byte_range())?));
            Some(())
        }
        "command" => {
            out.push(Piece::Command(source.get(node.byte_range())?));
            Some(())
        }
        _ => None,
    }
}
