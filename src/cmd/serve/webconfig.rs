//! `--web.config.file`: TLS and basic auth in the Prometheus exporter-toolkit format, as
//! node_exporter reads it, so one file can serve both exporters.
//!
//! ```yaml
//! tls_server_config:
//!   cert_file: server.crt        # relative paths are relative to this file
//!   key_file: server.key
//!   min_version: TLS12           # or TLS13
//! basic_auth_users:
//!   prometheus: $2y$10$…          # bcrypt hashes (htpasswd -nBC 10 "" | tr -d ':\n')
//! http_server_config:
//!   headers:
//!     Strict-Transport-Security: max-age=31536000
//! ```
//!
//! Anything this build does not implement (client certificates, cipher suites) is refused at
//! start with its name, never silently ignored: an operator who asked for mTLS must not get
//! plain TLS.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    tls_server_config: Option<TlsFile>,
    #[serde(default)]
    basic_auth_users: Option<BTreeMap<String, String>>,
    #[serde(default)]
    http_server_config: Option<HttpFile>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TlsFile {
    #[serde(default)]
    cert_file: Option<PathBuf>,
    #[serde(default)]
    key_file: Option<PathBuf>,
    #[serde(default)]
    client_auth_type: Option<String>,
    #[serde(default)]
    client_ca_file: Option<PathBuf>,
    #[serde(default)]
    cipher_suites: Option<Vec<String>>,
    #[serde(default)]
    curve_preferences: Option<Vec<String>>,
    #[serde(default)]
    prefer_server_cipher_suites: Option<bool>,
    #[serde(default)]
    min_version: Option<String>,
    #[serde(default)]
    max_version: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct HttpFile {
    /// gpumon serves HTTP/1.1, which every Prometheus scrapes; `http2` is accepted and has no
    /// effect.
    #[serde(default)]
    #[allow(dead_code)]
    http2: Option<bool>,
    #[serde(default)]
    headers: Option<BTreeMap<String, String>>,
}

/// A web configuration, checked and ready to serve.
#[derive(Clone, Default)]
pub struct WebConfig {
    pub tls: Option<Arc<rustls::ServerConfig>>,
    pub auth: Option<BasicAuth>,
    /// Extra response headers.
    pub headers: Vec<(hyper::header::HeaderName, hyper::header::HeaderValue)>,
}

/// Users and their bcrypt hashes, with the verdicts already computed: bcrypt costs tens of
/// milliseconds by design, and Prometheus sends the same credentials on every scrape.
#[derive(Clone)]
pub struct BasicAuth {
    users: Arc<BTreeMap<String, String>>,
    /// The costliest user's hash: an unknown user's password is checked against it, so that
    /// an unknown user takes as long as a known one (exporter-toolkit does the same).
    decoy: Arc<String>,
    /// Credentials found right: only a correct password gets here, so a flood cannot push
    /// them out.
    allowed: Arc<Mutex<HashSet<(String, String)>>>,
    /// Credentials found wrong, forgotten all at once when full.
    denied: Arc<Mutex<HashSet<(String, String)>>>,
}

/// Most wrong credentials remembered (so that guessing passwords cannot grow memory without
/// bound).
const MAX_VERDICTS: usize = 1024;

/// The costliest bcrypt hash taken: a check at cost 14 takes about a second on a server core,
/// and each step doubles it (cost 31 would take days per check).
pub const MAX_BCRYPT_COST: u32 = 14;

#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    Denied,
    /// Credentials not seen before: needs bcrypt (off the async thread).
    Unknown,
}

impl BasicAuth {
    /// The remembered verdict for these credentials. The same for a known and an unknown
    /// user: an unknown one is never denied faster.
    pub fn check(&self, user: &str, password: &str) -> Verdict {
        let key = (user.to_owned(), password.to_owned());
        let lock = |m: &Mutex<HashSet<(String, String)>>| {
            m.lock().unwrap_or_else(|e| e.into_inner()).contains(&key)
        };
        if lock(&self.allowed) {
            Verdict::Allowed
        } else if lock(&self.denied) {
            Verdict::Denied
        } else {
            Verdict::Unknown
        }
    }

