//! Owners from `/proc/PID/cgroup`: the Kubernetes pod (its UID and container id), the Slurm job
//! and step, a Docker, Podman, containerd or CRI-O container, an LXC container, or a systemd
//! service, on cgroup v1 and v2. The kubelet names pods ([`super::kubelet`]).

use crate::model::owner::{Owner, OwnerKind};

/// The owner of a process from its `/proc/PID/cgroup`; `None` for a host process (a login
/// session, a user service, the root cgroup).
///
/// Recognised: Docker (`/docker/ID`, `docker-ID.scope`), Kubernetes (`kubepods` with the pod
/// UID, and the runtime's container id: containerd, CRI-O, Docker), Podman (`libpod-ID`),
/// LXC, Slurm jobs and steps (`/slurm/uid_U/job_J/step_S` on v1,
/// `…slurmstepd.scope/job_J/step_S/…` on v2), and other systemd services and scopes outside
/// the user slices.
pub fn owner_of(cgroup: &str) -> Option<Owner> {
    owner_of_path(cgroup_path(cgroup)?.trim())
}

/// cgroup v2's single line ("0::/path"), else the v1 hierarchy most likely to be set (pids,
/// memory, or systemd's own).
fn cgroup_path(cgroup: &str) -> Option<&str> {
    let mut best: Option<&str> = None;
    for line in cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        // cgroup v2's line; on a hybrid host it is "/" and the v1 lines say more.
        if id == "0" && controllers.is_empty() {
            if path.trim() != "/" {
                return Some(path);
            }
            continue;
        }
        let useful = controllers
            .split(',')
            .any(|c| matches!(c, "pids" | "memory" | "name=systemd" | "cpu" | "cpuset"));
        if useful && best.is_none_or(|b| b.trim() == "/") {
            best = Some(path);
        }
    }
    best
}

fn short_id(s: &str) -> Option<&str> {
    let id = s.trim_end_matches(".scope");
    (id.len() >= 12 && id.chars().all(|c| c.is_ascii_hexdigit())).then(|| &id[..12])
}

/// Whether a cgroup component is a user's delegated subtree (systemd gives every user
/// `user@UID.service` under `user-UID.slice` in `user.slice`, and lets them create cgroups
/// below it): what lies below one is named by that user, not by a pod's or a job's manager.
fn delegated(part: &str) -> bool {
    part == "user.slice"
        || (part.starts_with("user-") && part.ends_with(".slice"))
        || (part.starts_with("user@") && part.ends_with(".service"))
}

/// Where Slurm's `job_N` sits in the layout slurmd itself makes: `/slurm*/uid_U/job_N` (v1)
/// or `…/[NODE_]slurmstepd.scope/job_N` (v2).
fn slurm_layout(parts: &[&str], at: usize) -> bool {
    let v1 = at == 2 && parts[0].starts_with("slurm") && parts[1].starts_with("uid_");
    let v2 = at >= 1 && parts[at - 1].ends_with("slurmstepd.scope");
    v1 || v2
}

