//! `gpumon serve`: the per-node Prometheus exporter.
//!
//! The sampler runs on its interval; the latest sample is encoded once, on its first scrape
//! ([`metrics`]), and every scrape after that is served from the same bytes. A scrape never
//! touches NVML, so a stalled or lost GPU is reported, never waited for. Requests are served
//! by hyper (HTTP/1.1) on the same single-threaded tokio runtime, with TLS and basic auth from
//! an exporter-toolkit web configuration ([`webconfig`]).
//!
//! Hostile clients are bounded: headers over 16 KiB are refused; a client has 10 s to send
//! them and to finish a TLS handshake (2 s once half the slots are taken); at most
//! [`MAX_CONNECTIONS`] are open, and a newcomer beyond them takes the place of the one that
//! has done least (one that has not sent a request within a second, or an idle kept-alive
//! one), or waits in the listen backlog while all are being answered ([`conns`]);
//! bcrypt runs off the runtime, on as many cores as there are, one check per client address
//! at a time, and costs the same for unknown users.

pub mod conns;
pub mod metrics;
pub mod peaks;
pub mod shared;
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

/// Connections open at once. A newcomer beyond them takes the place of the connection that
/// has done least ([`conns`]), or waits in the listen backlog while all are being served.
pub const MAX_CONNECTIONS: usize = 256;
/// How long a new connection has to complete its first request before it may be closed
/// for a newcomer ([`conns`]).
const FIRST_REQUEST_GRACE: Duration = Duration::from_secs(1);
/// Connections the kernel queues for us while every slot is being served.
const BACKLOG: i32 = 1024;
/// How long a client has to send a request's headers, or to finish a TLS handshake.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);
/// The same, for connections opened while more than half the slots are taken: a slow client
/// under load is one too many.
const CLIENT_TIMEOUT_LOADED: Duration = Duration::from_secs(2);
/// Password checks queued at most; beyond, a check is refused at once (503) instead of
/// waiting behind a flood.
const MAX_AUTH_QUEUE: usize = 64;
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
    usage: metrics::Usage,
    options: Options,
    /// When it was published.
    at: Instant,
    /// OpenMetrics, ending in `# EOF`; the Prometheus text format is the same bytes without
    /// that line, and with the counters' `_total` in their HELP and TYPE lines.
    openmetrics: OnceLock<Bytes>,
    /// `once --json` of the sample.
    json: OnceLock<Bytes>,
    /// What a fleet row shows of it (`/api/v1/summary`).
    summary: OnceLock<Bytes>,
}

const EOF: &str = "# EOF\n";

impl Exposition {
    fn openmetrics(&self, last_scrape: Option<Duration>) -> &Bytes {
        self.openmetrics.get_or_init(|| {
            let mut text =
                metrics::encode_with(&self.sample, self.sampled_in, &self.options, &self.usage);
            text.push_str(&metrics::encode_scrape(last_scrape));
            text.push_str(EOF);
            Bytes::from(text)
        })
    }

    fn text(&self, last_scrape: Option<Duration>) -> Bytes {
        let om = self.openmetrics(last_scrape);
        let body = om.slice(..om.len() - EOF.len());
        match std::str::from_utf8(&body) {
            Ok(text) if text.contains(" counter\n") => Bytes::from(metrics::prometheus_text(text)),
            _ => body,
        }
    }

    fn json(&self) -> &Bytes {
        self.json.get_or_init(|| {
            let sample = metrics::redact(&self.sample, self.options.process_labels);
            Bytes::from(
                crate::text::to_json_vec(&crate::view::once::to_json(&sample)).unwrap_or_default(),
            )
        })
    }

    fn summary(&self) -> &Bytes {
        self.summary.get_or_init(|| {
            // Who the top user is only where process labels are shown at all.
            let sample = metrics::redact(&self.sample, self.options.process_labels);
            let summary = crate::model::fleet::NodeSummary::of(&sample);
            Bytes::from(serde_json::to_vec(&summary).unwrap_or_default())
        })
    }
}