    /// Runs bcrypt for credentials not seen before and remembers the verdict. Blocking. An
    /// unknown user's password is checked against the decoy hash, at the same cost.
    pub fn verify(&self, user: &str, password: &str) -> bool {
        let (hash, known) = match self.users.get(user) {
            Some(h) => (h.as_str(), true),
            None => (self.decoy.as_str(), false),
        };
        let ok = bcrypt::verify(password, hash).unwrap_or(false) && known;
        let key = (user.to_owned(), password.to_owned());
        let set = if ok { &self.allowed } else { &self.denied };
        let mut set = set.lock().unwrap_or_else(|e| e.into_inner());
        if set.len() >= MAX_VERDICTS {
            set.clear();
        }
        set.insert(key);
        ok
    }
}

/// The largest web configuration, certificate chain or key file read.
const MAX_FILE: u64 = 1 << 20;

/// Why a web configuration is refused.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct ConfigError {
    path: String,
    reason: String,
}

fn refuse(path: &Path, reason: impl Into<String>) -> ConfigError {
    ConfigError {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

impl WebConfig {
    /// Reads and checks `path`: every file it names is loaded now, so a bad configuration
    /// stops gpumon at start, not at the first scrape.
    pub fn load(path: &Path) -> Result<WebConfig, ConfigError> {
        let text = crate::files::read_text(path, MAX_FILE, "a web configuration")
            .map_err(|e| refuse(path, e.reason))?;
        let file: File = if text.trim().is_empty() {
            File::default()
        } else {
            // The parser's message, cut: it may quote the offending text.
            serde_yaml_ng::from_str(&text)
                .map_err(|e| refuse(path, crate::files::cut_message(&e.to_string(), 300)))?
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut config = WebConfig::default();
        if let Some(tls) = file.tls_server_config {
            config.tls = Some(Arc::new(tls_config(path, dir, tls)?));
        }
        if let Some(users) = file.basic_auth_users {
            for (user, hash) in &users {
                if user.contains(':') {
                    return Err(refuse(path, format!("user name '{user}' contains ':'")));
                }
                let Ok(parts) = hash.parse::<bcrypt::HashParts>() else {
                    return Err(refuse(
                        path,
                        format!("the password of '{user}' is not a bcrypt hash ($2y$…)"),
                    ));
                };
                if parts.get_cost() > MAX_BCRYPT_COST {
                    return Err(refuse(
                        path,
                        format!(
                            "the password hash of '{user}' has bcrypt cost {}: at most \
                             {MAX_BCRYPT_COST} (a check at 14 takes about a second, each step \
                             doubles it, and every first scrape waits for one)",
                            parts.get_cost()
                        ),
                    ));
                }
            }
            let decoy = users
                .values()
                .max_by_key(|h| h.parse::<bcrypt::HashParts>().map_or(0, |p| p.get_cost()))
                .cloned();
            if let Some(decoy) = decoy {
                config.auth = Some(BasicAuth {
                    users: Arc::new(users),
                    decoy: Arc::new(decoy),
                    allowed: Arc::default(),
                    denied: Arc::default(),
                });
            }
        }
        if let Some(http) = file.http_server_config {
            for (name, value) in http.headers.unwrap_or_default() {
                let n = hyper::header::HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| refuse(path, format!("'{name}' is not a header name")))?;
                let v = hyper::header::HeaderValue::from_str(&value)
                    .map_err(|_| refuse(path, format!("header '{name}' has an invalid value")))?;
                config.headers.push((n, v));
            }
        }
        Ok(config)
    }
}

fn tls_config(path: &Path, dir: &Path, tls: TlsFile) -> Result<rustls::ServerConfig, ConfigError> {
    let unsupported = [
        ("client_ca_file", tls.client_ca_file.is_some()),
        ("cipher_suites", tls.cipher_suites.is_some()),
        ("curve_preferences", tls.curve_preferences.is_some()),
        (
            "prefer_server_cipher_suites",
            tls.prefer_server_cipher_suites.is_some(),
        ),
    ];
    if let Some((key, _)) = unsupported.iter().find(|(_, set)| *set) {
        return Err(refuse(
            path,
            format!("tls_server_config.{key} is not supported by gpumon"),
        ));
    }
    match tls.client_auth_type.as_deref() {
        None | Some("NoClientCert") => {}
        Some(other) => {
            return Err(refuse(
                path,
                format!("client_auth_type {other} is not supported by gpumon (client certificates are not implemented)"),
            ))
        }
    }
    let (Some(cert), Some(key)) = (tls.cert_file, tls.key_file) else {
        return Err(refuse(
            path,
            "tls_server_config needs both cert_file and key_file",
        ));
    };
    let cert = dir.join(cert);
    let key = dir.join(key);
    let read = |file: &Path, key: &str| {
        crate::files::read_bounded(file, MAX_FILE, "a PEM file")
            .map_err(|e| refuse(path, format!("{key} {e}")))
    };
    let cert_pem = read(&cert, "cert_file")?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| refuse(path, format!("cert_file {}: {e}", cert.display())))?;
    if certs.is_empty() {
        return Err(refuse(
            path,
            format!("cert_file {}: no certificate in it", cert.display()),
        ));
    }
    let key_pem = read(&key, "key_file")?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|e| refuse(path, format!("key_file {}: {e}", key.display())))?;
    let min = tls.min_version.as_deref().unwrap_or("TLS12");
    let max = tls.max_version.as_deref().unwrap_or("TLS13");
    let versions: &[&'static rustls::SupportedProtocolVersion] = match (min, max) {
        ("TLS12", "TLS12") => &[&rustls::version::TLS12],
        ("TLS12", "TLS13") => &[&rustls::version::TLS12, &rustls::version::TLS13],
        ("TLS13", "TLS13") => &[&rustls::version::TLS13],
        ("TLS13", "TLS12") => return Err(refuse(path, "min_version is above max_version")),
        _ => {
            return Err(refuse(
                path,
                format!(
                    "TLS versions {min}..{max}: min_version and max_version are TLS12 or TLS13 \
                     (older versions are unsafe)"
                ),
            ))
        }
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .map_err(|e| refuse(path, e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| refuse(path, format!("certificate and key: {e}")))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).expect("write");
        p
    }

    #[test]
    fn refuses_what_it_cannot_honour_and_names_it() {
        let dir = tempfile::tempdir().expect("dir");
        let cases = [
            ("tls_server_config:\n  cert_file: a.crt\n", "needs both cert_file and key_file"),
            ("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAndVerifyClientCert\n", "not supported"),
            ("tls_server_config:\n  cert_file: missing.crt\n  key_file: missing.key\n", "missing.crt"),
            ("basic_auth_users:\n  alice: plaintext\n", "not a bcrypt hash"),
            (
                "basic_auth_users:\n  alice: $2y$31$CwTycUXWue0Thq9StjUM0uJ8DPLKXt1FYlwYpQW1G5GNsI7KIqjRm\n",
                "bcrypt cost 31",
            ),
            ("basic_auth: {}\n", "unknown field `basic_auth`"),
            ("{{{", ""),
        ];
        for (text, why) in cases {
            let p = write(dir.path(), "web.yml", text);
            match WebConfig::load(&p) {
                Ok(_) => panic!("accepted {text:?}"),
                Err(e) => assert!(e.to_string().contains(why), "{text:?}: {e}"),
            }
        }
        let p = write(dir.path(), "empty.yml", "");
        assert!(WebConfig::load(&p).is_ok_and(|c| c.tls.is_none() && c.auth.is_none()));
    }

    #[test]
    fn basic_auth_verifies_once_and_remembers() {
        let hash = bcrypt::hash("s3cret", 4).expect("hash");
        let dir = tempfile::tempdir().expect("dir");
        let p = write(
            dir.path(),
            "web.yml",
            &format!("basic_auth_users:\n  prom: '{hash}'\n"),
        );
        let auth = WebConfig::load(&p).expect("valid").auth.expect("auth");
        // An unknown user is checked as a known one is, and never allowed, even with a
        // known user's password.
        assert_eq!(auth.check("nobody", "s3cret"), Verdict::Unknown);
        assert!(!auth.verify("nobody", "s3cret"));
        assert_eq!(auth.check("nobody", "s3cret"), Verdict::Denied);
        assert_eq!(auth.check("prom", "s3cret"), Verdict::Unknown);
        assert!(auth.verify("prom", "s3cret"));
        assert_eq!(auth.check("prom", "s3cret"), Verdict::Allowed);
        assert!(!auth.verify("prom", "wrong"));
        assert_eq!(auth.check("prom", "wrong"), Verdict::Denied);
    }
}
