//! SMTP servers: Debian's aiosmtpd, and one that misbehaves on purpose.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::*;

/// `[alert]` mailing oncall@example.com through a plain SMTP server on
/// loopback `port`, with `alert` (more `[alert]` keys) in it.
pub(crate) fn mail_to(port: u16, alert: &str) -> String {
    format!(
        "[alert]\nto = [\"oncall@example.com\"]\n{alert}\
         [alert.smtp]\nhost = \"127.0.0.1\"\nport = {port}\ntls = \"none\"\ntimeout = \"5s\"\n"
    )
}

/// A real SMTP server on loopback: Debian's aiosmtpd (its `SMTP` class and
/// `Mailbox` handler, as its command line builds them), serving on a
/// listener handed over as its standard input.
pub(crate) struct Smtpd {
    child: std::process::Child,
    pub port: u16,
    pub maildir: PathBuf,
    _port: Port,
}

/// aiosmtpd's command line with the options the tests use, serving on the
/// socket it is given as standard input (`aiosmtpd-on-stdin.py`, beside this file).
const AIOSMTPD: &str = include_str!("aiosmtpd-on-stdin.py");

impl Smtpd {
    /// `extra`: the options of [`AIOSMTPD`].
    pub(crate) fn aiosmtpd(maildir: &Path, extra: &[&str]) -> Self {
        Self::on(Port::listening(), maildir, extra)
    }

    /// On a port the test holds already (one that refused until now).
    pub(crate) fn on(port: Port, maildir: &Path, extra: &[&str]) -> Self {
        port.listen();
        let script = maildir.with_extension("py");
        std::fs::write(&script, AIOSMTPD).unwrap();
        let ready = maildir.with_extension("ready");
        let child = Command::new("/usr/bin/python3")
            .arg(&script)
            .args(extra)
            .arg("--ready")
            .arg(&ready)
            .arg(maildir)
            .stdin(port.stdin())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start aiosmtpd (python3-aiosmtpd)");
        // Implicit TLS greets only after the handshake: a connect must do.
        let greets = !extra.contains(&"--smtpscert");
        Self::ready(child, port, maildir, greets)
    }

    /// One that requires AUTH (login `alerts`, password `s3cret`).
    pub(crate) fn with_auth(maildir: &Path) -> Self {
        Self::aiosmtpd(maildir, &["--auth"])
    }

    fn ready(child: std::process::Child, held: Port, maildir: &Path, greets: bool) -> Self {
        let port = held.port;
        let s = Self {
            child,
            port,
            maildir: maildir.to_path_buf(),
            _port: held,
        };
        // Serving (the port accepts from the start: it is held), then,
        // unless TLS comes first, greeting.
        let ready = maildir.with_extension("ready");
        wait_for(
            Duration::from_secs(15),
            || ready.exists(),
            "aiosmtpd to serve",
        );
        wait_for(
            Duration::from_secs(15),
            || {
                use std::io::Read;
                let Ok(mut c) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
                    return false;
                };
                if !greets {
                    return true;
                }
                let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
                let mut buf = [0u8; 3];
                c.read_exact(&mut buf).is_ok() && &buf == b"220"
            },
            "aiosmtpd to greet",
        );
        s
    }

    /// Delivered mails, in arrival order.
    pub(crate) fn mails(&self) -> Vec<String> {
        mails_in(&self.maildir)
    }

    /// The subjects of the mails received, in the order they came.
    pub(crate) fn subjects(&self) -> Vec<String> {
        self.mails().iter().map(|m| subject(m)).collect()
    }
}

pub(crate) fn mails_in(maildir: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(maildir.join("new")) else {
        return Vec::new();
    };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = rd
        .flatten()
        .map(|e| (e.metadata().and_then(|m| m.modified()).unwrap(), e.path()))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|(_, p)| std::fs::read_to_string(p).unwrap())
        .collect()
}

/// The Subject header of a raw mail, unfolded and decoded enough to compare.
pub(crate) fn subject(mail: &str) -> String {
    let mut lines = mail.lines();
    let mut subject = String::new();
    while let Some(l) = lines.next() {
        if let Some(s) = l.strip_prefix("Subject: ") {
            subject.push_str(s);
            for cont in lines.by_ref() {
                if cont.starts_with([' ', '\t']) {
                    subject.push_str(cont);
                } else {
                    break;
                }
            }
            break;
        }
    }
    subject
}

