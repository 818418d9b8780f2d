//! `gpumon serve`: the per-node Prometheus exporter.
//!
//! The sampler runs on its interval; the latest sample is encoded once, on its first scrape
//! ([`metrics`]), and every scrape after that is served from the same bytes. A scrape never
//! touches NVML, so a stalled or lost GPU is reported, never waited for. Requests are served by hyper (HTTP/1.1) on the same single-threaded tokio
//! runtime, with TLS and basic auth from an exporter-toolkit web configuration ([`webconfig`]).
//! Hostile clients are bounded: headers over 16 KiB are refused, a client has 10 s to send
//! them (and to finish a TLS handshake), at most [`MAX_CONNECTIONS`] are open at once, and
//! bcrypt runs off the runtime, one check at a time.

pub mod metrics;
pub mod webconfig;

use std::convert::Infallible;
use std::net::TcpListener as StdListener;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{watch, Semaphore};

use crate::cli::{Common, ServeArgs};
use crate::collect::sampler::{Sampler, MIN_INTERVAL};
use crate::collect::{new_sampler, open_within_timeout, Needs};
use crate::runtime::{shutdown_signal, EXIT_USAGE};
use metrics::{Options, ProcessLabels};
use webconfig::{BasicAuth, Verdict, WebConfig};

/// Connections open at once; more are closed at once (Prometheus needs one per target).
pub const MAX_CONNECTIONS: usize = 256;
/// How long a client has to send a request's headers, or to finish a TLS handshake.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest request head (headers included) read; a larger one is answered 431.
const MAX_HEAD: usize = 16 * 1024;
/// No connection lives longer than this, keep-alive or not.
const MAX_CONNECTION_LIFE: Duration = Duration::from_secs(600);

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// One sample, encoded for each endpoint on its first request (Prometheus scrapes every
/// 15 s or so; sampling is every second), then served from these bytes without a copy.
struct Exposition {
    sample: crate::model::Sample,
    sampled_in: Duration,
    options: Options,
    /// When it was published.
    at: Instant,
    /// OpenMetrics, ending in `# EOF`; the Prometheus text format is the same bytes without
    /// that line (every metric is a gauge).
    openmetrics: OnceLock<Bytes>,
    /// `once --json` of the sample.
    json: OnceLock<Bytes>,
}

const EOF: &str = "# EOF\n";

impl Exposition {
    fn openmetrics(&self, last_scrape: Option<Duration>) -> &Bytes {
        self.openmetrics.get_or_init(|| {
            let mut text = metrics::encode(&self.sample, self.sampled_in, &self.options);
            text.push_str(&metrics::encode_scrape(last_scrape));
            text.push_str(EOF);
            Bytes::from(text)
        })
    }

    fn text(&self, last_scrape: Option<Duration>) -> Bytes {
        let om = self.openmetrics(last_scrape);
        om.slice(..om.len() - EOF.len())
    }

    fn json(&self) -> &Bytes {
        self.json.get_or_init(|| {
            let sample = metrics::redact(&self.sample, self.options.process_labels);
            Bytes::from(
                crate::text::to_json_vec(&crate::view::once::to_json(&sample)).unwrap_or_default(),
            )
        })
    }
}

struct State {
    latest: watch::Receiver<Option<Arc<Exposition>>>,
    auth: Option<BasicAuth>,
    headers: Vec<(hyper::header::HeaderName, HeaderValue)>,
    /// The previous scrape's duration, in nanoseconds (0: none yet).
    last_scrape_ns: AtomicU64,
    /// bcrypt is slow on purpose: one check at a time, off the runtime.
    bcrypt: Semaphore,
    /// A sample older than this means the sampler itself is stuck (/healthz fails).
    stale_after: Duration,
}