struct State {
    latest: watch::Receiver<Option<Arc<Exposition>>>,
    auth: Option<BasicAuth>,
    headers: Vec<(hyper::header::HeaderName, HeaderValue)>,
    /// The previous scrape's duration, in nanoseconds (0: none yet).
    last_scrape_ns: AtomicU64,
    /// bcrypt is slow on purpose: as many checks at once as there are cores, off the runtime.
    bcrypt: Semaphore,
    /// Checks waiting or running.
    auth_queue: std::sync::atomic::AtomicUsize,
    /// Clients with a check waiting or running: one each, so that a flood from one address
    /// never queues ahead of everyone else.
    auth_pending: std::sync::Mutex<std::collections::HashSet<std::net::IpAddr>>,
    /// A sample older than this means the sampler itself is stuck (/healthz fails).
    stale_after: Duration,
    /// The highest memory since each scraper's previous scrape.
    peaks: Arc<peaks::Peaks>,
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
    // A deeper queue than std's 128: while every slot is being served, newcomers wait there.
    // SAFETY: listen(2) on our own listening socket only changes its queue length.
    unsafe {
        use std::os::fd::AsRawFd;
        libc::listen(listener.as_raw_fd(), BACKLOG);
    }
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
    let mut sampler = new_sampler(&common.collect(), source, Needs::ALL).with_focus(focus);
    if let Err(e) = crate::collect::check_gpus(&common.collect(), &mut sampler) {
        eprintln!("gpumon: {e}");
        return Ok(ExitCode::from(EXIT_USAGE));
    }
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
    let record = match &args.record {
        Some(path) => match crate::collect::recording::Writer::open(path, Default::default()) {
            Ok(w) => Some(w),
            Err(e) => {
                return Ok(crate::runtime::usage_error(format!(
                    "--record: cannot record to {}: {e}",
                    path.display()
                )))
            }
        },
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let interval = common.interval.max(MIN_INTERVAL);
    let result = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let (tx, latest) = watch::channel(None);
        let idle_after = args.idle_after.unwrap_or(common.idle_after);
        let peaks = Arc::new(peaks::Peaks::default());
        let sampling = tokio::spawn(publish(
            sampler,
            interval,
            idle_after,
            options,
            record,
            tx,
            Arc::clone(&peaks),
        ));
        let state = Arc::new(State {
            peaks,
            latest,
            auth: web.auth.clone(),
            headers: web.headers.clone(),
            last_scrape_ns: AtomicU64::new(0),
            bcrypt: Semaphore::new(
                std::thread::available_parallelism().map_or(1, |n| n.get().min(4)),
            ),
            auth_queue: std::sync::atomic::AtomicUsize::new(0),
            auth_pending: std::sync::Mutex::default(),
            stale_after: (interval * 3).max(Duration::from_secs(5)),
        });
        let serving = accept(listener, state, web.tls.clone());
        tokio::pin!(sampling);
        tokio::select! {
            r = serving => r?,
            _ = shutdown_signal() => {}
            // The sampler never ends on its own: if it does (a bug that panicked), serving
            // the last sample on as current would be a lie; exit and let the supervisor
            // (systemd, the DaemonSet) restart gpumon.
            ended = &mut sampling => {
                let why = match ended {
                    Err(e) if e.is_panic() => "it panicked",
                    _ => "it ended",
                };
                anyhow::bail!("the sampler stopped ({why}): no current figures to serve");
            }
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
    idle_after: Duration,
    options: Options,
    mut record: Option<crate::collect::recording::Writer>,
    tx: watch::Sender<Option<Arc<Exposition>>>,
    peaks: Arc<peaks::Peaks>,
) {
    sampler.set_interval(interval);
    sampler.watch_events();
    // Idle holds need a process's history; %SM's mean is not exported, so a short window.
    let mut tracker = crate::model::rollup::Usage::new(idle_after, interval);
    // Due one interval after the previous sample was due, as the other views sample.
    let mut due = tokio::time::Instant::now();
    let mut counters = metrics::LastCounters::default();
    loop {
        let started = tokio::time::Instant::now();
        let mut sample = sampler.tick_async().await;
        counters.carry(&mut sample);
        tracker.record(&sample);
        peaks.publish(&sample);
        if let Some(w) = record.as_mut() {
            if let Err(e) = w.append(&sample) {
                eprintln!("gpumon: recording stopped: {e}");
                record = None;
            }
        }
        let usage = metrics::Usage {
            idle_held: tracker.idle_held(&sample),
            user_memory: if options.process_labels.user {
                tracker
                    .rollup(&sample, crate::model::rollup::GroupBy::User)
                    .into_iter()
                    .map(|r| (r.key, r.memory_bytes))
                    .collect()
            } else {
                Vec::new()
            },
        };
        let exposition = Exposition {
            sample,
            sampled_in: started.elapsed(),
            usage,
            options,
            at: Instant::now(),
            openmetrics: OnceLock::new(),
            json: OnceLock::new(),
            summary: OnceLock::new(),
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
    let registry = conns::Registry::new(MAX_CONNECTIONS, FIRST_REQUEST_GRACE);
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    loop {
        // Accept only when a newcomer can be taken; until then it waits in the backlog.
        registry.room().await;
        let (stream, peer) = match listener.accept().await {
            Ok(c) => c,
            // Out of file descriptors and the like: pause instead of spinning.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let deadline = if registry.load() > 0.5 {
            CLIENT_TIMEOUT_LOADED
        } else {
            CLIENT_TIMEOUT
        };
        let Some(conn) = registry.admit() else {
            // Every slot turned busy since `room`: rare; this one is closed.
            continue;
        };
        let _ = stream.set_nodelay(true);
        let state = Arc::clone(&state);
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let client = Client {
                conn,
                ip: peer.ip(),
            };
            match acceptor {
                Some(acceptor) => {
                    let handshake = tokio::time::timeout(deadline, acceptor.accept(stream));
                    let tls = tokio::select! {
                        tls = handshake => tls,
                        _ = client.conn.closed() => return,
                    };
                    if let Ok(Ok(tls)) = tls {
                        serve_connection(tls, state, client, deadline).await;
                    }
                }
                None => serve_connection(stream, state, client, deadline).await,
            }
        });
    }
}

/// Who a connection belongs to.
#[derive(Clone)]
struct Client {
    conn: Arc<conns::Conn>,
    ip: std::net::IpAddr,
}

async fn serve_connection<S>(stream: S, state: Arc<State>, client: Client, deadline: Duration)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let conn = Arc::clone(&client.conn);
    let service = hyper::service::service_fn(move |req| {
        let state = Arc::clone(&state);
        let client = client.clone();
        async move {
            client.conn.busy();
            let response = handle(&state, &client, req).await;
            client.conn.answered();
            Ok::<_, Infallible>(response)
        }
    });
    let served = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(deadline)
        .max_buf_size(MAX_HEAD)
        .serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        _ = tokio::time::timeout(MAX_CONNECTION_LIFE, served) => {}
        // Shed for a newcomer (it had done least): dropping the connection closes it.
        _ = conn.closed() => {}
    }
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

/// What the credentials are worth.
enum Auth {
    Allowed,
    Denied,
    /// This client already has a check running, or too many are queued: try again shortly.
    Busy,
}

/// Whether the request's basic-auth credentials are allowed (always, without users). A known
/// and an unknown user cost the same bcrypt check ([`webconfig::BasicAuth::verify`]); each
/// client address has at most one check waiting or running, and at most
/// [`MAX_AUTH_QUEUE`] wait at all, so a flood of wrong passwords from one place never holds
/// up another client's first login.
async fn authorised(state: &State, client: &Client, req: &Request<Incoming>) -> Auth {
    let Some(auth) = &state.auth else {
        return Auth::Allowed;
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
        return Auth::Denied;
    };
    match auth.check(&user, &password) {
        Verdict::Allowed => return Auth::Allowed,
        Verdict::Denied => return Auth::Denied,
        Verdict::Unknown => {}
    }
    let first = state
        .auth_pending
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(client.ip);
    if !first {
        return Auth::Busy;
    }
    // Leaves the queue and the pending set however this future ends.
    struct Queued<'a>(&'a State, std::net::IpAddr);
    impl Drop for Queued<'_> {
        fn drop(&mut self) {
            self.0.auth_queue.fetch_sub(1, Ordering::SeqCst);
            self.0
                .auth_pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&self.1);
        }
    }
    let queued = state.auth_queue.fetch_add(1, Ordering::SeqCst);
    let _queued = Queued(state, client.ip);
    if queued >= MAX_AUTH_QUEUE {
        return Auth::Busy;
    }
    let Ok(_permit) = state.bcrypt.acquire().await else {
        return Auth::Denied;
    };
    let auth = auth.clone();
    match tokio::task::spawn_blocking(move || auth.verify(&user, &password)).await {
        Ok(true) => Auth::Allowed,
        _ => Auth::Denied,
    }
}

