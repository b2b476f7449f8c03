//! What each credential may reach, declared with each route: a route exists only through
//! [`Routes`], which makes it name its [`Need`] and puts the check for it in front of it.
//!
//! **Invariants 35, 36** ([ARCHITECTURE.md](../../../ARCHITECTURE.md#invariants)): every route names its need here; a gates credential never decides.

use std::convert::Infallible;

use axum::Router;
use axum::extract::Request;
use axum::handler::Handler;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, MethodRouter, on};
use http::Method;
use tower::Service;

pub use crate::server::principal::Need;

use super::error::ApiError;
use crate::server::principal::{Principal, Scope};
use crate::server::state::AppState;

/// Whether a credential of `scope` has what `need` asks.
pub fn permits(scope: Scope, need: Need) -> bool {
    need.permits(scope)
}

/// Why a request may not go on to its route, as the response it gets instead.
pub fn refusal(need: Need, req: &Request) -> Option<Response> {
    if need == Need::Public {
        return None;
    }
    if req.extensions().get::<super::auth::CrossSite>().is_some() {
        return Some(ApiError::Csrf.into_response());
    }
    if req
        .extensions()
        .get::<super::auth::LookupFailed>()
        .is_some()
    {
        let down = crate::server::core::Error::StorageUnavailable;
        return Some(ApiError::Core(down).into_response());
    }
    let Some(who) = req.extensions().get::<Principal>() else {
        return Some(super::auth::unauthenticated(req));
    };
    if need.permits(who.scope()) {
        return None;
    }
    let why = format!(
        "a token with the `{}` scope may not do this",
        who.scope().as_str()
    );
    Some(ApiError::Core(crate::server::core::Error::Forbidden(why)).into_response())
}

/// The layer in front of a route that needs `need`.
async fn enforce(need: Need, req: Request, next: Next) -> Response {
    match refusal(need, &req) {
        Some(refused) => refused,
        None => next.run(req).await,
    }
}

/// A method router behind the check for `need`.
fn guarded(need: Need, route: MethodRouter<AppState>) -> MethodRouter<AppState> {
    match need {
        Need::Public => route,
        need => route.route_layer(middleware::from_fn(move |req: Request, next: Next| {
            enforce(need, req, next)
        })),
    }
}

/// Every route of `router` behind the check for `need`.
fn guarded_router(need: Need, router: Router<AppState>) -> Router<AppState> {
    match need {
        Need::Public => router,
        need => router.route_layer(middleware::from_fn(move |req: Request, next: Next| {
            enforce(need, req, next)
        })),
    }
}

/// One route as declared, for the tests that send it every credential.
#[derive(Clone, Debug)]
pub struct Declared {
    pub method: Method,
    pub path: String,
    pub need: Need,
}

/// A router whose every route named what it needs.
#[derive(Default)]
pub struct Routes {
    router: Router<AppState>,
    declared: Vec<Declared>,
}

macro_rules! method_fns {
    ($($name:ident => $method:ident),* $(,)?) => {$(
        #[doc = concat!("Adds `", stringify!($method), " path`, needing `need`.")]
        pub fn $name<H, T>(self, need: Need, path: &str, handler: H) -> Self
        where
            H: Handler<T, AppState>,
            T: 'static,
        {
            self.add(need, Method::$method, MethodFilter::$method, path, handler)
        }
    )*};
}

impl Routes {
    pub fn new() -> Routes {
        Routes::default()
    }

    method_fns!(get => GET, post => POST, put => PUT, patch => PATCH, delete => DELETE);

    fn add<H, T>(
        mut self,
        need: Need,
        method: Method,
        filter: MethodFilter,
        path: &str,
        handler: H,
    ) -> Self
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        self.router = self.router.route(path, guarded(need, on(filter, handler)));
        self.declared.push(Declared {
            method,
            path: path.to_owned(),
            need,
        });
        self
    }

    /// Serves a file (or a folder's files, when `nested`) at `path`, needing `need`.
    pub fn files<S>(mut self, need: Need, path: &str, nested: bool, service: S) -> Self
    where
        S: Service<Request, Error = Infallible> + Clone + Send + Sync + 'static,
        S::Response: IntoResponse,
        S::Future: Send + 'static,
    {
        let served = match nested {
            true => Router::new().nest_service(path, service),
            false => Router::new().route_service(path, service),
        };
        self.router = self.router.merge(guarded_router(need, served));
        self.declared.push(Declared {
            method: Method::GET,
            path: match nested {
                true => format!("{path}/{{*rest}}"),
                false => path.to_owned(),
            },
            need,
        });
        self
    }

    /// Routes some other part of the server built (the Leptos pages and server functions),
    /// each behind the check for what `need_of` says its path needs, declared as `declared`.
    pub fn built(
        mut self,
        need_of: fn(&str) -> Need,
        declared: impl IntoIterator<Item = (Method, String)>,
        router: Router<AppState>,
    ) -> Self {
        self.router = self.router.merge(router.route_layer(middleware::from_fn(
            move |req: Request, next: Next| enforce(need_of(req.uri().path()), req, next),
        )));
        self.declared
            .extend(declared.into_iter().map(|(method, path)| Declared {
                need: need_of(&path),
                method,
                path,
            }));
        self
    }

    /// Both routers' routes in one.
    pub fn merge(mut self, other: Routes) -> Self {
        self.router = self.router.merge(other.router);
        self.declared.extend(other.declared);
        self
    }

    /// Changes the router as a whole (a layer, a fallback), keeping what was declared.
    pub fn map(mut self, change: impl FnOnce(Router<AppState>) -> Router<AppState>) -> Self {
        self.router = change(self.router);
        self
    }

    /// Every route under `prefix`.
    pub fn nest(prefix: &str, inner: Routes) -> Routes {
        Routes {
            router: Router::new().nest(prefix, inner.router),
            declared: inner
                .declared
                .into_iter()
                .map(|d| Declared {
                    path: format!("{prefix}{}", d.path),
                    ..d
                })
                .collect(),
        }
    }

    pub fn into_parts(self) -> (Router<AppState>, Vec<Declared>) {
        (self.router, self.declared)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_scope_has_what_its_needs_allow() {
        use Need::*;
        let table = [
            (Scope::Admin, [true, true, true, true, true]),
            (Scope::Approve, [true, true, true, true, false]),
            (Scope::Gates, [true, true, false, false, false]),
            (Scope::View, [true, true, true, false, false]),
        ];
        for (scope, expected) in table {
            for (need, allowed) in [Public, Gates, Read, Decide, Admin]
                .into_iter()
                .zip(expected)
            {
                assert_eq!(need.permits(scope), allowed, "{scope:?} {need:?}");
            }
        }
    }
}
