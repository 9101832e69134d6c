//! Who is asking, and whether they may: the `Host` check, operator
//! authentication (a bearer token, or a login cookie holding a random
//! session id mapped here to the principal), the same-origin check of POSTs,
//! and the headers every answer carries.
//!
//! Without declared principals there is no token to check: the listener is
//! loopback only, and the one served is the user who started the server,
//! told by the owner of the peer's socket (as the control socket checks its
//! peer's uid), acting as the operator `cli:<uid>`. Anyone else on the
//! machine, or a peer whose user cannot be told, is refused (403): an
//! anonymous client is never the operator (threat 54).
//!
//! Failed credentials are counted per address, and an address past
//! [`MAX_FAILURES`] in a minute gets 429 for its wrong credentials; a right
//! credential is always let through. Behind a reverse proxy every client is
//! the proxy's address, so one guesser must not lock the others out: it
//! only gets its own wrong guesses answered with 429.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use glovebox::Principal;

use crate::App;
use crate::html;

/// The cookie that holds a logged-in browser's session id.
pub const COOKIE: &str = "glovebox_admin";
/// How long a login lasts.
const LOGIN_LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// Logins kept at most (the oldest go first).
const MAX_LOGINS: usize = 1024;

/// Failed credential checks one address may make in a [`FAILURE_WINDOW`];
/// past them its wrong credentials get 429 until the window ends (a right
/// one still passes).
const MAX_FAILURES: u32 = 10;
const FAILURE_WINDOW: Duration = Duration::from_secs(60);
/// Addresses whose failures are remembered at most (the oldest go first).
const MAX_FAILING_ADDRESSES: usize = 4096;

/// The address a request came from (set by the listener for every
/// connection).
#[derive(Clone, Copy, Debug)]
pub struct Peer(pub IpAddr);

/// Failed logins and bearer tokens per address, in fixed windows: past
/// [`MAX_FAILURES`] a minute a guesser's wrong tries are answered 429 and
/// no longer logged one by one. Tokens are 256-bit random, so this is a
/// bound on noise more than on luck, and it never refuses a right
/// credential: behind a proxy every client shares one address.
#[derive(Default)]
pub struct Failures {
    map: Mutex<HashMap<IpAddr, (u32, Instant)>>,
}

impl Failures {
    /// How long `peer` must wait before its credentials are checked again.
    pub(crate) fn locked(&self, peer: IpAddr) -> Option<Duration> {
        let map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        let (count, since) = map.get(&peer)?;
        let left = FAILURE_WINDOW.checked_sub(since.elapsed())?;
        (*count >= MAX_FAILURES).then_some(left)
    }

    /// Counts a wrong credential from `peer`: `Some(wait)` when it was past
    /// [`MAX_FAILURES`] already (answer 429), `None` for a plain refusal.
    pub(crate) fn wrong(&self, peer: IpAddr) -> Option<Duration> {
        let locked = self.locked(peer);
        self.failed(peer);
        locked
    }

    fn failed(&self, peer: IpAddr) {
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        if map.len() >= MAX_FAILING_ADDRESSES && !map.contains_key(&peer) {
            map.retain(|_, (_, since)| since.elapsed() < FAILURE_WINDOW);
            if map.len() >= MAX_FAILING_ADDRESSES
                && let Some(oldest) = map.iter().min_by_key(|(_, (_, at))| *at).map(|(k, _)| *k)
            {
                map.remove(&oldest);
            }
        }
        let entry = map.entry(peer).or_insert((0, Instant::now()));
        if entry.1.elapsed() >= FAILURE_WINDOW {
            *entry = (0, Instant::now());
        }
        entry.0 += 1;
        if entry.0 == MAX_FAILURES {
            tracing::warn!(%peer, "admin listener: {MAX_FAILURES} failed logins or tokens from one address in a minute; its wrong credentials get 429 until the minute ends (right ones still pass)");
        }
    }
}

pub(crate) fn too_many(wait: Duration) -> Response {
    let seconds = wait.as_secs().max(1);
    (
        StatusCode::TOO_MANY_REQUESTS,
        [(header::RETRY_AFTER, seconds.to_string())],
        format!("too many failed logins or tokens from this address: that one was wrong too; try again in {seconds} s\n"),
    )
        .into_response()
}

/// The operator a request acts as (set by [`guard`]).
#[derive(Clone)]
pub struct Operator(pub Principal);

/// Logged-in browsers: a random session id → the operator's name and when
/// the login happened. The token itself is never kept or sent back.
#[derive(Default)]
pub struct Logins {
    map: Mutex<HashMap<String, (String, Instant)>>,
}

