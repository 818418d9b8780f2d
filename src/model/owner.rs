//! Who a process belongs to above itself: its Kubernetes pod, Slurm job, container or service.
//!
//! People on clusters think in pods and jobs, not pids. An owner is read from the process's
//! cgroup (the pod's UID, the job and step, a container's id, a unit) and, for pods, named by
//! the kubelet (name, namespace, container). Unknown parts are `None`.

use serde::{Deserialize, Serialize};

/// What kind of thing owns a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OwnerKind {
    /// A Kubernetes pod.
    Kubernetes,
    /// A Slurm job (and step).
    Slurm,
    Docker,
    Podman,
    /// A container started by containerd directly (not through Kubernetes).
    Containerd,
    #[serde(rename = "cri-o")]
    CriO,
    Lxc,
    /// A container whose runtime the cgroup does not name.
    Container,
    /// A systemd service or scope outside the user sessions.
    Systemd,
}

impl OwnerKind {
    pub fn name(self) -> &'static str {
        match self {
            OwnerKind::Kubernetes => "kubernetes",
            OwnerKind::Slurm => "slurm",
            OwnerKind::Docker => "docker",
            OwnerKind::Podman => "podman",
            OwnerKind::Containerd => "containerd",
            OwnerKind::CriO => "cri-o",
            OwnerKind::Lxc => "lxc",
            OwnerKind::Container => "container",
            OwnerKind::Systemd => "systemd",
        }
    }
}

/// A process's owner. `name` is what names it best: the pod's name (its UID until the kubelet
/// names it), the Slurm job's id, a container's short id, an LXC container's or a unit's name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Owner {
    pub kind: OwnerKind,
    pub name: String,
    /// The pod's namespace (Kubernetes).
    pub namespace: Option<String>,
    /// The container's name inside its pod (Kubernetes, from the kubelet).
    pub container: Option<String>,
    /// The Slurm job and step, as Slurm writes them: `81234.0`, `81234.batch`.
    pub job: Option<String>,
    /// The pod's UID, from the cgroup (Kubernetes).
    pub pod_uid: Option<String>,
    /// The container runtime and the container's short id: `containerd 3f4e5d6c7b8a`.
    pub container_id: Option<String>,
}

impl Owner {
    /// Every text of the owner (from cgroup paths and the kubelet: other people's names),
    /// each visited mutably, for the one escaping rule ([`super::Sample::escaped`]).
    pub fn texts_mut(&mut self, f: &mut impl FnMut(&mut String)) {
        f(&mut self.name);
        for o in [
            &mut self.namespace,
            &mut self.container,
            &mut self.job,
            &mut self.pod_uid,
            &mut self.container_id,
        ] {
            if let Some(s) = o.as_mut() {
                f(s);
            }
        }
    }

    /// The same texts, read-only.
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.name.as_str()).chain(
            [
                &self.namespace,
                &self.container,
                &self.job,
                &self.pod_uid,
                &self.container_id,
            ]
            .into_iter()
            .flatten()
            .map(String::as_str),
        )
    }

    /// An owner of `kind` named `name`, nothing else known.
    pub fn new(kind: OwnerKind, name: impl Into<String>) -> Owner {
        Owner {
            kind,
            name: name.into(),
            namespace: None,
            container: None,
            job: None,
            pod_uid: None,
            container_id: None,
        }
    }

    /// A pod the kubelet has not named: its UID stands for its name.
    pub fn unnamed_pod(&self) -> bool {
        self.kind == OwnerKind::Kubernetes && self.namespace.is_none()
    }

    /// The short form the tables show: `ml/trainer-0/pytorch`, `pod 0f1e2d3c…`,
    /// `slurm 81234.0`, `docker 3f4e5d6c7b8a`, `jupyterhub.service`.
    pub fn label(&self) -> String {
        match self.kind {
            OwnerKind::Kubernetes => match (&self.namespace, &self.container) {
                (Some(ns), Some(c)) => format!("{ns}/{}/{c}", self.name),
                (Some(ns), None) => format!("{ns}/{}", self.name),
                _ => {
                    let short: String = self.name.chars().take(8).collect();
                    if short.len() < self.name.len() {
                        format!("pod {short}…")
                    } else {
                        format!("pod {short}")
                    }
                }
            },
            OwnerKind::Slurm => format!("slurm {}", self.job.as_deref().unwrap_or(&self.name)),
            OwnerKind::Systemd => self.name.clone(),
            kind => format!("{} {}", kind.name(), self.name),
        }
    }

    /// The form `container` had before owners had fields (kept for `once --json`'s
    /// `container` and `log`'s `container`): `k8s pod UID (containerd ID)`,
    /// `docker ID`, `slurm job 81234`, `lxc NAME`, a unit.
    pub fn container_label(&self) -> String {
        match self.kind {
            OwnerKind::Kubernetes => match (&self.pod_uid, &self.container_id) {
                (Some(uid), Some(id)) => format!("k8s pod {uid} ({id})"),
                (Some(uid), None) => format!("k8s pod {uid}"),
                (None, Some(id)) => format!("k8s {id}"),
                (None, None) => "k8s pod".into(),
            },
            OwnerKind::Slurm => {
                let job = self.job.as_deref().unwrap_or(&self.name);
                let id = job.split('.').next().unwrap_or(job);
                format!("slurm job {id}")
            }
            OwnerKind::Systemd => self.name.clone(),
            kind => format!("{} {}", kind.name(), self.name),
        }
    }

    /// The key the per-owner view groups by: one row per pod, job or container.
    pub fn group_key(&self) -> String {
        match self.kind {
            // A job's steps are one job.
            OwnerKind::Slurm => format!("slurm {}", self.name),
            // A pod's containers are one pod.
            OwnerKind::Kubernetes => match &self.namespace {
                Some(ns) => format!("{ns}/{}", self.name),
                None => format!("pod {}", self.name),
            },
            _ => self.label(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_name_the_owner_as_people_say_it() {
        let mut pod = Owner::new(
            OwnerKind::Kubernetes,
            "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
        );
        pod.pod_uid = Some(pod.name.clone());
        pod.container_id = Some("containerd 3f4e5d6c7b8a".into());
        assert_eq!(pod.label(), "pod 0f1e2d3c…");
        assert!(pod.unnamed_pod());
        assert_eq!(
            pod.container_label(),
            "k8s pod 0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 (containerd 3f4e5d6c7b8a)"
        );
        pod.name = "trainer-0".into();
        pod.namespace = Some("ml".into());
        pod.container = Some("pytorch".into());
        assert_eq!(pod.label(), "ml/trainer-0/pytorch");
        assert_eq!(pod.group_key(), "ml/trainer-0");
        assert!(!pod.unnamed_pod());

        let mut job = Owner::new(OwnerKind::Slurm, "81234");
        job.job = Some("81234.batch".into());
        assert_eq!(job.label(), "slurm 81234.batch");
        assert_eq!(job.container_label(), "slurm job 81234");
        assert_eq!(job.group_key(), "slurm 81234");

        assert_eq!(
            Owner::new(OwnerKind::Docker, "3f4e5d6c7b8a").label(),
            "docker 3f4e5d6c7b8a"
        );
        assert_eq!(
            Owner::new(OwnerKind::Systemd, "jupyterhub.service").label(),
            "jupyterhub.service"
        );
        assert_eq!(
            serde_json::to_value(OwnerKind::CriO).expect("json"),
            serde_json::json!("cri-o")
        );
    }
}
