//! Other nodes' samples, read from their `gpumon serve` (`/api/v1/sample`): the fleet's source,
//! and the HTTP client the Prometheus reader ([`super::prometheus`]) reads through too.
//!
//! Every node is asked at once (at most [`CONCURRENCY`] at a time), each within its own
//! deadline, so a slow or dead node is marked with why and never delays the others, the same
//! rule as a stalled GPU. A response is bounded ([`MAX_BODY`]) and checked: a schema from a
//! newer gpumon, malformed JSON or an HTTP error is that node's error, never the fleet's.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Bytes;
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde::Serialize;

use crate::model::fleet::{NodeReading, NodeSummary, SUMMARY_VERSION};
use crate::model::Sample;

/// Requests in flight at once.
pub const CONCURRENCY: usize = 64;
/// The largest response read: a node with 8 GPUs and hundreds of processes answers in tens of
/// KiB.
pub const MAX_BODY: usize = 16 << 20;
/// The largest `--remote-file`, `--remote-config` or CA file read.
pub const MAX_CONFIG: u64 = 1 << 20;
/// The largest `password_file` read.
const MAX_PASSWORD: u64 = 64 << 10;
/// How long a node may take when no `--timeout` is given.
pub const DEADLINE: Duration = Duration::from_secs(2);
/// The `once --json` schema version this gpumon reads (`view::once::SCHEMA_VERSION`, which a
/// test here checks against this).
pub const SCHEMA: u64 = 1;

/// One node to read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Endpoint {
    /// What it is called: the name given in a `--remote-file`, else `host:port`.
    pub name: String,
    pub host: String,
    pub port: u16,
    /// `Authorization: Basic …` from `user:password@` in the endpoint (or the client config).
    #[serde(skip)]
    pub auth: Option<String>,
    /// `https://`: TLS, verified against the client config's CA.
    pub tls: bool,
}

impl Endpoint {
    /// `host:port`, `user:password@host:port` or the same after `http://`; an IPv6 host in
    /// brackets.
    pub fn parse(text: &str) -> Result<Endpoint, String> {
        let t = text.trim();
        // What an error quotes: never the credentials (a --remote-file keeps them out of argv
        // and logs), and other people's text escaped.
        let shown = redact(t);
        let shown = shown.as_str();
        let (tls, rest) = match t.strip_prefix("https://") {
            Some(r) => (true, r),
            None => (false, t.strip_prefix("http://").unwrap_or(t)),
        };
        let rest = rest.trim_end_matches('/');
        if rest.contains('/') {
            return Err(format!(
                "{shown}: give host:port (gpumon reads /api/v1/sample there)"
            ));
        }
        let (auth, hostport) = match rest.rsplit_once('@') {
            Some((user, hp)) => (
                Some(format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(user)
                )),
                hp,
            ),
            None => (None, rest),
        };
        let (host, port) = hostport
            .rsplit_once(':')
            .ok_or_else(|| format!("{shown}: no port (host:port)"))?;
        let port: u16 = port.parse().map_err(|_| {
            format!(
                "{shown}: '{}' is not a port",
                crate::text::escape(&crate::files::cut_message(port, 16))
            )
        })?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() || port == 0 {
            return Err(format!("{shown}: not host:port"));
        }
        Ok(Endpoint {
            name: hostport.to_owned(),
            host: host.to_owned(),
            port,
            auth,
            tls,
        })
    }

    /// The lines of a `--remote-file`: `[NAME] ENDPOINT` each; `#` starts a comment.
    pub fn parse_file(text: &str) -> Result<Vec<Endpoint>, String> {
        let mut out = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let mut words = line.split_whitespace();
            let (name, ep) = match (words.next(), words.next(), words.next()) {
                (Some(ep), None, _) => (None, ep),
                (Some(name), Some(ep), None) => (Some(name), ep),
                _ => return Err(format!("line {}: give [NAME] HOST:PORT", i + 1)),
            };
            let mut e = Endpoint::parse(ep).map_err(|e| format!("line {}: {e}", i + 1))?;
            if let Some(n) = name {
                e.name = n.to_owned();
            }
            out.push(e);
        }
        Ok(out)
    }

    /// Reads a `--remote-file` (a regular file of at most [`MAX_CONFIG`]).
    pub fn read_file(path: &Path) -> Result<Vec<Endpoint>, String> {
        let text = crate::files::read_text(path, MAX_CONFIG, "a list of nodes")
            .map_err(|e| e.to_string())?;
        Endpoint::parse_file(&text).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// `text` (an endpoint or URL as given) as a message may quote it: `user:password@` becomes
/// `…@`, and what is left goes through the one escaping rule.
pub fn redact(text: &str) -> String {
    let start = text.find("://").map_or(0, |i| i + 3);
    let end = text[start..].find('/').map_or(text.len(), |i| start + i);
    let shown = match text[start..end].rfind('@') {
        Some(at) => format!("{}…{}", &text[..start], &text[start + at..]),
        None => text.to_owned(),
    };
    crate::text::escape(&crate::files::cut_message(&shown, 256)).into_owned()
}

/// How the nodes are reached (`--remote-config FILE`): the way `serve`'s web config file and a
/// Prometheus scrape configuration say it.
///
/// ```yaml
/// tls_config:
///   ca_file: ca.pem          # the CA that signed the nodes' certificates (https:// nodes)
///   server_name: gpu.lab     # optional: the name to verify instead of each node's host
/// basic_auth:
///   username: prom
///   password_file: pw.txt    # or password: …
/// ```
#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientConfig {
    #[serde(default)]
    pub tls_config: Option<TlsConfig>,
    #[serde(default)]
    pub basic_auth: Option<BasicAuth>,
}