impl Logins {
    fn create(&self, name: &str) -> String {
        let mut bytes = [0u8; 32];
        // The OS's CSPRNG; without one no login can be made safely.
        if getrandom::fill(&mut bytes).is_err() {
            return String::new();
        }
        let id = hex::encode(bytes);
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        map.retain(|_, (_, at)| at.elapsed() < LOGIN_LIFETIME);
        if map.len() >= MAX_LOGINS
            && let Some(oldest) = map
                .iter()
                .min_by_key(|(_, (_, at))| *at)
                .map(|(k, _)| k.clone())
        {
            map.remove(&oldest);
        }
        map.insert(id.clone(), (name.to_string(), Instant::now()));
        id
    }

    fn name(&self, id: &str) -> Option<String> {
        let map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        map.get(id)
            .filter(|(_, at)| at.elapsed() < LOGIN_LIFETIME)
            .map(|(name, _)| name.clone())
    }

    fn remove(&self, id: &str) {
        self.map
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }
}

enum Who {
    Operator(Principal),
    /// A valid token or login of a principal that is not an operator.
    Agent,
    Nobody,
    /// No principals are declared and the peer is not the server's own
    /// user (or cannot be told to be): why.
    Stranger(String),
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

fn cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.to_string())
}

async fn who(app: &App, headers: &HeaderMap, peer: Option<glovebox_listener::Peer>) -> Who {
    let gateway = &app.gateway;
    if !gateway.principals().declared() {
        // Loopback only (see `AdminServer::bind`), and only the user who
        // started the server: the operator at this machine, as at the
        // control socket.
        let Some(peer) = peer else {
            return Who::Stranger("refused: the connection's peer is unknown".into());
        };
        let own = glovebox_listener::own_uid();
        return match peer.uid().await {
            Ok(uid) if uid == own => Who::Operator(Principal::operator(format!("cli:{uid}"))),
            Ok(uid) => {
                tracing::warn!(peer = %peer.addr, uid, "admin listener: refused a connection of another user (no principals are declared)");
                Who::Stranger(format!(
                    "refused: this server declares no principals, so its dashboard is only for the user who started it (uid {own}), and this connection is uid {uid}'s; declare an operator principal (`glovebox principal add NAME --kind operator`) and log in with its token"
                ))
            }
            Err(why) => {
                tracing::warn!(peer = %peer.addr, %why, "admin listener: refused a connection whose user cannot be told");
                Who::Stranger(format!(
                    "refused: this server declares no principals, so its dashboard is only for the user who started it (uid {own}), and this connection's user cannot be told ({why}); declare an operator principal (`glovebox principal add NAME --kind operator`) and log in with its token"
                ))
            }
        };
    }
    let principal = if let Some(token) = bearer(headers) {
        gateway.principals().authenticate(token)
    } else if let Some(id) = cookie(headers) {
        // The principal as the config declares it now (a reload that drops
        // it ends its logins).
        app.logins
            .name(&id)
            .and_then(|name| gateway.principals().named(&name))
    } else {
        None
    };
    match principal {
        Some(p) if p.is_operator() => Who::Operator(p),
        Some(_) => Who::Agent,
        None => Who::Nobody,
    }
}

/// A POST comes from a page of this listener's origin: its `Origin` is one
/// of ours, or (without an `Origin`) the browser says `Sec-Fetch-Site:
/// same-origin`, or it carries a bearer token (which no browser adds by itself).
fn same_origin(app: &App, headers: &HeaderMap) -> bool {
    let same_site = headers
        .get("sec-fetch-site")
        .map(|site| site.as_bytes() == b"same-origin");
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or_default();
        // A browser that hides the origin (`null`) still says where the
        // request comes from.
        if origin == "null" {
            return same_site == Some(true);
        }
        return app.origins.iter().any(|o| o == origin);
    }
    match same_site {
        Some(same) => same,
        None => bearer(headers).is_some(),
    }
}

fn forbidden(text: &str) -> Response {
    (
        StatusCode::FORBIDDEN,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{text}\n"),
    )
        .into_response()
}

