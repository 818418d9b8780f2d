//! `once --remote`: several real `gpumon serve` processes on loopback, each on the fake NVML
//! library with its own scenario (one with a hung GPU, one behind basic auth, one killed), and
//! servers that misbehave (never answer, malformed JSON, a newer schema, a huge answer). Each
//! node gets its exact figures or its own error, within the deadline.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{gpumon, scenario, MIB};
use crate::serve::serve;

const ONE: &str = r#"{"version":1,"devices":[
  {"name":"Fake H100","memory_total_mib":81559,"memory_reserved_mib":529,
   "processes":[{"pid":4800001,"memory_mib":30000}]}]}"#;

const HUNG: &str = r#"{"version":1,"devices":[
  {"name":"Fake A100","memory_total_mib":40960,"processes":[{"pid":4800002,"memory_mib":1000}]},
  {"name":"Fake A100","memory_total_mib":40960}],
 "faults":[{"kind":"hang","device":1,"block_s":600}]}"#;

/// A real process (`sleep`) as the GPU process of a scenario with one H100 (30,000 MiB of it
/// held, 77% busy), so that its user and command are known: the process and the scenario.
fn one_h100_with_a_process() -> (std::process::Child, tempfile::TempPath) {
    let sleeper = std::process::Command::new("sleep")
        .arg("300")
        .spawn()
        .expect("sleep");
    let scn = scenario(&format!(
        r#"{{"version":1,"devices":[
  {{"name":"Fake H100","memory_total_mib":81559,"memory_reserved_mib":529,"utilization_gpu":77,
   "processes":[{{"pid":{},"memory_mib":30000}}]}}]}}"#,
        sleeper.id()
    ));
    (sleeper, scn)
}

/// A server that answers every connection with `response` (after reading the request), or
/// never answers when `None`; its address.
fn fake_server(response: Option<Vec<u8>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            match &response {
                Some(r) => {
                    let _ = stream.write_all(r);
                }
                None => held.push(stream),
            }
        }
    });
    addr
}