#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    pub ca_file: std::path::PathBuf,
    #[serde(default)]
    pub server_name: Option<String>,
}

#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BasicAuth {
    pub username: String,
    #[serde(default)]
    pub password: Option<String>,
    #[serde(default)]
    pub password_file: Option<std::path::PathBuf>,
}

/// What the client config becomes: the TLS client and the default credentials.
#[derive(Clone, Default)]
pub struct Client {
    tls: Option<(tokio_rustls::TlsConnector, Option<String>)>,
    auth: Option<String>,
}

impl Client {
    /// Reads a `--remote-config` file (paths in it are relative to it).
    pub fn load(path: &Path) -> Result<Client, String> {
        let what = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
        // Each file it names is read the same way: a regular file, within its cap, so that
        // /dev/zero or a FIFO named there cannot take the memory or hang.
        let text = crate::files::read_text(path, MAX_CONFIG, "a client configuration")
            .map_err(|e| e.to_string())?;
        let cfg: ClientConfig = serde_yaml_ng::from_str(&text).map_err(|e| what(&e))?;
        let base = path.parent().unwrap_or(Path::new("."));
        let mut client = Client::default();
        if let Some(t) = &cfg.tls_config {
            use rustls_pki_types::pem::PemObject;
            let ca = base.join(&t.ca_file);
            let pem = crate::files::read_bounded(&ca, MAX_CONFIG, "a CA certificate file")
                .map_err(|e| what(&format!("ca_file {e}")))?;
            let mut roots = rustls::RootCertStore::empty();
            for cert in rustls_pki_types::CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|e| what(&format!("ca_file: {e}")))?;
                roots
                    .add(cert)
                    .map_err(|e| what(&format!("ca_file: {e}")))?;
            }
            if roots.is_empty() {
                return Err(what(&"ca_file holds no certificate"));
            }
            let config = rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .map_err(|e| what(&e))?
            .with_root_certificates(roots)
            .with_no_client_auth();
            client.tls = Some((
                tokio_rustls::TlsConnector::from(Arc::new(config)),
                t.server_name.clone(),
            ));
        }
        if let Some(b) = &cfg.basic_auth {
            let password = match (&b.password, &b.password_file) {
                (Some(p), None) => p.clone(),
                (None, Some(f)) => {
                    let f = base.join(f);
                    crate::files::read_text(&f, MAX_PASSWORD, "a password file")
                        .map_err(|e| what(&format!("password_file {e}")))?
                        .trim_end_matches(['\n', '\r'])
                        .to_owned()
                }
                _ => return Err(what(&"basic_auth: give password or password_file")),
            };
            client.auth = Some(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD
                    .encode(format!("{}:{password}", b.username))
            ));
        }
        Ok(client)
    }
}

/// Reads every endpoint's sample, each within `deadline`, at most [`CONCURRENCY`] at once;
/// the nodes in the order given.
pub async fn fetch_all(
    endpoints: &[Endpoint],
    client: &Client,
    deadline: Duration,
) -> Vec<NodeReading> {
    each(endpoints, client, deadline, None, |ep, client| async move {
        fetch(&ep, &client).await
    })
    .await
    .into_iter()
    .zip(endpoints)
    .map(|((result, took), ep)| {
        let (sample, error) = match result {
            Ok(s) => (Some(s), None),
            Err(e) => (None, Some(e)),
        };
        NodeReading {
            name: ep.name.clone(),
            address: format!("{}:{}", ep.host, ep.port),
            sample,
            error,
            took,
        }
    })
    .collect()
}

