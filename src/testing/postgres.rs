//! A private Postgres server for tests: `initdb` into a fresh folder, `postgres` on a free
//! loopback port, a fresh database per test. One server per test process (`TestPostgres::shared`),
//! which stops by itself when the process ends, however it ends: it is started with the parent
//! death signal set (SIGQUIT, Postgres's immediate shutdown), and a small reaper process deletes
//! its folder once the test process's end closes the reaper's stdin.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use sqlx::Connection;

/// A Postgres server of our own, stopped (and its folder deleted) when dropped.
pub struct TestPostgres {
    port: u16,
    folder: PathBuf,
    /// The postmaster: a process we started, signalled by this id only.
    pid: i32,
    /// The thread that started the postmaster and waits for it: the parent death signal follows
    /// the thread that forked, so it lives as long as the server does.
    watcher: Option<std::thread::JoinHandle<()>>,
    /// Deletes the folder when its stdin closes (our drop, or the end of the process).
    reaper: Child,
    reaper_stdin: Option<ChildStdin>,
}

static SHARED: OnceLock<TestPostgres> = OnceLock::new();
/// Numbers the databases of this process (there is one server per process).
static NEXT_DATABASE: AtomicU32 = AtomicU32::new(1);
/// Numbers the folders of this process's servers.
static NEXT_FOLDER: AtomicU32 = AtomicU32::new(1);

/// Who runs initdb and postgres: Postgres refuses root, so root runs them as `postgres`.
#[derive(Clone, Copy)]
struct RunAs {
    uid: u32,
    gid: u32,
}

impl TestPostgres {
    /// The server of this test process, started at its first use. Fails the test, saying what is
    /// missing, when Postgres is not installed (scripts/setup.sh installs it).
    pub fn shared() -> &'static TestPostgres {
        SHARED.get_or_init(TestPostgres::start)
    }

    /// A server of the caller's own, stopped and deleted when dropped.
    pub fn start() -> TestPostgres {
        let bin = bin_dir();
        let run_as = run_as();
        let folder = std::env::temp_dir().join(format!(
            "askbridge-postgres-{}-{}",
            std::process::id(),
            NEXT_FOLDER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&folder).unwrap_or_else(|e| panic!("cannot create {}: {e}", folder.display()));
        if let Some(user) = run_as {
            std::os::unix::fs::chown(&folder, Some(user.uid), Some(user.gid))
                .unwrap_or_else(|e| panic!("cannot give {} to the postgres user: {e}", folder.display()));
        }
        // The reaper first, so that the folder goes away whatever happens next.
        let mut reaper = Command::new("sh")
            .args([
                "-c",
                r#"read _; i=0; while [ -e "$1/data/postmaster.pid" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; rm -rf "$1""#,
                "askbridge-postgres-reaper",
            ])
            .arg(&folder)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own process group: a Ctrl-C to the tests must not stop it before it cleans up.
            .process_group(0)
            .spawn()
            .expect("cannot start sh for the test Postgres's cleanup");
        let reaper_stdin = reaper.stdin.take();

        let data = folder.join("data");
        let mut initdb = Command::new(bin.join("initdb"));
        initdb
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync", "--no-instructions"])
            .current_dir(&folder);
        as_user(&mut initdb, run_as);
        let output = initdb.output().unwrap_or_else(|e| panic!("cannot run {}/initdb: {e}", bin.display()));
        assert!(
            output.status.success(),
            "initdb failed ({}):\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );

        let mut server = None;
        for _attempt in 0..3 {
            let port = free_port();
            match start_server(&bin, &folder, port, run_as) {
                Ok((pid, watcher)) => {
                    server = Some((port, pid, watcher));
                    break;
                }
                // Most likely someone took the port between our look and the server's bind.
                Err(log) => eprintln!("the test Postgres did not start on port {port}, trying another:\n{log}"),
            }
        }
        let Some((port, pid, watcher)) = server else {
            panic!("the test Postgres did not start (three ports tried); its log is above")
        };
        TestPostgres { port, folder, pid, watcher: Some(watcher), reaper, reaper_stdin }
    }

    /// A new, empty database on this server: a `postgres://` URL that no other test uses.
    pub async fn database(&self) -> String {
        let name = format!("test_{}", NEXT_DATABASE.fetch_add(1, Ordering::Relaxed));
        let mut admin = sqlx::PgConnection::connect(&self.url("postgres"))
            .await
            .unwrap_or_else(|e| panic!("cannot connect to the test Postgres on port {}: {e}", self.port));
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut admin)
            .await
            .unwrap_or_else(|e| panic!("cannot create database {name}: {e}"));
        let _ = admin.close().await;
        self.url(&name)
    }

    /// The URL of the database `name` on this server, as its superuser.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    /// The folder of its data and log.
    pub fn folder(&self) -> &Path {
        &self.folder
    }
}