pub fn run(common: &Common, args: &ServeArgs) -> anyhow::Result<ExitCode> {
    let process_labels = match args.process_labels.as_deref().map(ProcessLabels::parse) {
        None => ProcessLabels::default(),
        Some(Ok(p)) => p,
        Some(Err(e)) => {
            eprintln!("gpumon: --process-labels: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    let web = match &args.web_config_file {
        Some(path) => match WebConfig::load(path) {
            Ok(w) => w,
            Err(e) => {
                eprintln!("gpumon: refusing the web configuration: {e}");
                return Ok(ExitCode::from(EXIT_USAGE));
            }
        },
        None => WebConfig::default(),
    };
    // Listen before opening NVML: a taken port is said at once.
    let listener = match StdListener::bind(args.listen) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("gpumon: cannot listen on {}: {e}", args.listen);
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    listener.set_nonblocking(true)?;
    let source = match open_within_timeout(&common.collect()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("gpumon: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    // No view shows processes here: an empty focus refreshes their host facts (the JSON's
    // user, command, CPU; the optional labels) every 30 s instead of every second.
    let (_focus_tx, focus) = watch::channel(Arc::new(Some(Vec::new())));
    // /api/v1/sample is the `once --json` schema, per-process utilisation included.
    let sampler = new_sampler(&common.collect(), source, Needs::ALL).with_focus(focus);
    let options = Options {
        dcgm: !args.no_dcgm_names,
        process_labels,
    };
    let addr = listener.local_addr()?;
    eprintln!(
        "gpumon serve: listening on {}://{addr} (/metrics, /api/v1/sample, /healthz){}",
        if web.tls.is_some() { "https" } else { "http" },
        if web.auth.is_some() {
            ", basic auth"
        } else {
            ""
        },
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let interval = common.interval.max(MIN_INTERVAL);
    let result = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let (tx, latest) = watch::channel(None);
        let sampling = tokio::spawn(publish(sampler, interval, options, tx));
        let state = Arc::new(State {
            latest,
            auth: web.auth.clone(),
            headers: web.headers.clone(),
            last_scrape_ns: AtomicU64::new(0),
            bcrypt: Semaphore::new(1),
            stale_after: (interval * 3).max(Duration::from_secs(5)),
        });
        let serving = accept(listener, state, web.tls.clone());
        tokio::select! {
            r = serving => r?,
            _ = shutdown_signal() => {}
        }
        sampling.abort();
        anyhow::Ok(ExitCode::SUCCESS)
    });
    // A tick may be waiting on a hung GPU, a connection on a slow client: wait for neither.
    runtime.shutdown_background();
    result
}

/// Samples every `interval` and publishes each sample's encodings.
async fn publish(
    mut sampler: Sampler,
    interval: Duration,
    options: Options,
    tx: watch::Sender<Option<Arc<Exposition>>>,
) {
    sampler.set_interval(interval);
    // Due one interval after the previous sample was due, as the other views sample.
    let mut due = tokio::time::Instant::now();
    loop {
        let started = tokio::time::Instant::now();
        let sample = sampler.tick_async().await;
        let exposition = Exposition {
            sample,
            sampled_in: started.elapsed(),
            options,
            at: Instant::now(),
            openmetrics: OnceLock::new(),
            json: OnceLock::new(),
        };
        if tx.send(Some(Arc::new(exposition))).is_err() {
            return;
        }
        due = crate::collect::sampler::next_due(due, interval, tokio::time::Instant::now());
        tokio::time::sleep_until(due).await;
    }
}

async fn accept(
    listener: tokio::net::TcpListener,
    state: Arc<State>,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> anyhow::Result<()> {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(c) => c,
            // Out of file descriptors and the like: pause instead of spinning.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = Arc::clone(&slots).try_acquire_owned() else {
            // Too many connections: this one is closed, the others keep being served.
            continue;
        };
        let _ = stream.set_nodelay(true);
        let state = Arc::clone(&state);
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let _permit = permit;
            match acceptor {
                Some(acceptor) => {
                    if let Ok(Ok(tls)) =
                        tokio::time::timeout(CLIENT_TIMEOUT, acceptor.accept(stream)).await
                    {
                        serve_connection(tls, state).await;
                    }
                }
                None => serve_connection(stream, state).await,
            }
        });
    }
}