async fn handle(state: &State, client: &Client, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let started = Instant::now();
    let mut response = route(state, client, &req, started).await;
    for (name, value) in &state.headers {
        response.headers_mut().insert(name.clone(), value.clone());
    }
    if req.method() == Method::HEAD {
        *response.body_mut() = Full::new(Bytes::new());
    }
    response
}

async fn route(
    state: &State,
    client: &Client,
    req: &Request<Incoming>,
    started: Instant,
) -> Response<Full<Bytes>> {
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
    match authorised(state, client, req).await {
        Auth::Allowed => {}
        Auth::Busy => {
            let mut r = respond(
                StatusCode::TOO_MANY_REQUESTS,
                "text/plain; charset=utf-8",
                "a password check of yours is already running; try again\n",
            );
            r.headers_mut()
                .insert(hyper::header::RETRY_AFTER, HeaderValue::from_static("1"));
            return r;
        }
        Auth::Denied => {
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
            // The sample's encoding is shared; the peaks are this scraper's own.
            let key = peaks::scraper_key(req.uri().query(), client.ip);
            let own = peaks::encode(&state.peaks.scrape(&key, Instant::now()));
            let r = if openmetrics {
                let om = e.openmetrics(last);
                let mut body = Vec::with_capacity(om.len() + own.len());
                body.extend_from_slice(&om[..om.len() - EOF.len()]);
                body.extend_from_slice(own.as_bytes());
                body.extend_from_slice(EOF.as_bytes());
                respond(StatusCode::OK, OPENMETRICS, Bytes::from(body))
            } else {
                let text = e.text(last);
                let mut body = Vec::with_capacity(text.len() + own.len());
                body.extend_from_slice(&text);
                body.extend_from_slice(own.as_bytes());
                respond(StatusCode::OK, PROMETHEUS_TEXT, Bytes::from(body))
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
        "/api/v1/summary" => match latest {
            Some(e) => respond(StatusCode::OK, "application/json", e.summary().clone()),
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
             /api/v1/summary  what the fleet view shows of it: per GPU memory, state, util\n\
             /healthz         ok while the sampler runs\n",
        ),
        _ => respond(
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "not found: try /metrics, /api/v1/sample, /api/v1/summary or /healthz\n",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exposition(labels: ProcessLabels) -> Exposition {
        let secret = |f: &str| format!("SECRET-{f}");
        let sample = crate::model::admit::full_sample(&secret);
        Exposition {
            usage: metrics::Usage {
                idle_held: Vec::new(),
                user_memory: if labels.user {
                    vec![(secret("user"), 1)]
                } else {
                    Vec::new()
                },
            },
            sample,
            sampled_in: Duration::from_millis(3),
            options: Options {
                dcgm: true,
                process_labels: labels,
            },
            at: Instant::now(),
            openmetrics: OnceLock::new(),
            json: OnceLock::new(),
            summary: OnceLock::new(),
        }
    }

    fn private(body: &[u8]) -> Vec<String> {
        let text = String::from_utf8_lossy(body);
        [
            "user",
            "command",
            "holder user",
            "holder command",
            "pod",
            "namespace",
            "owner container",
            "pod uid",
            "container id",
            "container",
        ]
        .iter()
        .filter(|f| {
            text.contains(&format!("SECRET-{f}\"")) || text.contains(&format!("SECRET-{f}\\\""))
        })
        .map(|f| (*f).to_owned())
        .collect()
    }

    /// S2: without --process-labels no endpoint names who runs what, for every kind of row a
    /// sample carries (processes, holders, owners); each label brings back its own part.
    #[test]
    fn privacy_by_default_for_every_kind_of_row_on_every_endpoint() {
        let e = exposition(ProcessLabels::default());
        for (endpoint, body) in [
            ("/metrics", e.openmetrics(None).clone()),
            ("/api/v1/sample", e.json().clone()),
            ("/api/v1/summary", e.summary().clone()),
        ] {
            assert_eq!(private(&body), Vec::<String>::new(), "{endpoint}");
        }
        let all = ProcessLabels::parse("user,command,pod,job").expect("labels");
        let e = exposition(all);
        let json = private(e.json());
        for f in [
            "user",
            "command",
            "holder user",
            "holder command",
            "pod",
            "namespace",
        ] {
            assert!(json.iter().any(|j| j == f), "{f} with its label: {json:?}");
        }
    }
}
