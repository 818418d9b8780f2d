//! Owners above the process: pods named by a kubelet's pod-resources API (a fake kubelet on a
//! unix socket, answering `List` as the real v1 API does) for a real process placed in a
//! Kubernetes pod's cgroup, and what a kubelet that hangs or answers garbage leaves.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{gpumon_fake, scenario, stdout_json};

/// The messages as the kubelet encodes them, with fields gpumon does not read (cpu ids,
/// topology, memory) so that the client is seen to skip them.
mod wire {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ListPodResourcesRequest {}
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ListPodResourcesResponse {
        #[prost(message, repeated, tag = "1")]
        pub pod_resources: Vec<PodResources>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct PodResources {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub namespace: String,
        #[prost(message, repeated, tag = "3")]
        pub containers: Vec<ContainerResources>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ContainerResources {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, repeated, tag = "2")]
        pub devices: Vec<ContainerDevices>,
        #[prost(int64, repeated, tag = "3")]
        pub cpu_ids: Vec<i64>,
        #[prost(message, repeated, tag = "4")]
        pub memory: Vec<ContainerMemory>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ContainerDevices {
        #[prost(string, tag = "1")]
        pub resource_name: String,
        #[prost(string, repeated, tag = "2")]
        pub device_ids: Vec<String>,
        #[prost(message, optional, tag = "3")]
        pub topology: Option<TopologyInfo>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ContainerMemory {
        #[prost(string, tag = "1")]
        pub memory_type: String,
        #[prost(uint64, tag = "2")]
        pub size: u64,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TopologyInfo {
        #[prost(message, repeated, tag = "1")]
        pub nodes: Vec<NumaNode>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NumaNode {
        #[prost(int64, tag = "1")]
        pub id: i64,
    }
}

/// A kubelet's `v1.PodResourcesLister` with one answer.
#[derive(Clone)]
struct FakeKubelet(wire::ListPodResourcesResponse);

impl tonic::server::NamedService for FakeKubelet {
    const NAME: &'static str = "v1.PodResourcesLister";
}

type HttpRequest = tonic::codegen::http::Request<tonic::body::Body>;
type HttpResponse = tonic::codegen::http::Response<tonic::body::Body>;

impl tonic::codegen::Service<HttpRequest> for FakeKubelet {
    type Response = HttpResponse;
    type Error = std::convert::Infallible;
    type Future = tonic::codegen::BoxFuture<HttpResponse, std::convert::Infallible>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: HttpRequest) -> Self::Future {
        struct List(wire::ListPodResourcesResponse);
        impl tonic::server::UnaryService<wire::ListPodResourcesRequest> for List {
            type Response = wire::ListPodResourcesResponse;
            type Future = std::future::Ready<
                Result<tonic::Response<wire::ListPodResourcesResponse>, tonic::Status>,
            >;
            fn call(&mut self, _: tonic::Request<wire::ListPodResourcesRequest>) -> Self::Future {
                std::future::ready(Ok(tonic::Response::new(self.0.clone())))
            }
        }
        let answer = self.0.clone();
        Box::pin(async move {
            if req.uri().path() == "/v1.PodResourcesLister/List" {
                let codec = tonic_prost::ProstCodec::default();
                let mut grpc = tonic::server::Grpc::new(codec);
                return Ok(grpc.unary(List(answer), req).await);
            }
            Ok(tonic::Status::unimplemented("not served here").into_http())
        })
    }
}

/// Serves `answer` on a unix socket at `path`, on a thread of its own, for the test's life.
fn serve_kubelet(path: &Path, answer: wire::ListPodResourcesResponse) {
    let listener = std::os::unix::net::UnixListener::bind(path).expect("bind the socket");
    listener.set_nonblocking(true).expect("nonblocking");
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let listener = tokio::net::UnixListener::from_std(listener).expect("listener");
            let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener);
            let _ = tonic::transport::Server::builder()
                .add_service(FakeKubelet(answer))
                .serve_with_incoming(incoming)
                .await;
        });
    });
}