async fn serve_connection<S>(stream: S, state: Arc<State>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |req| {
        let state = Arc::clone(&state);
        async move { Ok::<_, Infallible>(handle(&state, req).await) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(CLIENT_TIMEOUT)
        .max_buf_size(MAX_HEAD)
        .serve_connection(TokioIo::new(stream), service);
    let _ = tokio::time::timeout(MAX_CONNECTION_LIFE, conn).await;
}

fn respond(
    status: StatusCode,
    content_type: &str,
    body: impl Into<Bytes>,
) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    if let Ok(v) = HeaderValue::from_str(content_type) {
        r.headers_mut().insert(CONTENT_TYPE, v);
    }
    r
}

/// Whether the request's basic-auth credentials are allowed (always, without users).
async fn authorised(state: &State, req: &Request<Incoming>) -> bool {
    let Some(auth) = &state.auth else {
        return true;
    };
    let Some((user, password)) = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b64| {
            base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .ok()
        })
        .and_then(|raw| String::from_utf8(raw).ok())
        .and_then(|s| {
            let (u, p) = s.split_once(':')?;
            Some((u.to_owned(), p.to_owned()))
        })
    else {
        return false;
    };
    match auth.check(&user, &password) {
        Verdict::Allowed => true,
        Verdict::Denied => false,
        Verdict::Unknown => {
            let Ok(_one_at_a_time) = state.bcrypt.acquire().await else {
                return false;
            };
            let auth = auth.clone();
            tokio::task::spawn_blocking(move || auth.verify(&user, &password))
                .await
                .unwrap_or(false)
        }
    }
}

async fn handle(state: &State, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let started = Instant::now();
    let mut response = route(state, &req, started).await;
    for (name, value) in &state.headers {
        response.headers_mut().insert(name.clone(), value.clone());
    }
    if req.method() == Method::HEAD {
        *response.body_mut() = Full::new(Bytes::new());
    }
    response
}

async fn route(state: &State, req: &Request<Incoming>, started: Instant) -> Response<Full<Bytes>> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = respond(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain; charset=utf-8",
            "only GET and HEAD\n",
        );
        r.headers_mut()
            .insert(hyper::header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    if !authorised(state, req).await {
        let mut r = respond(
            StatusCode::UNAUTHORIZED,
            "text/plain; charset=utf-8",
            "unauthorised\n",
        );
        r.headers_mut().insert(
            WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"gpumon\""),
        );
        return r;
    }
    let latest = state.latest.borrow().clone();
    match req.uri().path() {
        "/metrics" => {
            let Some(e) = latest else {
                return respond(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "text/plain; charset=utf-8",
                    "no sample yet\n",
                );
            };
            let openmetrics = req
                .headers()
                .get(ACCEPT)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|a| a.contains("application/openmetrics-text"));
            let last = match state.last_scrape_ns.load(Ordering::Relaxed) {
                0 => None,
                ns => Some(Duration::from_nanos(ns)),
            };
            let r = if openmetrics {
                respond(StatusCode::OK, OPENMETRICS, e.openmetrics(last).clone())
            } else {
                respond(StatusCode::OK, PROMETHEUS_TEXT, e.text(last))
            };
            let took = started.elapsed().as_nanos().max(1);
            state
                .last_scrape_ns
                .store(u64::try_from(took).unwrap_or(u64::MAX), Ordering::Relaxed);
            r
        }
        "/api/v1/sample" => match latest {
            Some(e) => respond(StatusCode::OK, "application/json", e.json().clone()),
            None => respond(
                StatusCode::SERVICE_UNAVAILABLE,
                "text/plain; charset=utf-8",
                "no sample yet\n",
            ),
        },
        "/healthz" => match latest {
            Some(e) if e.at.elapsed() <= state.stale_after => {
                respond(StatusCode::OK, "text/plain; charset=utf-8", "ok\n")
            }
            Some(e) => respond(
                StatusCode::SERVICE_UNAVAILABLE,
                "text/plain; charset=utf-8",
                format!(
                    "the sampler is stuck: last sample {:.0} s ago\n",
                    e.at.elapsed().as_secs_f64()
                ),
            ),
            None => respond(
                StatusCode::SERVICE_UNAVAILABLE,
                "text/plain; charset=utf-8",
                "no sample yet\n",
            ),
        },
        "/" => respond(
            StatusCode::OK,
            "text/plain; charset=utf-8",
            "gpumon serve: GPU memory, explained, for Prometheus.\n\n\
             /metrics         Prometheus text (OpenMetrics when asked for)\n\
             /api/v1/sample   the latest sample as JSON (the `gpumon once --json` schema)\n\
             /healthz         ok while the sampler runs\n",
        ),
        _ => respond(
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "not found: try /metrics, /api/v1/sample or /healthz\n",
        ),
    }
}
