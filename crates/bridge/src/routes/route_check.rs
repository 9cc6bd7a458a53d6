//! A check that runs before a route's handler and may answer instead of it (the `Host`, `Origin`
//! and credential checks of [`crate::routes::auth`]).
//!
//! `axum::middleware::from_fn` does this too, but for every request it clones and boxes the inner
//! service and boxes its future: with two checks on `/api`, 5 % of the bridge's CPU per call. A
//! check that needs no `await` can be a plain function in front of the inner service; the one case
//! that must wait — a signed agent token whose key is not cached yet, while the bridge fetches its
//! JWKS URL again ([`Checked::AfterKeyRefetch`]) — is the only one boxed.

use std::task::{Context, Poll};

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use futures_util::future::{ready, BoxFuture, Either, Ready};
use tower_layer::Layer;
use tower_service::Service;

use crate::bridge::Bridge;

/// What a check decided.
pub(crate) enum Checked {
    /// The request goes on (the check may have added to its extensions).
    Pass,
    /// The response it gets instead.
    Refuse(Response),
    /// A signed token names a key the bridge does not have: fetch the key set again (at most once
    /// a minute, crate::tokens), then check once more.
    AfterKeyRefetch,
}

/// A check may add to the request (the agent's scope, in its extensions).
pub(crate) type Check = fn(&Bridge, &mut Request) -> Checked;

/// Runs `check` in front of every service it wraps.
#[derive(Clone)]
pub(crate) struct Guard {
    bridge: Bridge,
    check: Check,
}

impl Guard {
    pub(crate) fn new(bridge: &Bridge, check: Check) -> Self {
        Self {
            bridge: bridge.clone(),
            check,
        }
    }
}

impl<S> Layer<S> for Guard {
    type Service = Guarded<S>;

    fn layer(&self, inner: S) -> Guarded<S> {
        Guarded {
            inner,
            guard: self.clone(),
        }
    }
}

#[derive(Clone)]
pub(crate) struct Guarded<S> {
    inner: S,
    guard: Guard,
}

type Later<E> = BoxFuture<'static, Result<Response, E>>;

impl<S> Service<Request> for Guarded<S>
where
    S: Service<Request, Response = Response> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Either<Ready<Result<Response, S::Error>>, Either<S::Future, Later<S::Error>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let check = self.guard.check;
        match check(&self.guard.bridge, &mut request) {
            Checked::Pass => Either::Right(Either::Left(self.inner.call(request))),
            Checked::Refuse(refusal) => Either::Left(ready(Ok(refusal))),
            Checked::AfterKeyRefetch => {
                // The service that was made ready goes with the request (tower's rule); a clone
                // stays here for the next one.
                let clone = self.inner.clone();
                let mut inner = std::mem::replace(&mut self.inner, clone);
                let bridge = self.guard.bridge.clone();
                Either::Right(Either::Right(Box::pin(async move {
                    bridge.refetch_token_keys().await;
                    match check(&bridge, &mut request) {
                        Checked::Pass => inner.call(request).await,
                        Checked::Refuse(refusal) => Ok(refusal),
                        // Another request's refetch is under way: this token's key is unknown.
                        Checked::AfterKeyRefetch => Ok((
                            axum::http::StatusCode::UNAUTHORIZED,
                            "token refused: its key (kid) is not one the bridge has",
                        )
                            .into_response()),
                    }
                })))
            }
        }
    }
}
