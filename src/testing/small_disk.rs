//! A small file system of its own for tests of a full disk: a tmpfs of a few MiB, mounted in a
//! mount namespace of its own (`unshare --mount --map-root-user`, so neither root nor the host's
//! mounts are touched), and reached from the test through that namespace's holder process
//! (`/proc/PID/root/…`). Writes there fail with ENOSPC, as on a real full disk, once `fill` has
//! taken what is left; `free` gives the space back. The namespace goes when the holder is killed
//! on drop (files still open keep the tmpfs alive until they close).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub struct SmallDisk {
    holder: Child,
    root: PathBuf,
    /// The folder the tmpfs is mounted on, as seen from outside (empty there), removed on drop.
    mount_point: PathBuf,
}

impl SmallDisk {
    /// A tmpfs of `bytes` bytes. Fails the test, saying why, where this machine cannot make one
    /// (no `unshare`, or user and mount namespaces not allowed).
    pub fn new(bytes: u64) -> SmallDisk {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mount_point = std::env::temp_dir().join(format!("askbridge-small-disk-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&mount_point).unwrap();
        let mut holder = Command::new("unshare")
            .args(["--mount", "--map-root-user", "sh", "-c"])
            .arg(r#"mount -t tmpfs -o "size=$1" tmpfs "$0" && echo ready && exec sleep 3600"#)
            .arg(&mount_point)
            .arg(bytes.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("unshare (util-linux) starts");
        let mut said = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(holder.stdout.take().unwrap()), &mut said).unwrap();
        assert_eq!(said.trim(), "ready", "a tmpfs in a mount namespace of its own could not be made here");
        let root = PathBuf::from(format!("/proc/{}/root", holder.id())).join(mount_point.strip_prefix("/").unwrap());
        SmallDisk { holder, root, mount_point }
    }

    /// The tmpfs's top folder, as this process reaches it. (SQLite resolves links in the paths it
    /// is given, `/proc/PID/root` included, so a database here must be opened by a process run
    /// with `command`.)
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The tmpfs's top folder, as a process run with `command` sees it.
    pub fn inside(&self) -> &Path {
        &self.mount_point
    }

    /// `program`, to be run in the tmpfs's mount namespace (`nsenter`).
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new("nsenter");
        command
            .arg(format!("--target={}", self.holder.id()))
            .args(["--mount", "--user", "--preserve-credentials", "--"])
            .arg(program);
        command
    }

    /// Takes every byte left, in a file of its own: what is written next fails with ENOSPC.
    pub fn fill(&self) {
        let mut filler = std::fs::OpenOptions::new().create(true).append(true).open(self.root.join("filler")).unwrap();
        let block = [0u8; 4096];
        loop {
            match filler.write_all(&block) {
                Ok(()) => {}
                Err(error) if error.raw_os_error() == Some(libc::ENOSPC) => return,
                Err(error) => panic!("filling the small disk: {error}"),
            }
        }
    }

    /// Gives back what `fill` took.
    pub fn free(&self) {
        std::fs::remove_file(self.root.join("filler")).unwrap();
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        // The holder is our own child, signalled by its id.
        let _ = self.holder.kill();
        let _ = self.holder.wait();
        let _ = std::fs::remove_dir(&self.mount_point);
    }
}