fn owner_of_path(path: &str) -> Option<Owner> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    // A pod or a job is believed only from components its manager made: none below a
    // user's delegated subtree, where anyone can name a cgroup `job_81234` or after
    // another team's pod.
    let managed = parts
        .iter()
        .position(|p| delegated(p))
        .unwrap_or(parts.len());
    // The container runtime's id: the last component that is one.
    let runtime = parts.iter().rev().find_map(|p| {
        for (prefix, kind) in [
            ("cri-containerd-", OwnerKind::Containerd),
            ("crio-", OwnerKind::CriO),
            ("docker-", OwnerKind::Docker),
            ("libpod-", OwnerKind::Podman),
        ] {
            if let Some(id) = p.strip_prefix(prefix).and_then(short_id) {
                return Some((kind, id));
            }
        }
        short_id(p).map(|id| (OwnerKind::Container, id))
    });
    // Kubernetes: "pod<uid>" (cgroupfs) or "kubepods-<qos>-pod<uid_with_underscores>.slice".
    if parts[..managed].iter().any(|p| p.starts_with("kubepods")) {
        let uid = parts.iter().find_map(|p| {
            let p = p.trim_end_matches(".slice");
            let at = p.rfind("pod")?;
            let uid = &p[at + 3..];
            (uid.len() >= 32).then(|| uid.replace('_', "-"))
        });
        let mut owner = Owner::new(OwnerKind::Kubernetes, uid.clone().unwrap_or_default());
        owner.pod_uid = uid;
        owner.container_id = runtime.map(|(kind, id)| format!("{} {id}", kind.name()));
        return Some(owner);
    }
    // Slurm: a job_N component, its step after it.
    if let Some(at) = parts[..managed]
        .iter()
        .position(|p| {
            p.strip_prefix("job_")
                .is_some_and(|j| !j.is_empty() && j.chars().all(|c| c.is_ascii_digit()))
        })
        .filter(|at| slurm_layout(&parts, *at))
    {
        let job = parts[at].trim_start_matches("job_");
        let step = parts
            .get(at + 1)
            .and_then(|s| s.strip_prefix("step_"))
            .filter(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric()));
        let mut owner = Owner::new(OwnerKind::Slurm, job);
        owner.job = Some(match step {
            Some(step) => format!("{job}.{step}"),
            None => job.to_owned(),
        });
        return Some(owner);
    }
    if let Some((kind, id)) = runtime {
        let kind = if kind == OwnerKind::Container && parts.first() == Some(&"docker") {
            OwnerKind::Docker
        } else {
            kind
        };
        return Some(Owner::new(kind, id));
    }
    if let Some(name) = parts.iter().find_map(|p| {
        p.strip_prefix("lxc.payload.")
            .or_else(|| p.strip_prefix("lxc/"))
    }) {
        return Some(Owner::new(OwnerKind::Lxc, name));
    }
    if parts.first() == Some(&"lxc") {
        return parts.get(1).map(|n| Owner::new(OwnerKind::Lxc, *n));
    }
    // Login sessions and per-user services are the host; a system service or a transient
    // scope (systemd-run) is named by its unit.
    if parts
        .iter()
        .any(|p| p.starts_with("user.slice") || p.starts_with("user-"))
    {
        return None;
    }
    parts
        .iter()
        .rev()
        .find(|p| p.ends_with(".service") || p.ends_with(".scope"))
        .filter(|u| !matches!(**u, "init.scope"))
        .map(|u| Owner::new(OwnerKind::Systemd, *u))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "3f4e5d6c7b8a9f0e1d2c3b4a5f6e7d8c9b0a1f2e3d4c5b6a7f8e9d0c1b2a3f4e";
    const UID: &str = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

    fn owner(text: &str) -> Option<(OwnerKind, String, Option<String>, Option<String>)> {
        owner_of(text).map(|o| (o.kind, o.name, o.job, o.container_id))
    }

    /// Kubernetes pods on cgroup v1 (cgroupfs driver) and v2 (systemd driver), with each
    /// runtime's container id.
    #[test]
    fn kubernetes_pods_on_cgroup_v1_and_v2() {
        let v2 = format!(
            "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/cri-containerd-{ID}.scope\n",
            UID.replace('-', "_")
        );
        let v1 = format!(
            "12:pids:/kubepods/besteffort/pod{UID}/{ID}\n11:memory:/kubepods/besteffort/pod{UID}/{ID}\n1:name=systemd:/kubepods/besteffort/pod{UID}/{ID}\n"
        );
        let crio = format!(
            "0::/kubepods.slice/kubepods-pod{}.slice/crio-{ID}.scope\n",
            UID.replace('-', "_")
        );
        for (text, runtime) in [
            (v2, "containerd 3f4e5d6c7b8a"),
            (v1, "container 3f4e5d6c7b8a"),
            (crio, "cri-o 3f4e5d6c7b8a"),
        ] {
            let o = owner_of(&text).expect("a pod");
            assert_eq!(o.kind, OwnerKind::Kubernetes, "{text}");
            assert_eq!(o.pod_uid.as_deref(), Some(UID), "{text}");
            assert_eq!(o.name, UID, "the UID names the pod until the kubelet does");
            assert_eq!(o.container_id.as_deref(), Some(runtime), "{text}");
        }
    }

    /// Slurm's job and step on cgroup v1 (`/slurm/uid_U/job_J/step_S/task_T` in each
    /// controller) and v2 (`slurmstepd.scope/job_J/step_S/user/task_T`, also named
    /// `NODE_slurmstepd.scope` with several slurmd), batch and extern steps included.
    #[test]
    fn slurm_jobs_and_steps_on_cgroup_v1_and_v2() {
        let cases = [
            (
                "11:memory:/slurm/uid_1000/job_81234/step_0/task_0\n4:cpuset:/slurm/uid_1000/job_81234/step_0\n0::/\n",
                "81234.0",
            ),
            (
                "10:devices:/slurm_node7/uid_1000/job_81234/step_batch/task_0\n5:memory:/slurm_node7/uid_1000/job_81234/step_batch/task_0\n",
                "81234.batch",
            ),
            (
                "0::/system.slice/slurmstepd.scope/job_81234/step_0/user/task_0\n",
                "81234.0",
            ),
            (
                "0::/system.slice/node7_slurmstepd.scope/job_99/step_extern/user/task_special\n",
                "99.extern",
            ),
            ("0::/system.slice/slurmstepd.scope/job_77/step_interactive/user/task_0\n", "77.interactive"),
            ("0::/system.slice/slurmstepd.scope/job_81234\n", "81234"),
        ];
        for (text, job) in cases {
            let o = owner(text);
            assert_eq!(
                o.as_ref().map(|o| (o.0, o.2.as_deref())),
                Some((OwnerKind::Slurm, Some(job))),
                "{text}"
            );
        }
        // Not a job: a component that only starts like one.
        assert_eq!(
            owner("0::/system.slice/job_x.service\n").map(|o| o.0),
            Some(OwnerKind::Systemd)
        );
    }

    #[test]
    fn containers_services_and_the_host() {
        let cases = [
            (
                format!("0::/system.slice/docker-{ID}.scope\n"),
                Some((OwnerKind::Docker, "3f4e5d6c7b8a")),
            ),
            (
                format!("12:pids:/docker/{ID}\n11:memory:/docker/{ID}\n"),
                Some((OwnerKind::Docker, "3f4e5d6c7b8a")),
            ),
            (
                format!("0::/machine.slice/libpod-{ID}.scope/container\n"),
                Some((OwnerKind::Podman, "3f4e5d6c7b8a")),
            ),
            (
                format!("0::/system.slice/containerd.service/default/{ID}\n"),
                Some((OwnerKind::Container, "3f4e5d6c7b8a")),
            ),
            (
                "0::/lxc.payload.trainbox/init.scope\n".to_owned(),
                Some((OwnerKind::Lxc, "trainbox")),
            ),
            (
                "0::/system.slice/jupyterhub.service\n".to_owned(),
                Some((OwnerKind::Systemd, "jupyterhub.service")),
            ),
            (
                "0::/user.slice/user-1000.slice/session-3.scope\n".to_owned(),
                None,
            ),
            ("0::/\n".to_owned(), None),
            ("0::/init.scope\n".to_owned(), None),
            ("garbage without colons".to_owned(), None),
            (String::new(), None),
        ];
        for (text, want) in cases {
            let got = owner_of(&text);
            assert_eq!(
                got.as_ref().map(|o| (o.kind, o.name.as_str())),
                want,
                "{text}"
            );
        }
    }

    /// S5: a user's delegated cgroup subtree (systemd's `user@UID.service`) is theirs to name:
    /// a `job_N` or a `kubepods…pod<uid>` there is no Slurm job and no pod, and neither is a
    /// `job_N` outside slurmd's layout.
    #[test]
    fn a_users_own_cgroup_cannot_claim_a_job_or_a_pod() {
        let u = "0::/user.slice/user-1000.slice/user@1000.service";
        for text in [
            format!("{u}/job_81234/step_0\n"),
            format!(
                "{u}/kubepods-besteffort-pod{}.slice\n",
                UID.replace('-', "_")
            ),
            format!("{u}/app.slice/kubepods/pod{UID}/{ID}\n"),
            "0::/system.slice/myjob.service/job_81234/step_0\n".to_owned(),
            "0::/job_81234/step_0\n".to_owned(),
        ] {
            let o = owner_of(&text);
            assert!(
                o.as_ref()
                    .is_none_or(|o| !matches!(o.kind, OwnerKind::Slurm | OwnerKind::Kubernetes)),
                "{text}: {o:?}"
            );
        }
        // A rootless container under the user's own subtree is still that container.
        let rootless = format!("{u}/user.slice/libpod-{ID}.scope/container\n");
        assert_eq!(owner_of(&rootless).map(|o| o.kind), Some(OwnerKind::Podman));
    }
}