/// Reads every endpoint's summary (what a fleet row shows), each within `deadline`: a few
/// hundred bytes a node where a whole sample is tens of KiB. A node whose gpumon has no
/// `/api/v1/summary` (older than this one) is read whole and summarised here. With `early`,
/// each answer (or failure) goes there as it comes, with its node's place, and the list
/// returned is empty.
pub async fn fetch_summaries(
    endpoints: &[Endpoint],
    client: &Client,
    deadline: Duration,
    early: Option<Early<NodeSummary>>,
) -> Vec<(Result<NodeSummary, String>, Duration)> {
    each(
        endpoints,
        client,
        deadline,
        early,
        |ep, client| async move {
            let (status, body) = request(&ep, &client, "/api/v1/summary").await?;
            match status {
                StatusCode::NOT_FOUND => fetch(&ep, &client).await.map(|s| NodeSummary::of(&s)),
                status => parse_summary(&answer(status, body)?),
            }
        },
    )
    .await
}

/// One node's whole sample, within `deadline`.
pub async fn fetch_sample(
    ep: &Endpoint,
    client: &Client,
    deadline: Duration,
) -> Result<Sample, String> {
    match tokio::time::timeout(deadline, fetch(ep, client)).await {
        Ok(r) => r,
        Err(_) => Err(no_answer(deadline)),
    }
}

fn no_answer(deadline: Duration) -> String {
    format!("no answer within {}", humantime::format_duration(deadline))
}

/// Where answers go as they come: the node's place, the answer, how long it took.
pub type Early<T> = tokio::sync::mpsc::UnboundedSender<(usize, Result<T, String>, Duration)>;

/// `read` on every endpoint, all within `deadline` from the call, at most [`CONCURRENCY`]
/// at once: the
/// results in the order given, each with how long it took (or each sent to `early` as it
/// comes, and none returned).
async fn each<T, F, Fut>(
    endpoints: &[Endpoint],
    client: &Client,
    deadline: Duration,
    early: Option<Early<T>>,
    read: F,
) -> Vec<(Result<T, String>, Duration)>
where
    T: Send + 'static,
    F: Fn(Endpoint, Client) -> Fut,
    Fut: std::future::Future<Output = Result<T, String>> + Send + 'static,
{
    let gate = Arc::new(tokio::sync::Semaphore::new(CONCURRENCY));
    let mut tasks = tokio::task::JoinSet::new();
    // One deadline for all, counted from now: a node waiting for a free slot behind silent
    // ones waits within it (counted from its own start, 1,000 silent nodes took 16 deadlines).
    let end = tokio::time::Instant::now() + deadline;
    for (i, ep) in endpoints.iter().enumerate() {
        let work = read(ep.clone(), client.clone());
        let gate = Arc::clone(&gate);
        tasks.spawn(async move {
            let start = Instant::now();
            let result = match tokio::time::timeout_at(end, async move {
                let _permit = gate.acquire_owned().await;
                work.await
            })
            .await
            {
                Ok(r) => r,
                Err(_) => Err(no_answer(deadline)),
            };
            (i, result, start.elapsed())
        });
    }
    let mut out: Vec<Option<(Result<T, String>, Duration)>> = std::iter::repeat_with(|| None)
        .take(endpoints.len())
        .collect();
    while let Some(joined) = tasks.join_next().await {
        let Ok((i, result, took)) = joined else {
            continue;
        };
        match &early {
            Some(tx) => {
                let _ = tx.send((i, result, took));
            }
            None => out[i] = Some((result, took)),
        }
    }
    if early.is_some() {
        return Vec::new();
    }
    out.into_iter()
        .map(|r| r.unwrap_or_else(|| (Err("the request failed".into()), Duration::ZERO)))
        .collect()
}

