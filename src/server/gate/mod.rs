//! Approval gates: the policy that decides run / ask / refuse, the safety floor, standing
//! rules, the shape of an approval request, and the registry where waiting turns park.

pub mod edit_diff;
pub mod evaluate;
pub mod floor;
pub mod policy;
pub mod request;
pub mod resolve;
pub mod route;
pub mod rules;
pub mod sentence;
