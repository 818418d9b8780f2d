//! Pod names from the kubelet's pod-resources API, as dcgm-exporter gets them.
//!
//! A process's cgroup gives its pod's UID, not the pod's name. The kubelet's pod-resources
//! service (v1 `List`, gRPC over the unix socket `/var/lib/kubelet/pod-resources/kubelet.sock`)
//! says which container of which pod was given each device (`nvidia.com/gpu` and MIG
//! resources, by GPU or MIG UUID). A process in a pod on a GPU that exactly one pod holds is
//! named by that pod; where several pods share a GPU (time-slicing), the UID stays.
//!
//! The socket is asked only when it exists, from a thread of its own, within a deadline, and
//! again every [`REFRESH`]; an answer that does not come, or does not parse, leaves the UIDs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::model::owner::{Owner, OwnerKind};
use crate::model::Device;

/// Where the kubelet serves pod resources.
pub const DEFAULT_SOCKET: &str = "/var/lib/kubelet/pod-resources/kubelet.sock";
/// How long one `List` may take, connecting included.
pub const TIMEOUT: Duration = Duration::from_secs(2);
/// How often the pods are asked for again.
pub const REFRESH: Duration = Duration::from_secs(10);
/// The most devices kept from one answer, and the longest name: a kubelet has no more, and a
/// garbage answer gets no further.
const MAX_DEVICES: usize = 4096;
const MAX_NAME: usize = 253;

/// The messages of `k8s.io/kubelet/pkg/apis/podresources/v1/api.proto` that `List` needs,
/// with the proto's own field numbers (the fields gpumon does not read are skipped on the
/// wire).
pub mod proto {
    /// `ListPodResourcesRequest`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ListPodResourcesRequest {}

    /// `ListPodResourcesResponse`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ListPodResourcesResponse {
        #[prost(message, repeated, tag = "1")]
        pub pod_resources: Vec<PodResources>,
    }

    /// `PodResources`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct PodResources {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub namespace: String,
        #[prost(message, repeated, tag = "3")]
        pub containers: Vec<ContainerResources>,
    }

    /// `ContainerResources` (its `cpu_ids`, `memory` and `dynamic_resources` are not read).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ContainerResources {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, repeated, tag = "2")]
        pub devices: Vec<ContainerDevices>,
    }

    /// `ContainerDevices` (its `topology` is not read).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ContainerDevices {
        #[prost(string, tag = "1")]
        pub resource_name: String,
        #[prost(string, repeated, tag = "2")]
        pub device_ids: Vec<String>,
    }

    /// The gRPC method `List` is served at.
    pub const LIST: &str = "/v1.PodResourcesLister/List";
}

/// A container of a pod that was given a device.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PodRef {
    pub namespace: String,
    pub name: String,
    pub container: String,
}

/// Which containers hold each GPU, by GPU or MIG UUID.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pods {
    by_device: HashMap<String, Vec<PodRef>>,
}

fn cut(s: &str) -> String {
    let mut end = s.len().min(MAX_NAME);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

impl Pods {
    /// The GPU resources of a `List` answer: NVIDIA's device plugin's (`nvidia.com/gpu`,
    /// `nvidia.com/mig-1g.10gb`, …), whose device ids are the GPUs' UUIDs.
    pub fn from_response(r: &proto::ListPodResourcesResponse) -> Pods {
        let mut by_device: HashMap<String, Vec<PodRef>> = HashMap::new();
        let mut count = 0;
        for pod in &r.pod_resources {
            for c in &pod.containers {
                for d in &c.devices {
                    if !d.resource_name.starts_with("nvidia.com/") {
                        continue;
                    }
                    for id in &d.device_ids {
                        count += 1;
                        if count > MAX_DEVICES {
                            return Pods { by_device };
                        }
                        let r = PodRef {
                            namespace: cut(&pod.namespace),
                            name: cut(&pod.name),
                            container: cut(&c.name),
                        };
                        let refs = by_device.entry(cut(id)).or_default();
                        if !refs.contains(&r) {
                            refs.push(r);
                        }
                    }
                }
            }
        }
        Pods { by_device }
    }

    /// The containers that hold the GPU (or MIG device) with this UUID.
    pub fn holding(&self, uuid: &str) -> &[PodRef] {
        self.by_device.get(uuid).map_or(&[], Vec::as_slice)
    }

    pub fn is_empty(&self) -> bool {
        self.by_device.is_empty()
    }
}

/// Asks the kubelet at `socket` for its pods, within `timeout`. Blocking: it runs its own
/// small runtime, on the caller's thread.
pub fn list(socket: &Path, timeout: Duration) -> Result<Pods, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))?;
    let socket = socket.to_path_buf();
    runtime.block_on(async move {
        match tokio::time::timeout(timeout, list_async(socket)).await {
            Ok(r) => r,
            Err(_) => Err(format!(
                "no answer within {}",
                humantime::format_duration(timeout)
            )),
        }
    })
}