/// The nodes and the client that `--remote LIST`, `--remote-file FILE` and `--remote-config
/// FILE` name. `Err` is a usage message.
pub fn endpoints(
    list: &[String],
    file: Option<&Path>,
    config: Option<&Path>,
) -> Result<(Vec<Endpoint>, Client), String> {
    let client = client(config)?;
    let mut endpoints = Vec::new();
    for text in list {
        endpoints.push(Endpoint::parse(text).map_err(|e| format!("--remote: {e}"))?);
    }
    if let Some(path) = file {
        endpoints.extend(Endpoint::read_file(path).map_err(|e| format!("--remote-file: {e}"))?);
    }
    if endpoints.is_empty() {
        return Err("--remote-file names no node".into());
    }
    Ok((endpoints, client))
}

/// What `--remote LIST`, `--remote-file FILE` and `--remote-config FILE` name, read: every
/// node within `deadline` (on a runtime of its own). `Err` is a usage message.
pub fn read_nodes(
    list: &[String],
    file: Option<&Path>,
    config: Option<&Path>,
    deadline: Duration,
) -> Result<Vec<NodeReading>, String> {
    let (endpoints, client) = endpoints(list, file, config)?;
    block_on(fetch_all(&endpoints, &client, deadline))
}

/// The client `--remote-config FILE` describes (the default one without it). `Err` is a
/// usage message.
pub fn client(config: Option<&Path>) -> Result<Client, String> {
    match config {
        Some(path) => Client::load(path).map_err(|e| format!("--remote-config: {e}")),
        None => Ok(Client::default()),
    }
}

/// Runs `work` to its end on a runtime of its own (for commands that read once).
pub fn block_on<T>(work: impl std::future::Future<Output = T>) -> Result<T, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| format!("cannot start: {e}"))?;
    let out = rt.block_on(work);
    rt.shutdown_background();
    Ok(out)
}

/// One node's `/api/v1/sample`.
async fn fetch(ep: &Endpoint, client: &Client) -> Result<Sample, String> {
    let (status, body) = request(ep, client, "/api/v1/sample").await?;
    parse(&answer(status, body)?)
}

/// A GET of `path` on one node, over TLS for an `https://` node: the status and the body.
pub async fn request(
    ep: &Endpoint,
    client: &Client,
    path: &str,
) -> Result<(StatusCode, Bytes), String> {
    let stream = tokio::net::TcpStream::connect((ep.host.as_str(), ep.port))
        .await
        .map_err(|e| format!("cannot connect: {e}"))?;
    let _ = stream.set_nodelay(true);
    if !ep.tls {
        return get(TokioIo::new(stream), ep, client, path).await;
    }
    let Some((connector, server_name)) = &client.tls else {
        return Err("https: give the CA in --remote-config (tls_config: ca_file)".into());
    };
    let name = server_name.clone().unwrap_or_else(|| ep.host.clone());
    let name = rustls_pki_types::ServerName::try_from(name)
        .map_err(|e| format!("TLS: not a server name: {e}"))?;
    let tls = connector
        .connect(name, stream)
        .await
        .map_err(|e| format!("TLS: {e}"))?;
    get(TokioIo::new(tls), ep, client, path).await
}

async fn get<T>(
    io: TokioIo<T>,
    ep: &Endpoint,
    client: &Client,
    path: &str,
) -> Result<(StatusCode, Bytes), String>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut send, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| format!("HTTP: {e}"))?;
    let conn = tokio::spawn(conn);
    let mut req = Request::get(path)
        .header(hyper::header::HOST, format!("{}:{}", ep.host, ep.port))
        .header(hyper::header::ACCEPT, "application/json");
    if let Some(a) = ep.auth.as_ref().or(client.auth.as_ref()) {
        req = req.header(hyper::header::AUTHORIZATION, a);
    }
    let req = req
        .body(Empty::<Bytes>::new())
        .map_err(|e| format!("request: {e}"))?;
    let resp = send
        .send_request(req)
        .await
        .map_err(|e| format!("HTTP: {e}"))?;
    let status = resp.status();
    let body = Limited::new(resp.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|e| {
            if e.is::<http_body_util::LengthLimitError>() {
                format!("the answer is larger than {} MiB", MAX_BODY >> 20)
            } else {
                format!("reading the answer: {e}")
            }
        })?
        .to_bytes();
    conn.abort();
    Ok((status, body))
}

/// The body of a 200, or what another status means.
pub fn answer(status: StatusCode, body: Bytes) -> Result<Bytes, String> {
    match status {
        StatusCode::OK => Ok(body),
        StatusCode::UNAUTHORIZED => {
            Err("401 unauthorized: give user:password@ before host:port".into())
        }
        StatusCode::SERVICE_UNAVAILABLE => Err("no sample yet (503)".into()),
        s => Err(format!("HTTP {s}")),
    }
}

