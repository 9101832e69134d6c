//! Sending an outgoing request over a connection to the address the policy vetted.
//!
//! [`HttpPolicy`](super::http::HttpPolicy) resolves a granted host name and vets
//! every address before anything connects. wasmtime-wasi-http's
//! `default_send_request` only takes the request, so it would look the name up a
//! second time: a DNS answer that changes between the two lookups (rebinding)
//! would send the request to an address nobody vetted, such as loopback or the
//! cloud metadata service. [`send_to`] therefore never resolves anything: it
//! opens the TCP connection to a vetted [`SocketAddr`] itself (each in turn, as
//! the default does with the addresses it resolves), runs TLS over it
//! for `https` with the *granted* host name as the server name (SNI and the
//! certificate check, against the Mozilla roots of `webpki-roots`), then speaks
//! HTTP/1.1 with hyper. Timeouts and error variants follow the default sender's,
//! so a guest sees the same `wasi:http` error codes, and the TLS handshake is
//! bounded by the connect timeout too.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, LazyLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody};

/// What the caller awaits to learn how the rest of the exchange went (the
/// request body's upload and the connection's end).
pub type IoFuture = Box<dyn Future<Output = Result<(), HttpError>> + Send>;

/// wasmtime-wasi-http's default for every timeout a guest leaves unset. The
/// call's own deadline still ends the call sooner.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// How to speak TLS to one server: the name its certificate must carry and the
/// roots it must chain to.
pub struct Tls {
    name: ServerName<'static>,
    config: Arc<ClientConfig>,
}

/// Public roots only (`webpki-roots`), the `ring` provider named explicitly so
/// no process-wide default is needed.
static PUBLIC_ROOTS: LazyLock<Arc<ClientConfig>> = LazyLock::new(|| {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    client_config(roots)
});

fn client_config(roots: rustls::RootCertStore) -> Arc<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("the ring provider supports the default TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

impl Tls {
    /// TLS to `host`, a granted host name or IP address, checked against the
    /// public roots.
    pub fn public(host: &str) -> Result<Tls, HttpError> {
        Tls::with_config(host, PUBLIC_ROOTS.clone())
    }

    /// TLS to `host` with roots of the caller's (tests bring their own CA).
    fn with_config(host: &str, config: Arc<ClientConfig>) -> Result<Tls, HttpError> {
        let name = ServerName::try_from(host.to_owned())?;
        Ok(Tls { name, config })
    }
}

/// Sends `request` over a new connection to the first of `addrs` that accepts
/// one, never to wherever the request's host name may resolve now. With `tls`,
/// the connection is TLS with its server name; the request's `Host` header is
/// left as the guest set it.
pub async fn send_to(
    mut request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
    addrs: &[SocketAddr],
    tls: Option<Tls>,
) -> Result<(http::Response<WasiBody>, IoFuture), HttpError> {
    let options = options.unwrap_or_default();
    let connect_timeout = options.connect_timeout.unwrap_or(DEFAULT_TIMEOUT);
    let timeouts = ResponseTimeouts {
        first_byte: options.first_byte_timeout.unwrap_or(DEFAULT_TIMEOUT),
        between_bytes: options.between_bytes_timeout.unwrap_or(DEFAULT_TIMEOUT),
    };

    // Not talking to a proxy: the request line carries only the path and query.
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", http::uri::PathAndQuery::as_str);
    *request.uri_mut() = http::Uri::try_from(path).map_err(|_| HttpError::HttpRequestUriInvalid)?;

    let deadline = Instant::now() + connect_timeout;
    let tcp = match tokio::time::timeout_at(deadline, connect_any(addrs)).await {
        Ok(stream) => stream?,
        Err(_) => return Err(HttpError::ConnectionTimeout),
    };
    match tls {
        None => exchange(tcp, request, deadline, timeouts).await,
        Some(Tls { name, config }) => {
            let connector = tokio_rustls::TlsConnector::from(config);
            let stream = match tokio::time::timeout_at(deadline, connector.connect(name, tcp)).await
            {
                Ok(stream) => stream.map_err(tls_error)?,
                Err(_) => return Err(HttpError::ConnectionTimeout),
            };
            exchange(stream, request, deadline, timeouts).await
        }
    }
}

/// A TCP connection to the first of `addrs` that accepts, else the last error.
async fn connect_any(addrs: &[SocketAddr]) -> Result<TcpStream, HttpError> {
    let mut last = HttpError::DestinationNotFound;
    for addr in addrs {
        match TcpStream::connect(addr).await {
            Ok(stream) => return Ok(stream),
            Err(err) => last = HttpError::Connect(err),
        }
    }
    Err(last)
}

#[derive(Clone, Copy)]
struct ResponseTimeouts {
    first_byte: Duration,
    between_bytes: Duration,
}

/// A certificate the server name does not match, or that chains to no trusted
/// root, is `TlsCertificateError`; an alert from the server is
/// `TlsAlertReceived`; anything else stays the I/O error it was.
fn tls_error(err: std::io::Error) -> HttpError {
    match err
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    {
        Some(rustls::Error::InvalidCertificate(_)) => HttpError::TlsCertificateError,
        Some(rustls::Error::AlertReceived(alert)) => HttpError::TlsAlertReceived {
            alert_id: Some(u8::from(*alert)),
            alert_message: Some(format!("{alert:?}")),
        },
        _ => HttpError::Tls(err),
    }
}

fn hyper_error(err: hyper::Error) -> HttpError {
    if err.is_timeout() {
        HttpError::HttpResponseTimeout
    } else {
        HttpError::Hyper(err)
    }
}

/// HTTP/1.1 over an open stream: the handshake (bounded by what is left of
/// the connect timeout), the request, and the response head within the
/// first-byte timeout. The connection is driven while the head is awaited and
/// handed back, still running, as the returned future.
async fn exchange<S>(
    stream: S,
    request: http::Request<WasiBody>,
    connect_deadline: Instant,
    timeouts: ResponseTimeouts,
) -> Result<(http::Response<WasiBody>, IoFuture), HttpError>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let handshake = hyper::client::conn::http1::handshake(TokioIo::new(stream));
    let (mut sender, conn) = tokio::time::timeout_at(connect_deadline, handshake)
        .await
        .map_err(|_| HttpError::ConnectionTimeout)?
        .map_err(HttpError::Hyper)?;
    let mut conn = Box::pin(conn);
    let mut conn_done = false;

    let head = async {
        let send = sender.send_request(request);
        tokio::pin!(send);
        loop {
            tokio::select! {
                response = &mut send => return response.map_err(HttpError::Hyper),
                ended = &mut conn, if !conn_done => {
                    conn_done = true;
                    // A clean end may still have delivered the response.
                    ended.map_err(hyper_error)?;
                }
            }
        }
    };
    let response = tokio::time::timeout(timeouts.first_byte, head)
        .await
        .map_err(|_| HttpError::ConnectionReadTimeout)??;

    let gap = timeouts.between_bytes;
    let response = response.map(|incoming| {
        TimedBody {
            incoming,
            gap,
            timer: Box::pin(tokio::time::sleep(gap)),
        }
        .boxed_unsync()
    });
    let io: IoFuture = Box::new(async move {
        if conn_done {
            Ok(())
        } else {
            conn.await.map_err(hyper_error)
        }
    });
    Ok((response, io))
}