async fn list_async(socket: PathBuf) -> Result<Pods, String> {
    let channel = tonic::transport::Endpoint::from_static("http://kubelet")
        .connect_with_connector(tower::service_fn(move |_: tonic::transport::Uri| {
            let socket = socket.clone();
            async move {
                let stream = tokio::net::UnixStream::connect(socket).await?;
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(stream))
            }
        }))
        .await
        .map_err(|e| format!("cannot connect: {}", source_chain(&e)))?;
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready()
        .await
        .map_err(|e| format!("not ready: {}", source_chain(&e)))?;
    let codec = tonic_prost::ProstCodec::<
        proto::ListPodResourcesRequest,
        proto::ListPodResourcesResponse,
    >::default();
    let path = tonic::codegen::http::uri::PathAndQuery::from_static(proto::LIST);
    let answer = grpc
        .unary(
            tonic::Request::new(proto::ListPodResourcesRequest {}),
            path,
            codec,
        )
        .await
        .map_err(|s| format!("List failed: {}", s.message()))?;
    Ok(Pods::from_response(answer.get_ref()))
}

fn source_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        text.push_str(": ");
        text.push_str(&s.to_string());
        cur = s.source();
    }
    text
}

#[derive(Default)]
struct Latest {
    /// Whether one answer (or failure) has come.
    done: bool,
    pods: Option<Arc<Pods>>,
    error: Option<String>,
}

/// Asks the kubelet every [`REFRESH`] on a thread of its own and keeps the latest answer.
pub struct Watcher {
    latest: Arc<(Mutex<Latest>, Condvar)>,
}

impl Watcher {
    /// Starts asking the kubelet at `socket`; `None` when there is no socket there (not a
    /// Kubernetes node, or not mounted into gpumon's container).
    pub fn start(socket: PathBuf) -> Option<Watcher> {
        use std::os::unix::fs::FileTypeExt;
        let is_socket = std::fs::metadata(&socket).is_ok_and(|m| m.file_type().is_socket());
        if !is_socket {
            return None;
        }
        let latest: Arc<(Mutex<Latest>, Condvar)> = Arc::default();
        let shared = Arc::clone(&latest);
        std::thread::Builder::new()
            .name("gpumon-kubelet".into())
            .spawn(move || loop {
                let answer = list(&socket, TIMEOUT);
                {
                    let (lock, cv) = &*shared;
                    let Ok(mut l) = lock.lock() else { return };
                    l.done = true;
                    match answer {
                        Ok(p) => {
                            l.pods = Some(Arc::new(p));
                            l.error = None;
                        }
                        // The last good answer stays: pods do not vanish with one slow reply.
                        Err(e) => l.error = Some(e),
                    }
                    cv.notify_all();
                }
                // Ends with the process; nothing holds it but the shared state.
                if Arc::strong_count(&shared) == 1 {
                    return;
                }
                std::thread::sleep(REFRESH);
            })
            .ok()?;
        Some(Watcher { latest })
    }

    /// The latest answer, if one came.
    pub fn pods(&self) -> Option<Arc<Pods>> {
        self.latest.0.lock().ok()?.pods.clone()
    }

    /// Why the last question failed, if it did.
    pub fn error(&self) -> Option<String> {
        self.latest.0.lock().ok()?.error.clone()
    }

    /// Waits up to `limit` for the first answer (a view that samples once).
    pub fn wait_first(&self, limit: Duration) {
        let (lock, cv) = &*self.latest;
        if let Ok(guard) = lock.lock() {
            let _ = cv.wait_timeout_while(guard, limit, |l| !l.done);
        }
    }
}