fn http(status: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

#[test]
fn every_node_gets_its_figures_or_its_own_error_within_the_deadline() {
    let (one, hung) = (scenario(ONE), scenario(HUNG));
    let (_a, a) = serve(&one, "0", &[]);
    let (_b, b) = serve(&hung, "0", &[]);
    // Basic auth, as `serve`'s web config file sets it.
    let dir = tempfile::tempdir().expect("dir");
    let web = dir.path().join("web.yml");
    let hash = bcrypt::hash("s3cret", 4).expect("bcrypt");
    std::fs::write(&web, format!("basic_auth_users:\n  prom: '{hash}'\n")).expect("write");
    let (_c, c) = serve(
        &one,
        "0",
        &["--web.config.file", web.to_str().expect("utf-8")],
    );
    // A node that was there and is gone.
    let (killed, d) = serve(&one, "0", &[]);
    drop(killed);
    let silent = fake_server(None);
    let garbage = fake_server(Some(http("200 OK", b"{\"schema_version\": 1, \"devic")));
    let newer = fake_server(Some(http(
        "200 OK",
        br#"{"schema_version": 2, "devices": []}"#,
    )));
    let huge = fake_server(Some(http("200 OK", &vec![b' '; 20 << 20])));
    // The hung GPU is marked stalled by the node before the fleet asks.
    std::thread::sleep(Duration::from_secs(3));
    let file = dir.path().join("nodes.txt");
    std::fs::write(
        &file,
        format!(
            "# the lab\nalpha {a}\nbeta {b}\ngamma prom:s3cret@{c}\ngamma-noauth {c}\ndelta {d}\n\
             silent {silent}\ngarbage {garbage}\nnewer {newer}\nhuge {huge}\n"
        ),
    )
    .expect("write");
    let start = Instant::now();
    let out = gpumon()
        .args(["--timeout", "1s", "once", "--json", "--remote-file"])
        .arg(&file)
        .timeout(Duration::from_secs(30))
        .output()
        .expect("once --remote");
    let took = start.elapsed();
    assert_eq!(out.status.code(), Some(1), "some nodes cannot be read");
    let j: Value = serde_json::from_slice(&out.stdout).expect("json");
    let (_, fleet) = crate::docs::schema_pub("fleet.schema.json");
    crate::docs::assert_valid(&fleet, &j, "once --remote --json");
    let once = crate::docs::once_validator();
    for n in j["nodes"].as_array().expect("nodes") {
        if !n["sample"].is_null() {
            crate::docs::assert_valid(&once, &n["sample"], "a node's sample");
        }
    }
    assert_eq!(j["schema_version"], 1);
    assert_eq!(j["totals"]["nodes"], 9);
    assert_eq!(j["totals"]["read"], 3);
    let node = |name: &str| {
        j["nodes"]
            .as_array()
            .and_then(|n| n.iter().find(|x| x["name"] == name))
            .unwrap_or_else(|| panic!("{name}: {j}"))
            .clone()
    };
    // Exact figures, as the node's own `once --json` gives them.
    let alpha = node("alpha");
    assert_eq!(alpha["error"], Value::Null);
    let dev = &alpha["sample"]["devices"][0];
    assert_eq!(dev["memory"]["total_bytes"], 81559 * MIB);
    assert_eq!(dev["memory"]["reserved_bytes"], 529 * MIB);
    assert_eq!(dev["processes"][0]["pid"], 4800001);
    assert_eq!(dev["processes"][0]["gpu_memory_bytes"], 30000 * MIB);
    assert!(dev["breakdown"].is_object(), "with its breakdown: {dev}");
    // The node with a hung GPU answers, the GPU marked.
    let beta = node("beta");
    assert_eq!(beta["sample"]["devices"][0]["stalled"], false);
    assert_eq!(beta["sample"]["devices"][1]["stalled"], true, "{beta}");
    assert_eq!(node("gamma")["error"], Value::Null);
    for (name, want) in [
        ("gamma-noauth", "401 unauthorized"),
        ("delta", "cannot connect"),
        ("silent", "no answer within 1s"),
        ("garbage", "not a sample"),
        ("newer", "schema version 2 from a newer gpumon"),
        ("huge", "larger than 16 MiB"),
    ] {
        let n = node(name);
        assert_eq!(n["sample"], Value::Null, "{name}");
        assert!(
            n["error"].as_str().is_some_and(|e| e.contains(want)),
            "{name}: {n}"
        );
    }
    // The silent node costs its deadline once, in parallel with the rest.
    assert!(took < Duration::from_secs(4), "{took:?}");
    // The text form: totals, then each node or why not.
    let out = gpumon()
        .args(["--timeout", "1s", "once", "--remote"])
        .arg(format!("{a},{d}"))
        .timeout(Duration::from_secs(30))
        .output()
        .expect("once --remote");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("2 nodes, 1 read: 1 GPU,") && text.contains("1 unreadable"),
        "{text}"
    );
    assert!(
        text.contains(&format!("── {d} ({d}) ──\nnot read: cannot connect")),
        "{text}"
    );
    // Bad endpoints are usage errors.
    let out = gpumon()
        .args(["once", "--remote", "node7"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no port"));
}

/// HTTPS and basic auth from `--remote-config`, the way `serve`'s web config file says them:
/// a node behind TLS (its certificate from a CA given by file) and a password from a file.
#[test]
fn https_nodes_are_verified_against_the_configured_ca() {
    let dir = tempfile::tempdir().expect("dir");
    // A lab's CA, and the node's certificate signed by it (webpki takes no self-signed CA
    // certificate as a server's).
    let openssl = |args: &[&str]| {
        let status = std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("openssl is required for this test (apt-get install openssl)");
        assert!(status.success(), "openssl {args:?}");
    };
    std::fs::write(
        dir.path().join("ext.cnf"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
    )
    .expect("write");
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=lab-ca",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=localhost",
        "-keyout",
        "key.pem",
        "-out",
        "node.csr",
    ]);
    openssl(&[
        "x509",
        "-req",
        "-in",
        "node.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "1",
        "-out",
        "cert.pem",
        "-extfile",
        "ext.cnf",
    ]);
    let hash = bcrypt::hash("s3cret", 4).expect("bcrypt");
    let web = dir.path().join("web.yml");
    std::fs::write(
        &web,
        format!(
            "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n\
             basic_auth_users:\n  prom: '{hash}'\n"
        ),
    )
    .expect("write");
    let one = scenario(ONE);
    let (_node, addr) = serve(
        &one,
        "0",
        &["--web.config.file", web.to_str().expect("utf-8")],
    );
    let port = addr.rsplit(':').next().expect("port").to_owned();
    let client = dir.path().join("client.yml");
    std::fs::write(dir.path().join("pw.txt"), "s3cret\n").expect("write");
    std::fs::write(
        &client,
        "tls_config:\n  ca_file: ca.pem\nbasic_auth:\n  username: prom\n  password_file: pw.txt\n",
    )
    .expect("write");
    let fleet = |args: &[&str]| -> Value {
        let out = gpumon()
            .args(["--timeout", "2s", "once", "--json"])
            .args(args)
            .timeout(Duration::from_secs(30))
            .output()
            .expect("once --remote");
        serde_json::from_slice(&out.stdout).expect("json")
    };
    let https = format!("https://localhost:{port}");
    let client_arg = client.to_str().expect("utf-8");
    let j = fleet(&["--remote", &https, "--remote-config", client_arg]);
    assert_eq!(j["nodes"][0]["error"], Value::Null, "{j}");
    assert_eq!(
        j["nodes"][0]["sample"]["devices"][0]["processes"][0]["pid"],
        4800001
    );
    // Without the CA: said; over plain http to a TLS port: an error, not a hang.
    let j = fleet(&["--remote", &https]);
    assert!(j["nodes"][0]["error"]
        .as_str()
        .is_some_and(|e| e.contains("give the CA in --remote-config")));
    let j = fleet(&["--remote", &format!("127.0.0.1:{port}")]);
    assert!(j["nodes"][0]["error"].is_string(), "{j}");
    // A name the certificate does not carry is refused.
    let j = fleet(&[
        "--remote",
        &format!("https://127.0.0.2:{port}"),
        "--remote-config",
        client_arg,
    ]);
    assert!(
        j["nodes"][0]["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("TLS:") || e.contains("cannot connect")),
        "{j}"
    );
    // A bad config is a usage error.
    std::fs::write(&client, "tls_config:\n  ca_fil: x\n").expect("write");
    let out = gpumon()
        .args(["once", "--remote", &https, "--remote-config", client_arg])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown field"));
}

/// `pick --remote`: the GPUs of several nodes ranked together (idle first, then free memory),
/// as NODE:GPU pairs; a node that cannot be read is left out with why.
#[test]
fn pick_chooses_node_gpu_pairs_across_the_fleet() {
    let n1 = scenario(
        r#"{"version":1,"devices":[
  {"name":"H100","memory_total_mib":81920},
  {"name":"H100","memory_total_mib":81920,"processes":[{"pid":4810001,"memory_mib":30720,"sm_percent":90}]}]}"#,
    );
    let n2 = scenario(r#"{"version":1,"devices":[{"name":"A100","memory_total_mib":40960}]}"#);
    let (_a, a) = serve(&n1, "0", &[]);
    let (_b, b) = serve(&n2, "0", &[]);
    let (dead, d) = serve(&n2, "0", &[]);
    drop(dead);
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("nodes.txt");
    std::fs::write(&file, format!("n1 {a}\nn2 {b}\ngone {d}\n")).expect("write");
    // Per-process %SM needs a moment of samples on each node.
    std::thread::sleep(Duration::from_secs(2));
    let pick = |args: &[&str]| {
        let out = gpumon()
            .args(["--timeout", "1s", "pick", "--remote-file"])
            .arg(&file)
            .args(args)
            .timeout(Duration::from_secs(30))
            .output()
            .expect("pick --remote");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (rc, out, err) = pick(&["--need", "30GiB", "--count", "2"]);
    assert_eq!((rc, out.as_str()), (0, "n1:0,n2:0\n"), "{err}");
    assert!(err.contains("gone not read: cannot connect"), "{err}");
    let (_, out, _) = pick(&["--need", "30GiB", "--count", "3"]);
    assert_eq!(out, "n1:0,n2:0,n1:1\n");
    let (rc, _, err) = pick(&["--need", "30GiB", "--count", "3", "--idle"]);
    assert_eq!(rc, 1);
    for want in [
        "no room for 3 GPUs with 30.0 GiB free: 2 usable",
        "n1 GPU 1: busy (1 process)",
        "gone: not read",
    ] {
        assert!(err.contains(want), "{want}: {err}");
    }
    let (_, out, _) = pick(&["--format", "json"]);
    let j: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(j["chosen"][0]["node"], "n1");
    assert_eq!(j["chosen"][0]["id"], "0");
    assert_eq!(j["unread"][0]["node"], "gone");
}

/// A server that answers by path: `routes` maps a request path to its whole response, 404
/// otherwise; its address.
fn routed_server(routes: Vec<(&'static str, Vec<u8>)>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
            let mut buf = [0u8; 4096];
            let n = stream.read(&mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).into_owned();
            let path = head.split_whitespace().nth(1).unwrap_or("");
            let r = routes
                .iter()
                .find(|(p, _)| *p == path)
                .map_or_else(|| http("404 Not Found", b"not found\n"), |(_, r)| r.clone());
            let _ = stream.write_all(&r);
        }
    });
    addr
}

