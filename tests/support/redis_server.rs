//! A real `redis-server` (Debian's package; `scripts/install-redis` installs it) on a free
//! port, without persistence (`--save '' --appendonly no`), stopped when dropped.
//!
//! A missing `redis-server` fails the test loudly, unless `COMPACTD_ALLOW_SKIP=1`: then
//! [`RedisServer::start`] prints why and answers `None` (the caller returns).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    dir: std::path::PathBuf,
    password: Option<String>,
}

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Whether `redis-server` answers `PING` on `port`.
fn pong(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    if s.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 64];
    // With --requirepass, PING answers NOAUTH: the server is up all the same.
    matches!(s.read(&mut buf), Ok(n) if buf[..n].starts_with(b"+PONG") || buf[..n].starts_with(b"-NOAUTH"))
}

impl RedisServer {
    /// Starts a server, or `None` when it is missing and skipping is allowed.
    pub fn start(test: &str) -> Option<RedisServer> {
        Self::start_with(test, None)
    }

    /// [`RedisServer::start`], requiring `password` (`--requirepass`) when given.
    pub fn start_with(test: &str, password: Option<&str>) -> Option<RedisServer> {
        if Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_err()
        {
            if std::env::var("COMPACTD_ALLOW_SKIP").as_deref() == Ok("1") {
                eprintln!(
                    "SKIPPED {test}: redis-server is not installed (run scripts/install-redis)"
                );
                return None;
            }
            panic!(
                "{test} needs redis-server: run scripts/install-redis (or set COMPACTD_ALLOW_SKIP=1 to skip)"
            );
        }
        let dir = std::env::temp_dir().join(format!(
            "compactd-redis-{}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        // A port taken between choosing and binding: try another.
        for _ in 0..5 {
            let port = free_port();
            let mut child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .args(password.map(|p| ["--requirepass", p]).into_iter().flatten())
                .arg("--dir")
                .arg(&dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server starts");
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(10) {
                if pong(port) {
                    return Some(RedisServer {
                        child: Some(child),
                        port,
                        dir,
                        password: password.map(str::to_string),
                    });
                }
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("redis-server did not start");
    }

    pub fn url(&self) -> String {
        match &self.password {
            Some(p) => format!("redis://:{p}@127.0.0.1:{}/0", self.port),
            None => format!("redis://127.0.0.1:{}/0", self.port),
        }
    }

    /// Stops the server (SIGKILL): Redis is gone, as in an outage.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