/// Names the pods of the processes on `devices` that only a UID names, where exactly one pod
/// holds their GPU; the container too, where exactly one of its containers does.
pub fn name_pods(devices: &mut [Device], pods: &Pods) {
    for d in devices {
        // The GPU, and with MIG on each MIG device (the kubelet hands out MIG devices by
        // their `MIG-` UUID): the pods holding it name the processes running there.
        let mut targets: Vec<(String, Option<u32>)> = Vec::new();
        if let Some(uuid) = &d.uuid {
            targets.push((uuid.clone(), None));
        }
        for m in &d.mig {
            if let (Some(uuid), Some(gi)) = (&m.uuid, m.gpu_instance_id) {
                targets.push((uuid.clone(), Some(gi)));
            }
        }
        for (uuid, gi) in targets {
            let holders = pods.holding(&uuid);
            let mut named: Vec<(&str, &str)> = holders
                .iter()
                .map(|r| (r.namespace.as_str(), r.name.as_str()))
                .collect();
            named.sort_unstable();
            named.dedup();
            let [(namespace, name)] = named[..] else {
                continue;
            };
            let containers: Vec<&str> = holders.iter().map(|r| r.container.as_str()).collect();
            for p in &mut d.processes {
                if gi.is_some() && p.gpu_instance_id != gi {
                    continue;
                }
                let Some(owner) = p.owner.as_deref() else {
                    continue;
                };
                if owner.kind != OwnerKind::Kubernetes || !owner.unnamed_pod() {
                    continue;
                }
                let mut named = Owner {
                    name: name.to_owned(),
                    namespace: Some(namespace.to_owned()),
                    ..owner.clone()
                };
                if let [c] = containers[..] {
                    named.container = Some(c.to_owned());
                }
                p.owner = Some(Arc::new(named));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::proto::*;
    use super::*;
    use crate::model::{Process, ProcessKind};

    fn pod(ns: &str, name: &str, containers: &[(&str, &str, &[&str])]) -> PodResources {
        PodResources {
            name: name.into(),
            namespace: ns.into(),
            containers: containers
                .iter()
                .map(|(c, resource, ids)| ContainerResources {
                    name: (*c).into(),
                    devices: vec![ContainerDevices {
                        resource_name: (*resource).into(),
                        device_ids: ids.iter().map(|s| (*s).to_owned()).collect(),
                    }],
                })
                .collect(),
        }
    }

    fn k8s_process(pid: u32, uid: &str) -> Process {
        let mut p = Process::from_nvml(pid, ProcessKind::Compute, Some(1));
        let mut o = Owner::new(OwnerKind::Kubernetes, uid);
        o.pod_uid = Some(uid.into());
        p.owner = Some(Arc::new(o));
        p
    }

    #[test]
    fn a_gpu_one_pod_holds_names_its_processes_and_a_shared_one_does_not() {
        let answer = ListPodResourcesResponse {
            pod_resources: vec![
                pod(
                    "ml",
                    "trainer-0",
                    &[("pytorch", "nvidia.com/gpu", &["GPU-a"])],
                ),
                pod("ml", "a", &[("x", "nvidia.com/gpu", &["GPU-shared"])]),
                pod("dev", "b", &[("y", "nvidia.com/gpu", &["GPU-shared"])]),
                pod("ml", "side", &[("nic", "example.com/nic", &["GPU-b"])]),
            ],
        };
        let pods = Pods::from_response(&answer);
        assert_eq!(pods.holding("GPU-a").len(), 1);
        assert_eq!(pods.holding("GPU-shared").len(), 2);
        assert!(pods.holding("GPU-b").is_empty(), "not an NVIDIA resource");
        let mut devices: Vec<Device> = ["GPU-a", "GPU-shared"]
            .iter()
            .map(|uuid| Device {
                uuid: Some((*uuid).into()),
                processes: vec![
                    k8s_process(1, "uid-1"),
                    Process::from_nvml(2, ProcessKind::Compute, None),
                ],
                ..Device::default()
            })
            .collect();
        name_pods(&mut devices, &pods);
        let named = devices[0].processes[0].owner.as_deref().expect("owner");
        assert_eq!(named.label(), "ml/trainer-0/pytorch");
        assert_eq!(named.pod_uid.as_deref(), Some("uid-1"), "the UID stays");
        assert!(
            devices[0].processes[1].owner.is_none(),
            "a host process stays the host's"
        );
        let shared = devices[1].processes[0].owner.as_deref().expect("owner");
        assert!(shared.unnamed_pod(), "two pods share the GPU: {shared:?}");
    }

    #[test]
    fn the_pod_holding_a_mig_device_names_the_processes_in_that_instance() {
        use crate::model::MigDevice;
        let answer = ListPodResourcesResponse {
            pod_resources: vec![
                pod(
                    "ml",
                    "infer",
                    &[("vllm", "nvidia.com/mig-3g.40gb", &["MIG-1"])],
                ),
                pod(
                    "dev",
                    "nb",
                    &[("lab", "nvidia.com/mig-1g.10gb", &["MIG-2"])],
                ),
            ],
        };
        let pods = Pods::from_response(&answer);
        let in_instance = |pid, uid: &str, gi| {
            let mut p = k8s_process(pid, uid);
            p.gpu_instance_id = Some(gi);
            p
        };
        let mig = |uuid: &str, gi| MigDevice {
            uuid: Some(uuid.into()),
            gpu_instance_id: Some(gi),
            ..MigDevice::default()
        };
        let mut devices = vec![Device {
            uuid: Some("GPU-a".into()),
            mig: vec![mig("MIG-1", 1), mig("MIG-2", 13)],
            processes: vec![in_instance(1, "uid-1", 1), in_instance(2, "uid-2", 13)],
            ..Device::default()
        }];
        name_pods(&mut devices, &pods);
        let label = |i: usize| {
            devices[0].processes[i]
                .owner
                .as_deref()
                .map(Owner::label)
                .unwrap_or_default()
        };
        assert_eq!(label(0), "ml/infer/vllm");
        assert_eq!(label(1), "dev/nb/lab");
    }

    #[test]
    fn the_wire_format_is_the_kubelets() {
        use prost::Message;
        // A real v1 answer carries fields gpumon does not read (cpu_ids = 3 in
        // ContainerResources, topology = 3 in ContainerDevices): they are skipped.
        let mut bytes = Vec::new();
        let device = {
            let mut d = Vec::new();
            prost::encoding::string::encode(1, &"nvidia.com/gpu".to_owned(), &mut d);
            prost::encoding::string::encode(2, &"GPU-a".to_owned(), &mut d);
            prost::encoding::bytes::encode(3, &vec![0x0a, 0x02, 0x08, 0x01], &mut d);
            d
        };
        let container = {
            let mut c = Vec::new();
            prost::encoding::string::encode(1, &"pytorch".to_owned(), &mut c);
            prost::encoding::bytes::encode(2, &device, &mut c);
            prost::encoding::int64::encode_packed(3, &[0, 1, 2], &mut c);
            c
        };
        let pod = {
            let mut p = Vec::new();
            prost::encoding::string::encode(1, &"trainer-0".to_owned(), &mut p);
            prost::encoding::string::encode(2, &"ml".to_owned(), &mut p);
            prost::encoding::bytes::encode(3, &container, &mut p);
            p
        };
        prost::encoding::bytes::encode(1, &pod, &mut bytes);
        let decoded = ListPodResourcesResponse::decode(bytes.as_slice()).expect("decode");
        let pods = Pods::from_response(&decoded);
        assert_eq!(
            pods.holding("GPU-a"),
            &[PodRef {
                namespace: "ml".into(),
                name: "trainer-0".into(),
                container: "pytorch".into()
            }]
        );
        // Garbage decodes to an error, not a panic.
        assert!(ListPodResourcesResponse::decode(&[0xff, 0xff, 0xff][..]).is_err());
    }

    #[test]
    fn no_socket_no_watcher_and_a_dead_socket_fails_in_time() {
        assert!(Watcher::start("/nonexistent/kubelet.sock".into()).is_none());
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("kubelet.sock");
        // A socket nobody accepts on answers "cannot connect" at once.
        drop(std::os::unix::net::UnixListener::bind(&path).expect("bind"));
        let t = std::time::Instant::now();
        assert!(list(&path, TIMEOUT).is_err());
        assert!(t.elapsed() < TIMEOUT + Duration::from_secs(1));
    }
}
