//! The user interface: components rendered on the server and hydrated in the browser.

pub mod audit_page;
pub mod browser;
pub mod card;
pub mod changes;
pub mod chat;
pub mod composer;
pub mod config_page;
pub mod feed;
pub mod gates;
pub mod inbox;
pub mod json;
pub mod lazy_pages;
pub mod notify_page;
pub mod outside;
pub mod rules_page;
pub mod security_page;
pub mod session_page;
pub mod session_title;
pub mod sidebar;
pub mod stream;
pub mod tokens_page;
pub mod tool_card;
pub mod transcript;
pub mod viewer;
pub mod when;