/// A response body that fails with `ConnectionReadTimeout` when no frame
/// arrives within `gap` of the previous one (or of the response head).
struct TimedBody {
    incoming: hyper::body::Incoming,
    gap: Duration,
    timer: Pin<Box<Sleep>>,
}

impl Body for TimedBody {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, HttpError>>> {
        let this = &mut *self;
        match Pin::new(&mut this.incoming).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                this.timer.as_mut().reset(Instant::now() + this.gap);
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(err))) => Poll::Ready(Some(Err(hyper_error(err)))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => match this.timer.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(HttpError::ConnectionReadTimeout))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.incoming.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use http_body_util::{Empty, Full};
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;
    use tokio::sync::oneshot;

    /// A CA of the test's own, and a server certificate it issued for `name`.
    struct TestPki {
        root: CertificateDer<'static>,
        leaf: CertificateDer<'static>,
        leaf_key: PrivateKeyDer<'static>,
    }

    fn pki_for(name: &str) -> TestPki {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let leaf_key = KeyPair::generate().unwrap();
        let leaf = CertificateParams::new(vec![name.to_string()])
            .unwrap()
            .signed_by(&leaf_key, &ca_cert, &ca_key)
            .unwrap();
        TestPki {
            root: ca_cert.der().clone(),
            leaf: leaf.der().clone(),
            leaf_key: PrivatePkcs8KeyDer::from(leaf_key.serialize_der()).into(),
        }
    }

    fn trusting(root: &CertificateDer<'static>) -> Arc<ClientConfig> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(root.clone()).unwrap();
        client_config(roots)
    }

    /// One TLS connection on 127.0.0.1: reports the server name the client
    /// sent and answers `hello` to one request. The task ends with it.
    async fn serve_once(pki: &TestPki) -> (SocketAddr, oneshot::Receiver<Option<String>>) {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![pki.leaf.clone()], pki.leaf_key.clone_key())
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (sni_tx, sni_rx) = oneshot::channel();
        tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let Ok(mut tls) = acceptor.accept(tcp).await else {
                return;
            };
            let _ = sni_tx.send(tls.get_ref().1.server_name().map(str::to_string));
            if read_head(&mut tls).await.is_none() {
                return;
            }
            let body = "hello over tls";
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = tls.write_all(answer.as_bytes()).await;
            let _ = tls.shutdown().await;
        });
        (addr, sni_rx)
    }

    /// What a server reads of a request up to the blank line after its
    /// head (perhaps a little past it); `None` if the client closed first.
    async fn read_head(stream: &mut (impl AsyncRead + Unpin)) -> Option<Vec<u8>> {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
        Some(got)
    }

    fn get(url: &str) -> http::Request<WasiBody> {
        let uri: http::Uri = url.parse().unwrap();
        let host = uri.authority().unwrap().as_str().to_string();
        http::Request::get(uri)
            .header(http::header::HOST, host)
            .body(Empty::new().map_err(|never| match never {}).boxed_unsync())
            .unwrap()
    }

    // `rebind.invalid` resolves nowhere (`.invalid` is reserved), so the request
    // completes only if the name is used for TLS and never looked up again.
    #[tokio::test]
    async fn threat_17_https_connects_to_the_vetted_address_not_a_second_lookup() {
        let pki = pki_for("rebind.invalid");
        let (addr, sni) = serve_once(&pki).await;
        let tls = Tls::with_config("rebind.invalid", trusting(&pki.root)).unwrap();
        let url = format!("https://rebind.invalid:{}/hello", addr.port());
        let (response, io) = send_to(get(&url), None, &[addr], Some(tls)).await.unwrap();
        assert_eq!(response.status(), 200);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(body, Bytes::from_static(b"hello over tls"));
        Box::into_pin(io).await.unwrap();
        assert_eq!(
            sni.await.unwrap().as_deref(),
            Some("rebind.invalid"),
            "the granted name is the server name sent"
        );
    }

    // The certificate is checked against the granted name: a server whose
    // certificate names another host is refused with a typed error.
    #[tokio::test]
    async fn threat_17_https_connects_to_the_vetted_address_and_checks_the_granted_name() {
        let pki = pki_for("other.example");
        let (addr, _sni) = serve_once(&pki).await;
        let tls = Tls::with_config("rebind.invalid", trusting(&pki.root)).unwrap();
        let url = format!("https://rebind.invalid:{}/hello", addr.port());
        let err = send_to(get(&url), None, &[addr], Some(tls))
            .await
            .err()
            .expect("a certificate for another name must be refused");
        assert!(matches!(err, HttpError::TlsCertificateError), "{err}");
        // Roots that do not include the server's CA: refused the same way.
        let stranger = pki_for("rebind.invalid");
        let (addr, _sni) = serve_once(&stranger).await;
        let tls = Tls::with_config("rebind.invalid", trusting(&pki.root)).unwrap();
        let err = send_to(get(&url), None, &[addr], Some(tls))
            .await
            .err()
            .unwrap();
        assert!(matches!(err, HttpError::TlsCertificateError), "{err}");
    }

    // Plain HTTP goes to the vetted addresses too, in order (the first one here
    // refuses), with the Host header intact, and a server that never answers is
    // cut off at the first-byte timeout.
    #[tokio::test]
    async fn threat_17_http_connects_to_the_vetted_address_with_its_timeouts() {
        let closed = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap()
            .local_addr()
            .unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (head_tx, head_rx) = oneshot::channel();
        let server = tokio::spawn(async move {
            let (mut tcp, _) = listener.accept().await.unwrap();
            let Some(got) = read_head(&mut tcp).await else {
                return;
            };
            let _ = head_tx.send(String::from_utf8_lossy(&got).to_string());
            // Never answer; wait for the client to give up.
            let mut buf = [0u8; 4096];
            while let Ok(n) = tcp.read(&mut buf).await {
                if n == 0 {
                    break;
                }
            }
        });
        let url = format!("http://rebind.invalid:{}/slow?x=1", addr.port());
        let options = RequestOptions {
            first_byte_timeout: Some(Duration::from_millis(200)),
            ..RequestOptions::default()
        };
        let mut request = get(&url);
        *request.body_mut() = Full::new(Bytes::new())
            .map_err(|never| match never {})
            .boxed_unsync();
        let err = send_to(request, Some(options), &[closed, addr], None)
            .await
            .err()
            .expect("a silent server must time out");
        assert!(matches!(err, HttpError::ConnectionReadTimeout), "{err}");
        let head = head_rx.await.unwrap().to_ascii_lowercase();
        assert!(head.starts_with("get /slow?x=1 http/1.1\r\n"), "{head}");
        assert!(
            head.contains(&format!("host: rebind.invalid:{}\r\n", addr.port())),
            "{head}"
        );
        server.await.unwrap();
    }
}