/// Every request: `Host`, then the same-origin check of POSTs, then who is
/// asking (the login page and the static assets are anyone's).
pub async fn guard(State(app): State<Arc<App>>, mut req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    if !app.hosts.iter().any(|h| h == host) {
        return secured(forbidden(
            "this Host is not served (`serve --allow-host` adds one)",
        ));
    }
    // A webhook comes from another system, not a page: its own signature
    // authenticates it (`hooks.rs`), not an operator's token or origin.
    if req.method() == Method::POST && req.uri().path().starts_with(crate::HOOKS_PATH) {
        return secured(next.run(req).await);
    }
    if req.method() == Method::POST && !same_origin(&app, req.headers()) {
        tracing::info!(path = %req.uri().path(), "admin listener: a POST from another origin refused (403)");
        return secured(forbidden(
            "refused: this form was not sent from a page of this dashboard",
        ));
    }
    let path = req.uri().path().to_string();
    if path == "/ui/login" || path.starts_with("/ui/static/") {
        return secured(next.run(req).await);
    }
    let peer = req.extensions().get::<glovebox_listener::Peer>().cloned();
    let who = who(&app, req.headers(), peer).await;
    // A wrong token counts against its address; past the bound it is
    // answered 429 (a right one never is: it is checked first).
    if let (Who::Nobody, Some(Peer(peer))) = (&who, req.extensions().get::<Peer>())
        && bearer(req.headers()).is_some()
        && let Some(wait) = app.failures.wrong(*peer)
    {
        return secured(too_many(wait));
    }
    match who {
        Who::Operator(p) => {
            // What the request writes to a log is this operator's doing.
            let by = p.name.clone();
            req.extensions_mut().insert(Operator(p));
            secured(glovebox::tasks::acting(by, next.run(req)).await)
        }
        Who::Agent => secured(forbidden(
            "the dashboard, the API and the metrics are an operator's: an agent principal's token does not open them",
        )),
        Who::Stranger(why) => secured(forbidden(&why)),
        Who::Nobody => {
            if req.method() == Method::GET && path != "/ui/events" && path.starts_with("/ui") {
                secured(
                    (StatusCode::SEE_OTHER, [(header::LOCATION, "/ui/login")], "").into_response(),
                )
            } else {
                secured(
                    (
                        StatusCode::UNAUTHORIZED,
                        [(header::WWW_AUTHENTICATE, "Bearer")],
                        "",
                    )
                        .into_response(),
                )
            }
        }
    }
}

/// The headers every answer carries: no framing, no sniffing, no caching,
/// and a content security policy that runs only this listener's own script.
pub(crate) fn secured(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

#[derive(serde::Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    token: String,
}

fn login_form(message: Option<&str>) -> String {
    let mut body = String::from(
        "<section class=\"login\"><h1>Glovebox operator login</h1>\
         <p>Paste an operator principal's token (<code>glovebox principal add NAME --kind operator</code> prints one).</p>",
    );
    if let Some(m) = message {
        body += &format!("<p class=\"error\" id=\"login-error\">{}</p>", html::esc(m));
    }
    body += "<form method=\"post\" action=\"/ui/login\" id=\"login\">\
             <label>Token <input type=\"password\" name=\"token\" id=\"token\" autocomplete=\"off\" required autofocus></label> \
             <button type=\"submit\" id=\"login-submit\">Log in</button></form></section>";
    html::bare("Log in", &body)
}

/// `GET /ui/login`.
pub async fn login_page(State(app): State<Arc<App>>) -> Response {
    if !app.gateway.principals().declared() {
        return axum::response::Redirect::to("/ui").into_response();
    }
    axum::response::Html(login_form(None)).into_response()
}

/// `POST /ui/login`: an operator's token sets the login cookie.
pub async fn login(
    State(app): State<Arc<App>>,
    peer: Option<Extension<Peer>>,
    Form(form): Form<LoginForm>,
) -> Response {
    if !app.gateway.principals().declared() {
        return axum::response::Redirect::to("/ui").into_response();
    }
    match app.gateway.principals().authenticate(form.token.trim()) {
        Some(p) if p.is_operator() => {
            let id = app.logins.create(&p.name);
            if id.is_empty() {
                return (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "no randomness for a login: use a bearer token\n",
                )
                    .into_response();
            }
            tracing::info!(principal = %p.name, "admin listener: operator logged in");
            let cookie = format!("{COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/");
            (
                StatusCode::SEE_OTHER,
                [
                    (header::SET_COOKIE, cookie),
                    (header::LOCATION, "/ui".to_string()),
                ],
            )
                .into_response()
        }
        Some(_) => (
            StatusCode::FORBIDDEN,
            axum::response::Html(login_form(Some(
                "that is an agent principal's token: the dashboard is an operator's",
            ))),
        )
            .into_response(),
        None => {
            if let Some(Extension(Peer(peer))) = peer
                && let Some(wait) = app.failures.wrong(peer)
            {
                return too_many(wait);
            }
            (
                StatusCode::UNAUTHORIZED,
                axum::response::Html(login_form(Some("that token is not an operator's"))),
            )
                .into_response()
        }
    }
}

/// `POST /ui/logout`: forgets the login.
pub async fn logout(
    State(app): State<Arc<App>>,
    Extension(_): Extension<Operator>,
    headers: HeaderMap,
) -> Response {
    if let Some(id) = cookie(&headers) {
        app.logins.remove(&id);
    }
    let cookie = format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
    (
        StatusCode::SEE_OTHER,
        [
            (header::SET_COOKIE, cookie),
            (header::LOCATION, "/ui/login".to_string()),
        ],
    )
        .into_response()
}
