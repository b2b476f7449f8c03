//! People who sign in with OpenID Connect (issue 41): their roles, and the people routes'
//! bodies (`/api/v1/people`).

use serde::{Deserialize, Serialize};
use strum::{Display, EnumString, IntoStaticStr, VariantArray, VariantNames};

use super::Timestamp;
use super::spelled::spelled;

spelled!(Role);

/// What a person may do. `admin`: everything (configuration, people, tokens); `approver`:
/// read and answer cards; `viewer`: read only.
#[derive(IntoStaticStr, EnumString, VariantArray, VariantNames, Display)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    Admin,
    Approver,
    Viewer,
}

/// A person as the people routes list them.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Person {
    pub id: String,
    /// Lowercased; unique among people.
    pub email: String,
    /// Their name as their provider gave it at their last sign-in; `None` before the first.
    pub name: Option<String>,
    pub roles: Vec<Role>,
    pub groups: Vec<String>,
    /// The provider they signed in with, and who they are there (`sub`), from their first
    /// sign-in on; `None` while only invited.
    pub issuer: Option<String>,
    pub subject: Option<String>,
    pub created_at: Timestamp,
}

/// `POST /api/v1/people`: invites a person by email.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NewPerson {
    pub email: String,
    pub roles: Vec<Role>,
    #[serde(default)]
    pub groups: Vec<String>,
}

/// `PUT /api/v1/people/{id}`: a person's roles and groups, replaced whole.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PersonChange {
    pub roles: Vec<Role>,
    #[serde(default)]
    pub groups: Vec<String>,
}

/// How an address is compared: lowercased in ASCII only. Unicode's lowercasing would make
/// another address equal to an invited one (`\u{212A}ate@…`, KELVIN SIGN, lowercases to
/// `kate@…`), and the provider vouches for the address it saw, not for its lowercasing.
pub fn email_key(email: &str) -> String {
    email.to_ascii_lowercase()
}