/// A `/api/v1/summary` body, version [`SUMMARY_VERSION`].
pub fn parse_summary(body: &[u8]) -> Result<NodeSummary, String> {
    match version_up_front(body) {
        Some(SUMMARY_VERSION) => {}
        Some(n) if n > SUMMARY_VERSION => {
            return Err(format!(
                "summary version {n} from a newer gpumon (this one reads {SUMMARY_VERSION}): \
                 upgrade gpumon here"
            ))
        }
        _ => return Err("not a gpumon summary".into()),
    }
    let s: NodeSummary =
        serde_json::from_slice(body).map_err(|e| format!("not a gpumon summary: {e}"))?;
    // Names and figures from another host: through the one boundary.
    Ok(s.admit())
}

/// A `/api/v1/sample` body: `once --json`'s schema, version [`SCHEMA`].
pub fn parse(body: &[u8]) -> Result<Sample, String> {
    #[derive(serde::Deserialize)]
    struct Version {
        schema_version: Option<u64>,
    }
    // `serve` and `once --json` write the version first: read it there, without a second
    // pass over the whole answer; anything else is parsed in full to find it.
    let version = version_up_front(body).map(Some).map_or_else(
        || {
            serde_json::from_slice::<Version>(body)
                .map(|v| v.schema_version)
                .map_err(|e| format!("not a sample: {e}"))
        },
        Ok,
    )?;
    match version {
        Some(SCHEMA) => {}
        Some(n) if n > SCHEMA => {
            return Err(format!(
            "schema version {n} from a newer gpumon (this one reads {SCHEMA}): upgrade gpumon here"
        ))
        }
        Some(n) => return Err(format!("schema version {n} is not one gpumon reads")),
        None => return Err("not a sample: no schema_version".into()),
    }
    // Another host's strings and numbers: through the one boundary before any view.
    serde_json::from_slice::<Sample>(body)
        .map(Sample::admit)
        .map_err(|e| format!("not a sample: {e}"))
}