/// The fleet view on a real terminal (tmux): a row per node with its state (a stalled GPU, a
/// node that never answers, a node whose gpumon predates `/api/v1/summary`), a filter, Enter
/// into a node's own dashboard fed by that node, Esc back, and `q` at once while a node
/// hangs; the terminal restored.
#[test]
fn the_fleet_view_opens_a_node_goes_back_and_quits_while_one_hangs() {
    use crate::dashboard::{line_with, Tmux};
    let (mut sleeper, alpha_scn) = one_h100_with_a_process();
    let hung = scenario(HUNG);
    let (_a, a) = serve(&alpha_scn, "0", &["--process-labels", "user"]);
    let (_b, b) = serve(&hung, "0", &[]);
    let silent = fake_server(None);
    // An older gpumon: no summary, only the whole sample (alpha's, taken once).
    let (_, code, body) = crate::serve::curl(&[&format!("http://{a}/api/v1/sample")]);
    assert_eq!(code, 200, "{body}");
    let old = routed_server(vec![("/api/v1/sample", http("200 OK", body.as_bytes()))]);
    // The summary is what the rows need, a few hundred bytes.
    let (_, code, summary) = crate::serve::curl(&[&format!("http://{a}/api/v1/summary")]);
    assert_eq!(code, 200, "{summary}");
    let j: Value = serde_json::from_str(&summary).expect("summary");
    let (_, schema) = crate::docs::schema_pub("summary.schema.json");
    crate::docs::assert_valid(&schema, &j, "/api/v1/summary");
    assert_eq!(j["gpus"][0]["used_bytes"], 30000 * MIB, "{j}");
    assert_eq!(j["gpus"][0]["busy_bytes"], 30000 * MIB, "{j}");
    assert!(summary.len() < 1024, "{summary}");
    std::thread::sleep(Duration::from_secs(2));
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("nodes.txt");
    std::fs::write(
        &file,
        format!("alpha {a}\nbeta {b}\nsilent {silent}\nold {old}\n"),
    )
    .expect("write");
    let tmux = Tmux::new(
        150,
        30,
        &[("PS1", "$ ".into()), ("RUST_BACKTRACE", "0".into())],
    );
    let bin = env!("CARGO_BIN_EXE_gpumon");
    tmux.type_line(&format!(
        "{bin} --timeout 1s --interval 1s --remote-file {}; echo FLEET=$((40+2))",
        file.display()
    ));
    let screen = tmux.wait_for("every row", |s| {
        line_with(s, "alpha").is_some_and(|l| l.contains(" ok "))
            && line_with(s, "beta").is_some_and(|l| l.contains("1 stalled"))
            && line_with(s, "silent").is_some_and(|l| l.contains("no answer within 1s"))
            && line_with(s, "old").is_some_and(|l| l.contains(" ok "))
    });
    assert!(screen.contains("4 nodes (1 not read) · 4 GPUs"), "{screen}");
    let user = std::env::var("USER").unwrap_or_else(|_| "root".into());
    let alpha = line_with(&screen, "alpha").unwrap_or_default();
    assert!(
        alpha.contains("29.3 GiB/79.6 GiB") && alpha.contains(&format!("{user} 29.3 GiB")),
        "{screen}"
    );
    // The old node's row, made here from its whole sample, says the same.
    assert!(
        line_with(&screen, "old").is_some_and(|l| l.contains("29.3 GiB/79.6 GiB")),
        "{screen}"
    );
    // A filter: nodes with a GPU of 45 GiB free (alpha and old: 50 GiB; beta's A100s less).
    tmux.run(&["send-keys", "-t", "e2e", "/"]);
    tmux.wait_for("the filter prompt", |s| s.contains("filter: ▏"));
    tmux.run(&["send-keys", "-t", "e2e", "-l", "free>=45G"]);
    tmux.run(&["send-keys", "-t", "e2e", "Enter"]);
    let screen = tmux.wait_for("the filter", |s| {
        line_with(s, "beta").is_none() && line_with(s, "silent").is_none()
    });
    assert!(line_with(&screen, "alpha").is_some(), "{screen}");
    tmux.run(&["send-keys", "-t", "e2e", "Escape"]);
    tmux.wait_for("the filter cleared", |s| line_with(s, "beta").is_some());
    // Into alpha: its own dashboard, fed by alpha.
    tmux.run(&["send-keys", "-t", "e2e", "Enter"]);
    // Its process table is drawn with alpha's processes (a frame may show the gauges before
    // the table's rows arrive: waited for, as a whole screen, rather than read at once).
    let pid = format!("  {} ", sleeper.id());
    tmux.wait_for("alpha's dashboard with its process", |s| {
        s.contains("alpha  Esc: the fleet") && s.contains("[0] Fake H100") && s.contains(&pid)
    });
    // Its pids are alpha's: no signal from here.
    tmux.run(&["send-keys", "-t", "e2e", "k"]);
    tmux.wait_for("the refusal", |s| s.contains("this process runs on alpha"));
    tmux.run(&["send-keys", "-t", "e2e", "Escape"]);
    tmux.run(&["send-keys", "-t", "e2e", "Escape"]);
    tmux.wait_for("the fleet again", |s| s.contains("gpumon fleet"));
    // Down to the silent node and into it: said not read, and q quits at once.
    tmux.run(&["send-keys", "-t", "e2e", "Down", "Down", "Enter"]);
    tmux.wait_for("silent's dashboard", |s| {
        s.contains("silent  Esc: the fleet") && s.contains("not read: no answer within 1s")
    });
    let start = Instant::now();
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    tmux.assert_restored("FLEET=42");
    assert!(start.elapsed() < Duration::from_secs(10));
    let _ = sleeper.kill();
    let _ = sleeper.wait();
}