const UID: &str = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
const CONTAINER_ID: &str = "3f4e5d6c7b8a9f0e1d2c3b4a5f6e7d8c9b0a1f2e3d4c5b6a7f8e9d0c1b2a3f4e";
/// The fake library's GPU 0.
const GPU0: &str = "GPU-5ca1ab1e-0000-4000-8000-000000000000";

/// A real process in a Kubernetes pod's cgroup (the cgroupfs driver's layout, on the v1
/// `pids` hierarchy or on cgroup v2), put back and ended when dropped.
struct PodProcess {
    child: Child,
    root: PathBuf,
    dirs: Vec<PathBuf>,
}

impl PodProcess {
    /// `None` where cgroups cannot be made here (not root, or a read-only cgroup filesystem).
    fn start() -> Option<PodProcess> {
        let v2 = Path::new("/sys/fs/cgroup/cgroup.procs").exists();
        let root = if v2 {
            PathBuf::from("/sys/fs/cgroup")
        } else {
            PathBuf::from("/sys/fs/cgroup/pids")
        };
        let base = root.join(format!("kubepods-test-{}", std::process::id()));
        let pod = base.join("besteffort").join(format!("pod{UID}"));
        let leaf = pod.join(CONTAINER_ID);
        std::fs::create_dir_all(&leaf).ok()?;
        let child = Command::new("sleep").arg("300").spawn().ok()?;
        let mut p = PodProcess {
            child,
            root,
            dirs: vec![leaf.clone(), pod.clone(), base.join("besteffort"), base],
        };
        std::fs::write(leaf.join("cgroup.procs"), p.child.id().to_string()).ok()?;
        let cgroup = std::fs::read_to_string(format!("/proc/{}/cgroup", p.child.id())).ok()?;
        if !cgroup.contains(&format!("pod{UID}")) {
            let _ = p.child.kill();
            return None;
        }
        Some(p)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for PodProcess {
    fn drop(&mut self) {
        let _ = std::fs::write(self.root.join("cgroup.procs"), self.child.id().to_string());
        let _ = self.child.kill();
        let _ = self.child.wait();
        for d in &self.dirs {
            let _ = std::fs::remove_dir(d);
        }
    }
}

fn answer() -> wire::ListPodResourcesResponse {
    use wire::*;
    let gpu = |ids: &[&str]| ContainerDevices {
        resource_name: "nvidia.com/gpu".into(),
        device_ids: ids.iter().map(|s| (*s).to_owned()).collect(),
        topology: Some(TopologyInfo {
            nodes: vec![NumaNode { id: 0 }],
        }),
    };
    ListPodResourcesResponse {
        pod_resources: vec![
            PodResources {
                name: "trainer-0".into(),
                namespace: "ml".into(),
                containers: vec![
                    ContainerResources {
                        name: "pytorch".into(),
                        devices: vec![gpu(&[GPU0])],
                        cpu_ids: vec![0, 1, 2, 3],
                        memory: vec![ContainerMemory {
                            memory_type: "hugepages-2Mi".into(),
                            size: 1 << 30,
                        }],
                    },
                    ContainerResources {
                        name: "sidecar".into(),
                        devices: vec![],
                        cpu_ids: vec![],
                        memory: vec![],
                    },
                ],
            },
            PodResources {
                name: "other".into(),
                namespace: "dev".into(),
                containers: vec![ContainerResources {
                    name: "app".into(),
                    devices: vec![gpu(&["GPU-5ca1ab1e-0000-4000-8000-000000000001"])],
                    cpu_ids: vec![],
                    memory: vec![],
                }],
            },
        ],
    }
}

fn one_gpu(pid: u32) -> tempfile::TempPath {
    scenario(&format!(
        r#"{{"version":1,"devices":[
          {{"name":"G0","memory_total_mib":4096,"processes":[{{"pid":{pid},"memory_mib":1000}}]}},
          {{"name":"G1","memory_total_mib":4096}}]}}"#
    ))
}

fn owner_of(sample: &Value) -> Value {
    sample["devices"][0]["processes"][0]["owner"].clone()
}