/// `{"schema_version": N` at the start of `body` (spaces and newlines allowed), as gpumon
/// writes it.
fn version_up_front(body: &[u8]) -> Option<u64> {
    let head = &body[..body.len().min(64)];
    // The cut may fall inside a character: the text before it is enough.
    let head = match std::str::from_utf8(head) {
        Ok(h) => h,
        Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).ok()?,
    };
    let rest = head.trim_start().strip_prefix('{')?.trim_start();
    let rest = rest.strip_prefix("\"schema_version\"")?.trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    let digits: &str = &rest[..rest.find(|c: char| !c.is_ascii_digit())?];
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_as_people_write_them() {
        let e = Endpoint::parse("http://prom:s3cret@node7:9400/").expect("parse");
        assert_eq!(
            (e.host.as_str(), e.port, e.name.as_str()),
            ("node7", 9400, "node7:9400")
        );
        assert_eq!(e.auth.as_deref(), Some("Basic cHJvbTpzM2NyZXQ="));
        assert!(Endpoint::parse("https://a:1").expect("https").tls);
        let e = Endpoint::parse("[::1]:9400").expect("ipv6");
        assert_eq!(e.host, "::1");
        for bad in ["node7", "node7:x", "node7:0", ":9400", "node7:9400/metrics"] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
        let list = Endpoint::parse_file("# the lab\nalpha a.lab:9400\n\nb.lab:9400  # no name\n")
            .expect("file");
        assert_eq!(
            list.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(),
            ["alpha", "b.lab:9400"]
        );
        assert!(Endpoint::parse_file("a b c\n")
            .expect_err("three words")
            .contains("line 1"));
    }

    #[test]
    fn a_body_is_a_sample_of_this_schema_or_its_error() {
        let sample = Sample {
            timestamp: std::time::SystemTime::UNIX_EPOCH,
            hostname: Some("n1".into()),
            source: "nvml",
            driver_version: None,
            cuda_version: None,
            devices: vec![],
            error: None,
            host: None,
        };
        let mut json = serde_json::to_value(&sample).expect("json");
        json["schema_version"] = SCHEMA.into();
        let back = parse(&serde_json::to_vec(&json).expect("bytes")).expect("read back");
        assert_eq!(back.hostname.as_deref(), Some("n1"));
        assert!(parse(b"{").expect_err("broken").starts_with("not a sample"));
        assert!(parse(br#"{"schema_version": 2}"#)
            .expect_err("newer")
            .contains("newer gpumon"));
        assert!(parse(br#"{"devices": []}"#).is_err());
        assert_eq!(version_up_front(b"{\n  \"schema_version\": 12,"), Some(12));
        assert_eq!(
            version_up_front(br#"{"devices": [], "schema_version": 1}"#),
            None
        );
        // Not first: found by the full parse.
        assert!(parse(br#"{"devices": [], "schema_version": 3}"#)
            .expect_err("newer")
            .contains("newer gpumon"));
    }

    /// The reader reads the schema `once --json` and `serve` write.
    #[test]
    fn the_fleet_reads_the_schema_once_writes() {
        assert_eq!(SCHEMA, u64::from(crate::view::once::SCHEMA_VERSION));
    }

    /// S10: an endpoint's credentials never appear in a message, parse errors included.
    #[test]
    fn credentials_are_never_quoted() {
        for (bad, secret) in [
            ("bob:HUNTER2@127.0.0.1", "HUNTER2"),
            ("http://alice:S3CRET@127.0.0.1", "S3CRET"),
            ("https://alice:S3CRET@127.0.0.1:x", "S3CRET"),
            ("alice:S3CRET@h:1/metrics", "S3CRET"),
            ("alice:S3CRET@:1", "S3CRET"),
        ] {
            let e = Endpoint::parse(bad).expect_err(bad);
            assert!(!e.contains(secret) && !e.contains("alice"), "{e}");
        }
        let e = Endpoint::parse_file("n1 bob:HUNTER2@127.0.0.1\n").expect_err("no port");
        assert!(!e.contains("HUNTER2") && e.contains("line 1"), "{e}");
        assert_eq!(redact("http://u:p@h:1/x"), "http://…@h:1/x");
        assert_eq!(redact("h:1"), "h:1");
    }

    /// U5: every file the fleet reads is a regular file within its cap: /dev/zero and a FIFO
    /// are refused at once (they grew memory without bound, or hung).
    #[test]
    fn config_files_are_capped_and_regular() {
        let dir = tempfile::tempdir().expect("dir");
        let e = Endpoint::read_file(Path::new("/dev/zero")).expect_err("device");
        assert!(e.contains("is a device"), "{e}");
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().expect("utf-8")).expect("path");
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(Endpoint::read_file(&fifo)
            .expect_err("fifo")
            .contains("FIFO"));
        assert!(Client::load(Path::new("/dev/zero")).is_err());
        for (name, yaml) in [
            ("ca.yml", "tls_config:\n  ca_file: /dev/zero\n"),
            (
                "pw.yml",
                "basic_auth:\n  username: u\n  password_file: /dev/zero\n",
            ),
            (
                "fifo.yml",
                "basic_auth:\n  username: u\n  password_file: fifo\n",
            ),
        ] {
            let p = dir.path().join(name);
            std::fs::write(&p, yaml).expect("write");
            let Err(e) = Client::load(&p) else {
                panic!("{name} loaded");
            };
            assert!(e.contains("device") || e.contains("FIFO"), "{name}: {e}");
        }
        let big = dir.path().join("big.txt");
        std::fs::write(&big, vec![b'#'; MAX_CONFIG as usize + 1]).expect("write");
        assert!(Endpoint::read_file(&big).is_err());
    }

    /// H2: many silent nodes cost one deadline in total, not one per [`CONCURRENCY`] of them.
    /// (256 silent nodes took four deadlines before; the bound is two, twice the fix's cost.)
    #[test]
    fn silent_nodes_cost_one_deadline_in_total() {
        // Bound and never accepted: connections wait in the backlog (or for it), unanswered.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = silent.local_addr().expect("addr").port();
        let endpoints: Vec<Endpoint> = (0..CONCURRENCY * 4)
            .map(|_| Endpoint::parse(&format!("127.0.0.1:{port}")).expect("endpoint"))
            .collect();
        let deadline = Duration::from_millis(500);
        let started = Instant::now();
        let nodes = block_on(fetch_all(&endpoints, &Client::default(), deadline)).expect("run");
        let took = started.elapsed();
        assert!(nodes
            .iter()
            .all(|n| n.error.as_deref() == Some("no answer within 500ms")));
        assert!(
            took < deadline * 2,
            "{took:?} for {} silent nodes",
            nodes.len()
        );
    }
}