/// A real Prometheus in `dir` scraping `jobs` (name, targets) every second; it and its
/// address.
fn prometheus(dir: &std::path::Path, jobs: &[(&str, &[&str])]) -> (crate::serve::Running, String) {
    use std::process::{Command, Stdio};
    let mut config = "global:\n  scrape_interval: 1s\nscrape_configs:\n".to_owned();
    for (job, targets) in jobs {
        let targets: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        config.push_str(&format!(
            "  - job_name: {job}\n    static_configs:\n      - targets: [{}]\n",
            targets.join(", ")
        ));
    }
    let file = dir.join("prometheus.yml");
    std::fs::write(&file, config).expect("config");
    let prom = format!("127.0.0.1:{}", crate::serve::free_port());
    let running = crate::serve::Running(
        Command::new("prometheus")
            .arg(format!("--config.file={}", file.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={prom}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus is required for this test (apt-get install prometheus)"),
    );
    (running, prom)
}

/// dcgm-exporter's `/metrics` for one A100 on `dgx-7` (20 GiB used, 55%): its address.
fn dcgm_exporter() -> String {
    let labels = r#"gpu="0",UUID="GPU-5d6b1c2a",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",Hostname="dgx-7""#;
    let text = format!(
        "# TYPE DCGM_FI_DEV_FB_USED gauge\nDCGM_FI_DEV_FB_USED{{{labels}}} 20480\n\
         # TYPE DCGM_FI_DEV_FB_FREE gauge\nDCGM_FI_DEV_FB_FREE{{{labels}}} 19960\n\
         # TYPE DCGM_FI_DEV_FB_RESERVED gauge\nDCGM_FI_DEV_FB_RESERVED{{{labels}}} 520\n\
         # TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{{{labels}}} 55\n"
    );
    let mut metrics = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n",
        text.len()
    )
    .into_bytes();
    metrics.extend_from_slice(text.as_bytes());
    routed_server(vec![("/metrics", metrics)])
}

/// `--prometheus`: a real Prometheus scrapes two `gpumon serve` nodes (one with a hung GPU),
/// one that is gone, and a node in dcgm-exporter's format; `once --prometheus --json` gives
/// each node's figures from one query, the dead one down, in its schema. A selector narrows
/// it; a query Prometheus refuses and a Prometheus that is not there are clear errors.
#[test]
fn prometheus_gives_each_nodes_figures_from_gpumon_and_dcgm_exporter_series() {
    use crate::serve::{free_port, query};
    let (one, hung) = (scenario(ONE), scenario(HUNG));
    let (_a, a) = serve(&one, "0", &[]);
    let (_b, b) = serve(&hung, "0", &[]);
    let (killed, dead) = serve(&one, "0", &[]);
    drop(killed);
    let dcgm = dcgm_exporter();
    let dir = tempfile::tempdir().expect("dir");
    let (_prometheus, prom) = prometheus(
        dir.path(),
        &[("gpumon", &[&a, &b, &dead]), ("dcgm", &[&dcgm])],
    );
    // Every target scraped, and beta's hung GPU marked stalled by its node.
    let start = Instant::now();
    while query(&prom, "count(up)") != Some(4.0)
        || query(&prom, "sum(up)") != Some(3.0)
        || query(
            &prom,
            &format!("gpumon_gpu_stalled{{instance=\"{b}\",gpu=\"1\"}}"),
        ) != Some(1.0)
    {
        assert!(start.elapsed() < Duration::from_secs(60), "never scraped");
        std::thread::sleep(Duration::from_millis(250));
    }
    let url = format!("http://{prom}");
    let out = gpumon()
        .args(["once", "--json", "--prometheus", &url])
        .timeout(Duration::from_secs(30))
        .output()
        .expect("once --prometheus");
    assert_eq!(out.status.code(), Some(1), "a target is down");
    let j: Value = serde_json::from_slice(&out.stdout).expect("json");
    let (_, schema) = crate::docs::schema_pub("prometheus.schema.json");
    crate::docs::assert_valid(&schema, &j, "once --prometheus --json");
    let (_, summary) = crate::docs::schema_pub("summary.schema.json");
    let node = |name: &str| {
        j["nodes"]
            .as_array()
            .and_then(|n| n.iter().find(|x| x["name"] == name))
            .unwrap_or_else(|| panic!("{name}: {j}"))
            .clone()
    };
    for n in j["nodes"].as_array().expect("nodes") {
        crate::docs::assert_valid(&summary, &n["summary"], "a node's summary");
    }
    assert_eq!(j["totals"], serde_json::json!({"nodes": 4, "down": 1}));
    // gpumon's series: exact bytes, the split.
    let g = &node(&a)["summary"]["gpus"][0];
    assert_eq!(g["total_bytes"], 81559 * MIB);
    assert_eq!(g["used_bytes"], 30000 * MIB);
    assert_eq!(g["reserved_bytes"], 529 * MIB);
    assert_eq!(g["busy_bytes"], 30000 * MIB);
    assert_eq!(g["unattributed_bytes"], 0);
    assert_eq!(g["state"], "ok");
    assert_eq!(node(&b)["summary"]["gpus"][1]["state"], "stalled");
    // dcgm-exporter's, in MiB, named by its Hostname; no split, so unknown.
    let d = node("dgx-7");
    assert_eq!(d["instance"], dcgm.as_str());
    let g = &d["summary"]["gpus"][0];
    assert_eq!(g["used_bytes"], 20480 * MIB);
    assert_eq!(g["total_bytes"], (20480 + 19960 + 520) * MIB);
    assert_eq!(g["util_percent"], 55);
    assert_eq!(g["name"], "NVIDIA A100-SXM4-40GB");
    assert_eq!(g["busy_bytes"], Value::Null);
    assert!(node(&dead)["error"]
        .as_str()
        .is_some_and(|e| e.contains("up == 0")));
    // The text form, and a selector.
    let out = gpumon()
        .args([
            "once",
            "--prometheus",
            &url,
            "--selector",
            r#"{job="dcgm"}"#,
        ])
        .output()
        .expect("once");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.starts_with("1 node: 1 GPU, 20.0 GiB of 40.0 GiB used"),
        "{text}"
    );
    assert!(
        text.contains(
            "[0] NVIDIA A100-SXM4-40GB  20.0 GiB / 40.0 GiB used, 19.5 GiB free, util 55%"
        ),
        "{text}"
    );
    // Errors: a query Prometheus refuses, and no Prometheus there.
    let out = gpumon()
        .args(["once", "--prometheus", &url, "--selector", r#"{job=~"("}"#])
        .output()
        .expect("once");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Prometheus: ") && err.contains("400"), "{err}");
    let nobody = format!("http://127.0.0.1:{}", free_port());
    let out = gpumon()
        .args(["once", "--prometheus", &nobody])
        .output()
        .expect("once");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot connect"));
}

/// The fleet view on a Prometheus, in tmux: rows for a gpumon node (named by its host) and a
/// dcgm-exporter node; Enter opens the gpumon node read from the Prometheus alone, with the
/// history Prometheus already had and its process (user, command) from the exporter's series;
/// Esc goes back; the dcgm-exporter node opens with its figures in bytes; `q` quits.
#[test]
fn the_fleet_view_on_a_prometheus_opens_a_node_with_its_history_and_processes() {
    use crate::dashboard::{line_with, Tmux};
    use crate::serve::query;
    let (mut sleeper, scn) = one_h100_with_a_process();
    let (_a, a) = serve(&scn, "0", &["--process-labels", "user,command"]);
    let (_, code, body) = crate::serve::curl(&[&format!("http://{a}/api/v1/sample")]);
    assert_eq!(code, 200, "{body}");
    let host = serde_json::from_str::<Value>(&body).expect("sample")["hostname"]
        .as_str()
        .expect("hostname")
        .to_owned();
    let dcgm = dcgm_exporter();
    let dir = tempfile::tempdir().expect("dir");
    let (_prometheus, prom) = prometheus(dir.path(), &[("gpumon", &[&a]), ("dcgm", &[&dcgm])]);
    // A few scrapes of history before the view starts.
    let start = Instant::now();
    while query(
        &prom,
        &format!("count_over_time(gpumon_memory_used_bytes{{instance=\"{a}\"}}[1m])"),
    )
    .is_none_or(|n| n < 4.0)
        || query(&prom, "sum(up)") != Some(2.0)
    {
        assert!(start.elapsed() < Duration::from_secs(60), "never scraped");
        std::thread::sleep(Duration::from_millis(250));
    }
    let tmux = Tmux::new(
        150,
        30,
        &[("PS1", "$ ".into()), ("RUST_BACKTRACE", "0".into())],
    );
    let bin = env!("CARGO_BIN_EXE_gpumon");
    tmux.type_line(&format!(
        "{bin} --interval 1s --prometheus http://{prom}; echo FLEET=$((40+2))"
    ));
    let screen = tmux.wait_for("both rows", |s| {
        line_with(s, &host).is_some_and(|l| l.contains(" ok "))
            && line_with(s, "dgx-7").is_some_and(|l| l.contains(" ok "))
    });
    assert!(screen.contains(&format!("from {prom}")), "{screen}");
    let user = std::env::var("USER").unwrap_or_else(|_| "root".into());
    assert!(
        line_with(&screen, &host)
            .is_some_and(|l| l.contains("29.3 GiB/79.6 GiB") && l.contains(&user)),
        "{screen}"
    );
    // Into the gpumon node: its history, its GPU and its process, all from the Prometheus.
    let row = screen.lines().position(|l| l.contains(&host)).expect("row");
    let first = screen
        .lines()
        .position(|l| l.contains("dgx-7"))
        .expect("row");
    if first < row {
        tmux.run(&["send-keys", "-t", "e2e", "Down"]);
    }
    tmux.run(&["send-keys", "-t", "e2e", "Enter"]);
    let screen = tmux.wait_for("the node's dashboard", |s| {
        s.contains(&format!("{host}  Esc: the fleet"))
            && s.contains("of history from Prometheus")
            && s.contains("[0] Fake H100")
            && s.contains(&format!("  {} ", sleeper.id()))
    });
    let process = line_with(&screen, &format!("{} ", sleeper.id())).unwrap_or_default();
    assert!(
        process.contains("29.3 GiB") && process.contains(&user) && process.contains("sleep"),
        "{screen}"
    );
    assert!(!screen.contains("not read"), "{screen}");
    tmux.run(&["send-keys", "-t", "e2e", "Escape"]);
    tmux.wait_for("the fleet again", |s| s.contains("gpumon fleet"));
    // Into the dcgm-exporter node: memory in bytes, no process rows to show.
    if first < row {
        tmux.run(&["send-keys", "-t", "e2e", "Up"]);
    } else {
        tmux.run(&["send-keys", "-t", "e2e", "Down"]);
    }
    tmux.run(&["send-keys", "-t", "e2e", "Enter"]);
    tmux.wait_for("dgx-7's dashboard", |s| {
        s.contains("dgx-7  Esc: the fleet") && s.contains("[0] NVIDIA A100-SXM4-40GB")
    });
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    tmux.assert_restored("FLEET=42");
    let _ = sleeper.kill();
    let _ = sleeper.wait();
}