impl Drop for Smtpd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A throwaway CA and a leaf for localhost/127.0.0.1 signed by it:
/// (dir, ca.pem, cert.pem, key.pem).
pub(crate) fn throwaway_tls() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sh = format!(
        "set -e; cd {d}
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj '/CN=kubelet-sentinel test CA' 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout key.pem -out leaf.csr -subj /CN=localhost 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\nbasicConstraints=CA:FALSE\\nextendedKeyUsage=serverAuth\\n' > ext.cnf
openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out cert.pem -days 2 -extfile ext.cnf 2>/dev/null",
        d = d.display()
    );
    let out = run(Command::new("sh").arg("-c").arg(sh), None);
    assert!(
        out.status.success(),
        "openssl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (ca, cert, key) = (d.join("ca.pem"), d.join("cert.pem"), d.join("key.pem"));
    (dir, ca, cert, key)
}

/// An SMTP server that misbehaves on purpose (Python's asyncio, no
/// packages): `slow` answers every command correctly but `delay` seconds
/// late; `endless` greets with a reply line that never ends; `hang` takes
/// the message and never answers it. Every message it took is counted in
/// `<dir>/received`.
pub(crate) struct BadSmtp {
    child: std::process::Child,
    pub port: u16,
    pub dir: PathBuf,
    held: Port,
}

impl BadSmtp {
    pub(crate) fn start(mode: &str, delay: f64, dir: &Path) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        let held = Port::listening();
        let port = held.port;
        let script = dir.join("bad_smtp.py");
        std::fs::write(
            &script,
            r#"import asyncio, os, sys
import socket
mode, delay, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
def received():
    with open(os.path.join(out, "received"), "a") as f:
        f.write("x\n")
async def serve(reader, writer):
    async def say(line):
        await asyncio.sleep(delay)
        writer.write(line.encode() + b"\r\n")
        await writer.drain()
    try:
        if mode == "endless":
            writer.write(b"220 ")
            chunk = b"x" * 65536
            while True:
                writer.write(chunk)
                await writer.drain()
        await say("220 bad.example ESMTP")
        while True:
            line = await reader.readline()
            if not line:
                return
            cmd = line.decode(errors="replace").strip().upper()
            if cmd.startswith("EHLO") or cmd.startswith("HELO"):
                await say("250 bad.example")
            elif cmd.startswith("DATA"):
                await say("354 go on")
                while True:
                    l = await reader.readline()
                    if not l or l in (b".\r\n", b".\n"):
                        break
                received()
                if mode == "hang":
                    await asyncio.sleep(3600)
                await say("250 ok")
            elif cmd.startswith("QUIT"):
                await say("221 bye")
                return
            else:
                await say("250 ok")
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()
async def main():
    server = await asyncio.start_server(serve, sock=socket.socket(fileno=0))
    open(os.path.join(out, "ready"), "w").close()
    async with server:
        await server.serve_forever()
asyncio.run(main())
"#,
        )
        .unwrap();
        let child = Command::new("/usr/bin/python3")
            .arg(&script)
            .args([mode, &delay.to_string()])
            .arg(dir)
            .stdin(held.stdin())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The port accepts from the start (it is held): serving is said.
        let ready = dir.join("ready");
        wait_for(
            Duration::from_secs(10),
            || ready.exists(),
            "the bad SMTP server",
        );
        Self {
            child,
            port,
            dir: dir.to_path_buf(),
            held,
        }
    }

    /// Stops it and gives back its port, still held (still listening:
    /// connections wait for the next server on it).
    pub(crate) fn stop(mut self) -> Port {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::mem::replace(&mut self.held, Port::closed())
    }

    /// Messages it took (delivered, whatever the client thinks).
    pub(crate) fn received(&self) -> usize {
        std::fs::read_to_string(self.dir.join("received")).map_or(0, |s| s.lines().count())
    }
}

impl Drop for BadSmtp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
