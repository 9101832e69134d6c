//! Secrets at the egress: what the host adds to a plugin's requests, and
//! what it refuses to let a plugin send.
//!
//! The host config's `[[secret]]`s never enter a guest. An `[[http]]` grant's
//! `inject` names them, and [`Egress::inject`] sets that header on the
//! requests the grant allows, after [`super::http`] has judged them. Every
//! request is first scanned ([`Egress::scan_head`], [`Egress::scan_body`]): a
//! guest that puts a secret's value in a URL, a header or a body (it learned
//! it some other way) is refused, and the value never leaves the host. The
//! same values are masked in what a call reports ([`Egress::mask`]).
//!
//! A body is scanned as it streams, holding back the last bytes of each piece
//! (one byte fewer than the longest value) until the next one shows whether a
//! value was cut across them, so no value, whole or begun, is sent.

use std::borrow::Cow;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http::{HeaderName, HeaderValue};
use http_body::{Body, Frame, SizeHint};
use memchr::memmem::Finder;
use wasmtime_wasi_http::{Error as HttpError, WasiBody};

use crate::manifest::{HttpGrant, Secrets};

/// One grant's `inject`, resolved: the header to set, or why it cannot be.
type Injected = Option<Result<(HeaderName, HeaderValue), String>>;

/// The secrets of the host, as one plugin's requests meet them.
#[derive(Clone, Default)]
pub struct Egress {
    secrets: Arc<Secrets>,
    /// Each secret's name and a searcher for its value.
    finders: Arc<[(String, Finder<'static>)]>,
    /// Per grant (by its index among the plugin's), its header.
    injected: Arc<[Injected]>,
}

impl Egress {
    /// The egress of a plugin with `grants`, under the host's `secrets`.
    pub fn new(grants: &[HttpGrant], secrets: &Secrets) -> Egress {
        let finders = secrets
            .iter()
            .map(|s| {
                let value = s.value.expose().as_bytes().to_vec();
                (s.name.clone(), Finder::new(&value).into_owned())
            })
            .collect();
        let injected = grants
            .iter()
            .map(|g| {
                let inject = g.inject.as_ref()?;
                Some(inject.resolve(secrets).and_then(|value| {
                    let name = HeaderName::from_bytes(inject.header.as_bytes())
                        .map_err(|e| format!("header `{}`: {e}", inject.header))?;
                    let mut value = HeaderValue::from_str(&value)
                        .map_err(|_| format!("header `{}`'s value is not one", inject.header))?;
                    value.set_sensitive(true);
                    Ok((name, value))
                }))
            })
            .collect();
        Egress {
            secrets: Arc::new(secrets.clone()),
            finders,
            injected,
        }
    }

    /// Whether the host has any secret (without, nothing is scanned or masked).
    pub fn is_empty(&self) -> bool {
        self.finders.is_empty()
    }

    /// `text` with every secret's value masked as `[secret:NAME]`.
    pub fn mask<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match self.is_empty() {
            true => Cow::Borrowed(text),
            false => self.secrets.mask(text),
        }
    }

    /// The secret whose value `bytes` hold, if any.
    fn found_in(&self, bytes: &[u8]) -> Option<&str> {
        self.finders
            .iter()
            .find(|(_, finder)| finder.find(bytes).is_some())
            .map(|(name, _)| name.as_str())
    }

    /// Where in a request's head a secret's value is, and whose: its URL
    /// (as written or percent-decoded) or a header.
    pub fn scan_head<B>(&self, request: &http::Request<B>) -> Option<(String, String)> {
        if self.is_empty() {
            return None;
        }
        let uri = request.uri().to_string();
        let decoded: Vec<u8> = percent_encoding::percent_decode_str(&uri).collect();
        if let Some(name) = self.found_in(uri.as_bytes()).or(self.found_in(&decoded)) {
            return Some(("URL".into(), name.to_string()));
        }
        for (header, value) in request.headers() {
            let found = self
                .found_in(value.as_bytes())
                .or(self.found_in(header.as_str().as_bytes()));
            if let Some(name) = found {
                return Some((format!("header `{header}`"), name.to_string()));
            }
        }
        None
    }

    /// Sets grant `index`'s `inject` header on `request` (replacing the
    /// guest's), if it has one; `Err` when its secret cannot be had.
    pub fn inject<B>(&self, index: usize, request: &mut http::Request<B>) -> Result<(), String> {
        match self.injected.get(index) {
            Some(Some(Ok((name, value)))) => {
                request.headers_mut().insert(name.clone(), value.clone());
                Ok(())
            }
            Some(Some(Err(why))) => Err(why.clone()),
            _ => Ok(()),
        }
    }

    /// `body`, scanned as it streams; a value found ends it with an error,
    /// after `refuse` was told whose it was.
    pub fn scan_body(
        &self,
        body: WasiBody,
        refuse: impl Fn(&str) + Send + Sync + 'static,
    ) -> WasiBody {
        if self.is_empty() {
            return body;
        }
        let longest = self.secrets.longest();
        http_body_util::BodyExt::boxed_unsync(ScannedBody {
            inner: body,
            egress: self.clone(),
            held: BytesMut::new(),
            keep: longest.saturating_sub(1),
            trailers: None,
            refuse: Arc::new(Mutex::new(Some(Box::new(refuse)))),
            ended: false,
        })
    }
}

type Refuse = Arc<Mutex<Option<Box<dyn Fn(&str) + Send + Sync>>>>;

/// A request body that never lets a secret's value through.
struct ScannedBody {
    inner: WasiBody,
    egress: Egress,
    /// Bytes read and scanned, not sent yet (at most `keep` between pieces).
    held: BytesMut,
    keep: usize,
    /// Trailers read, sent once `held` is.
    trailers: Option<Frame<Bytes>>,
    refuse: Refuse,
    ended: bool,
}

impl ScannedBody {
    /// Ends the body with a refusal naming the secret (told once).
    fn refused(&mut self, name: &str) -> Poll<Option<Result<Frame<Bytes>, HttpError>>> {
        self.ended = true;
        self.held.clear();
        if let Some(refuse) = self.refuse.lock().ok().and_then(|mut r| r.take()) {
            refuse(name);
        }
        Poll::Ready(Some(Err(HttpError::HttpRequestDenied)))
    }
}

impl Body for ScannedBody {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, HttpError>>> {
        let this = &mut *self;
        loop {
            if this.ended {
                return Poll::Ready(None);
            }
            if let Some(trailers) = this.trailers.take() {
                if !this.held.is_empty() {
                    this.trailers = Some(trailers);
                    let rest = this.held.split().freeze();
                    return Poll::Ready(Some(Ok(Frame::data(rest))));
                }
                this.ended = true;
                return Poll::Ready(Some(Ok(trailers)));
            }
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(None) => {
                    this.ended = true;
                    if this.held.is_empty() {
                        return Poll::Ready(None);
                    }
                    let rest = this.held.split().freeze();
                    return Poll::Ready(Some(Ok(Frame::data(rest))));
                }
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => {
                        this.held.extend_from_slice(&data);
                        if let Some(name) = this.egress.found_in(&this.held).map(str::to_string) {
                            return this.refused(&name);
                        }
                        if this.held.len() > this.keep {
                            let out = this.held.split_to(this.held.len() - this.keep).freeze();
                            return Poll::Ready(Some(Ok(Frame::data(out))));
                        }
                    }
                    Err(frame) => {
                        let found = frame.trailers_ref().and_then(|trailers| {
                            trailers
                                .values()
                                .find_map(|v| this.egress.found_in(v.as_bytes()))
                                .map(str::to_string)
                        });
                        if let Some(name) = found {
                            return this.refused(&name);
                        }
                        this.trailers = Some(frame);
                    }
                },
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended
    }