/// The whole path: a real process in a pod's cgroup, NVML (the fake library) listing it on
/// GPU 0, and a kubelet that gave GPU 0 to `ml/trainer-0`'s `pytorch` container. `once`
/// names the pod; `serve --process-labels pod` labels its series as dcgm-exporter does; a
/// kubelet that hangs or answers garbage leaves the pod's UID, in time.
#[test]
fn the_kubelet_names_the_pod_that_holds_a_gpu() {
    let Some(pod) = PodProcess::start() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs as root with writable cgroups: a pod's cgroup could not be made"
        );
        eprintln!("cannot make cgroups here (not root?): skipped");
        return;
    };
    let dir = tempfile::tempdir().expect("dir");
    let socket = dir.path().join("kubelet.sock");
    serve_kubelet(&socket, answer());
    let s = one_gpu(pod.pid());

    let sample = stdout_json(
        gpumon_fake(&s, 1.0)
            .args(["once", "--json", "--kubelet-socket"])
            .arg(&socket),
    );
    let owner = owner_of(&sample);
    assert_eq!(owner["kind"], "kubernetes", "{sample}");
    assert_eq!(owner["name"], "trainer-0", "{owner}");
    assert_eq!(owner["namespace"], "ml", "{owner}");
    assert_eq!(owner["container"], "pytorch", "{owner}");
    assert_eq!(owner["pod_uid"], UID, "{owner}");
    assert_eq!(owner["container_id"], "container 3f4e5d6c7b8a", "{owner}");
    // The one-string form stays what it was.
    assert_eq!(
        sample["devices"][0]["processes"][0]["container"],
        format!("k8s pod {UID} (container 3f4e5d6c7b8a)")
    );
    // The text view names it too.
    let out = gpumon_fake(&s, 1.0)
        .env("COLUMNS", "140")
        .args(["once", "--kubelet-socket"])
        .arg(&socket)
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ml/trainer-0/pytorch"), "{text}");

    // serve: dcgm-exporter's pod labels, on request.
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpumon"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--process-labels",
            "pod",
        ])
        .arg("--kubelet-socket")
        .arg(&socket)
        .env("GPUMON_NVML_LIB", crate::common::fake_lib())
        .env("FAKE_NVML_SCENARIO", &s)
        .env("FAKE_NVML_SPEED", "0")
        .env("FAKE_NVML_TIME", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("serve");
    let addr = crate::common::serve_address(&mut child);
    let body = crate::serve::wait_for(&format!("http://{addr}/metrics"), "the pod's labels", |b| {
        b.contains("pod=\"trainer-0\"")
    });
    let _ = child.kill();
    let _ = child.wait();
    let line = body
        .lines()
        .find(|l| l.starts_with("gpumon_process_memory_bytes{"))
        .unwrap_or_default();
    assert!(
        line.contains("namespace=\"ml\"") && line.contains("container=\"pytorch\""),
        "{line}"
    );

    // A kubelet that accepts and never answers, and one that answers garbage: the UID stays,
    // and once is not held up past the kubelet's deadline.
    for (what, behaviour) in [("hangs", 0u8), ("answers garbage", 1u8)] {
        let bad = dir.path().join(format!("bad-{behaviour}.sock"));
        let listener = std::os::unix::net::UnixListener::bind(&bad).expect("bind");
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for conn in listener.incoming().flatten() {
                if behaviour == 1 {
                    use std::io::Write;
                    let mut c = conn;
                    let _ = c.write_all(&[0xde, 0xad, 0xbe, 0xef].repeat(4096));
                    held.push(c);
                } else {
                    held.push(conn);
                }
            }
        });
        let started = Instant::now();
        let sample = stdout_json(
            gpumon_fake(&s, 1.0)
                .args(["once", "--json", "--kubelet-socket"])
                .arg(&bad),
        );
        let took = started.elapsed();
        let owner = owner_of(&sample);
        assert_eq!(owner["kind"], "kubernetes", "{what}: {owner}");
        assert_eq!(owner["name"], UID, "a kubelet that {what}: {owner}");
        assert_eq!(owner["namespace"], Value::Null, "{what}: {owner}");
        assert!(
            took < Duration::from_secs(8),
            "a kubelet that {what} held once for {took:?}"
        );
    }
    drop(pod);
}