impl Drop for TestPostgres {
    fn drop(&mut self) {
        // SIGQUIT is Postgres's immediate shutdown (pg_ctl stop -m immediate), sent to our child.
        // SAFETY: kill has no memory effects; the id is of the postmaster we started and have
        // not reaped yet (its watcher still waits for it).
        unsafe { libc::kill(self.pid, libc::SIGQUIT) };
        if let Some(watcher) = self.watcher.take() {
            let _ = watcher.join();
        }
        drop(self.reaper_stdin.take());
        let _ = self.reaper.wait();
    }
}

/// Starts the postmaster on a thread that stays to wait for it, and waits until it accepts
/// connections; on failure, the server's log.
fn start_server(
    bin: &Path,
    folder: &Path,
    port: u16,
    run_as: Option<RunAs>,
) -> Result<(i32, std::thread::JoinHandle<()>), String> {
    let data = folder.join("data");
    let log_path = folder.join(format!("postgres-{port}.log"));
    let log = std::fs::File::create(&log_path).map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;
    if let Some(user) = run_as {
        let _ = std::os::unix::fs::chown(&log_path, Some(user.uid), Some(user.gid));
    }
    let mut command = Command::new(bin.join("postgres"));
    command
        .arg("-D")
        .arg(&data)
        .arg("-p")
        .arg(port.to_string())
        .args(["-c", "listen_addresses=127.0.0.1"])
        .arg("-c")
        .arg(format!("unix_socket_directories={}", folder.display()))
        .args(["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"])
        .args(["-c", "max_connections=300"])
        .current_dir(folder)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .process_group(0);
    as_user(&mut command, run_as);
    // SAFETY: prctl is async-signal-safe; it runs in the child between fork and exec, after the
    // user change (which would clear it).
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGQUIT as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }

    let (started, pid) = std::sync::mpsc::channel();
    let (exited_tx, exited) = std::sync::mpsc::channel();
    let watcher = std::thread::Builder::new()
        .name(format!("test-postgres-{port}"))
        .spawn(move || match command.spawn() {
            Ok(mut child) => {
                let _ = started.send(Ok(child.id() as i32));
                let status = child.wait();
                let _ = exited_tx.send(status);
            }
            Err(e) => {
                let _ = started.send(Err(format!("cannot run postgres: {e}")));
            }
        })
        .expect("cannot start the test Postgres's thread");
    let pid = pid.recv().map_err(|e| e.to_string())??;

    let read_log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        // The postmaster writes "ready" as the 8th line of its pid file once it accepts connections.
        let pid_file = std::fs::read_to_string(data.join("postmaster.pid")).unwrap_or_default();
        if pid_file.lines().nth(7).is_some_and(|status| status.trim() == "ready") {
            return Ok((pid, watcher));
        }
        if let Ok(status) = exited.try_recv() {
            let _ = watcher.join();
            return Err(format!("postgres exited ({status:?}):\n{}", read_log()));
        }
        if Instant::now() > deadline {
            // SAFETY: as in drop: our child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGQUIT) };
            let _ = watcher.join();
            return Err(format!("postgres was not ready after 60 s:\n{}", read_log()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Where initdb and postgres are: `pg_config --bindir`, else the newest /usr/lib/postgresql/*/bin.
fn bin_dir() -> PathBuf {
    let from_pg_config = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()));
    let debian = std::fs::read_dir("/usr/lib/postgresql").ok().and_then(|versions| {
        versions
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .max()
            .map(|version| PathBuf::from(format!("/usr/lib/postgresql/{version}/bin")))
    });
    [from_pg_config, debian].into_iter().flatten().find(|dir| dir.join("initdb").is_file()).unwrap_or_else(|| {
        panic!(
            "Postgres is not installed (no initdb from `pg_config --bindir` or in /usr/lib/postgresql/*/bin); \
             the store's tests need it: run scripts/setup.sh, or apt-get install postgresql"
        )
    })
}

/// The `postgres` user when we are root, whom Postgres refuses.
fn run_as() -> Option<RunAs> {
    // SAFETY: geteuid cannot fail; getpwnam returns null or a pointer to a static record that we
    // read at once (tests start one server at a time: `shared` is behind a OnceLock).
    unsafe {
        if libc::geteuid() != 0 {
            return None;
        }
        let user = libc::getpwnam(c"postgres".as_ptr());
        assert!(
            !user.is_null(),
            "running as root, and there is no `postgres` user to run Postgres as (Postgres refuses root); \
             Debian's postgresql package creates it"
        );
        Some(RunAs { uid: (*user).pw_uid, gid: (*user).pw_gid })
    }
}

fn as_user(command: &mut Command, run_as: Option<RunAs>) {
    if let Some(user) = run_as {
        // std drops root's supplementary groups too when it changes the user.
        command.uid(user.uid).gid(user.gid).env("HOME", "/tmp").env("USER", "postgres").env("LOGNAME", "postgres");
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("cannot bind a loopback port");
    listener.local_addr().expect("a bound listener has an address").port()
}