    fn size_hint(&self) -> SizeHint {
        // Every byte read is sent (or the body fails), so the guest's own
        // length still holds.
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::manifest::{HttpInjection, Secret, SecretSource, SecretValue};
    use http_body_util::BodyExt;

    fn egress() -> Egress {
        let secrets = Secrets::new(vec![Secret {
            name: "github".into(),
            source: SecretSource::Env("T".into()),
            value: SecretValue::new("ghp_0123456789abcdef"),
        }]);
        let mut grant: HttpGrant = "https://api.github.com".parse().unwrap();
        grant.inject =
            Some(HttpInjection::parse("Authorization", "Bearer ${secret:github}").unwrap());
        Egress::new(&[grant], &secrets)
    }

    /// A body of `pieces`, one frame each.
    struct Pieces(std::collections::VecDeque<&'static str>);

    impl Body for Pieces {
        type Data = Bytes;
        type Error = HttpError;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, HttpError>>> {
            Poll::Ready(
                self.0
                    .pop_front()
                    .map(|p| Ok(Frame::data(Bytes::from_static(p.as_bytes())))),
            )
        }
    }

    fn body(pieces: &[&'static str]) -> WasiBody {
        Pieces(pieces.iter().copied().collect()).boxed_unsync()
    }

    async fn collect(body: WasiBody) -> Result<Vec<u8>, HttpError> {
        Ok(body.collect().await?.to_bytes().to_vec())
    }

    #[tokio::test]
    async fn threat_60_a_body_with_a_secret_is_cut_before_any_of_it_leaves() {
        let e = egress();
        let told = Arc::new(Mutex::new(Vec::<String>::new()));
        let t = told.clone();
        let pieces = [
            "preamble-preamble-preamble token=ghp_01234",
            "56789abcdef&x=1",
        ];
        let mut scanned = e.scan_body(body(&pieces), move |n| {
            t.lock().unwrap().push(n.to_string())
        });
        let mut sent = Vec::new();
        let end = loop {
            match scanned.frame().await {
                Some(Ok(frame)) => sent.extend_from_slice(frame.data_ref().unwrap()),
                Some(Err(e)) => break Some(e),
                None => break None,
            }
        };
        assert!(matches!(end, Some(HttpError::HttpRequestDenied)), "{end:?}");
        // 19 bytes (the value's length less one) were held back from the
        // first piece: none of the value's own went out.
        assert_eq!(String::from_utf8(sent).unwrap(), "preamble-preamble-pream");
        assert_eq!(*told.lock().unwrap(), ["github"]);
    }

    #[tokio::test]
    async fn a_body_without_a_secret_goes_out_whole() {
        let e = egress();
        let scanned = e.scan_body(body(&["hello ", "ghp_", "world", ""]), |_| {
            panic!("refused")
        });
        assert_eq!(collect(scanned).await.unwrap(), b"hello ghp_world");
        let none = Egress::default();
        let plain = none.scan_body(body(&["ghp_0123456789abcdef"]), |_| panic!("refused"));
        assert_eq!(collect(plain).await.unwrap(), b"ghp_0123456789abcdef");
    }

    #[test]
    fn threat_60_a_head_with_a_secret_is_found_and_the_grant_injects_it() {
        let e = egress();
        let found = |uri: &str, header: Option<(&str, &str)>| {
            let mut r = http::Request::get(uri);
            if let Some((k, v)) = header {
                r = r.header(k, v);
            }
            e.scan_head(&r.body(()).unwrap())
        };
        let github = "github".to_string();
        assert_eq!(
            found("https://x.example/?t=ghp_0123456789abcdef", None),
            Some(("URL".into(), github.clone()))
        );
        assert_eq!(
            found("https://x.example/?t=ghp_%30123456789abcdef", None),
            Some(("URL".into(), github.clone()))
        );
        assert_eq!(
            found(
                "https://x.example/",
                Some(("x-token", "ghp_0123456789abcdef"))
            ),
            Some(("header `x-token`".into(), github))
        );
        assert_eq!(
            found("https://x.example/", Some(("x-token", "other"))),
            None
        );
        let mut request = http::Request::get("https://api.github.com/user")
            .header("authorization", "Bearer guest-made")
            .body(())
            .unwrap();
        e.inject(0, &mut request).unwrap();
        let set: Vec<_> = request.headers().get_all("authorization").iter().collect();
        assert_eq!(set.len(), 1);
        assert_eq!(set[0], "Bearer ghp_0123456789abcdef");
        assert!(set[0].is_sensitive());
        assert_eq!(e.mask("a ghp_0123456789abcdef b"), "a [secret:github] b");
    }
}
