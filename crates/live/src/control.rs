//! The control socket of a live run: messages to schedulers (Vassal's
//! MessageToScheduler, HLS's HLSCtl: reserve, begin and end a time
//! constraint, warp on and off, join and leave a scheduler) and changes
//! of the hierarchy at run time (load, unload, detach, attach, move, and
//! plugin libraries whose policies may then be loaded), from `hsched ctl`, from a program through [`Client`], or from hsched's
//! own worker executing a `msg` operation.
//!
//! The protocol: a Unix stream socket, one JSON [`Request`] per line, one
//! JSON [`Response`] line back, in order, for as long as the client keeps
//! the connection.
//!
//! Who may say what: the socket lives in a directory only root may enter
//! and is the owner's alone (0600). The peer's credentials
//! (`SO_PEERCRED`) decide the rest ([`authorize`]): a managed process
//! speaks only for its own threads and may not change the hierarchy;
//! root outside the run (the operator) may do anything. A request that is
//! refused, malformed or names what does not exist gets an error reply and
//! changes nothing.

use hsched_core::{Duration, Params, Value};
use hsched_model::{ParentLink, SchedulerSpec};
use serde::{Deserialize, Serialize};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// Where agents put their sockets (`hsched-PID.sock`) unless told another
/// place.
pub const SOCKET_DIR: &str = "/run/hsched";

/// The longest request line accepted; a client that sends more is cut off.
const MAX_LINE: usize = 64 * 1024;

/// What a client asks.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "op")]
pub enum Request {
    /// Message `name(args)` to scheduler `to` (by default the thread's
    /// own), sent as thread `thread` (by default the caller's own thread
    /// when a managed process asks, else as the operator). `join` and
    /// `leave` move the sender (the dispatcher's own messages).
    Msg {
        #[serde(default)]
        thread: Option<String>,
        #[serde(default)]
        to: Option<String>,
        name: String,
        #[serde(default)]
        args: Params,
    },
    /// Move `thread` to scheduler `to` with attachment `params`.
    Move {
        thread: String,
        to: String,
        #[serde(default)]
        params: Params,
    },
    /// Create a scheduler instance and attach it.
    Load { scheduler: SchedulerSpec },
    /// Remove an instance (its threads go to the default scheduler).
    Unload { scheduler: String },
    /// Detach an instance from its parents.
    Detach { scheduler: String },
    /// Attach a detached instance.
    Attach {
        scheduler: String,
        parents: Vec<ParentLink>,
    },
    /// Load the plugin library at `path` (as the agent sees paths): its
    /// policies can be loaded from then on.
    Plugin { path: PathBuf },
    /// The managed threads and the schedulers, as text.
    Status,
}

impl Request {
    /// Whether only the operator may ask it (it changes the hierarchy, not
    /// one thread's own treatment).
    fn operator_only(&self) -> bool {
        matches!(
            self,
            Request::Move { .. }
                | Request::Load { .. }
                | Request::Unload { .. }
                | Request::Detach { .. }
                | Request::Attach { .. }
                | Request::Plugin { .. }
        )
    }
}

/// The answer: accepted (with what the scheduler replied) or refused.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub ok: bool,
    /// What was done, or why not.
    pub text: String,
    /// A scheduler's reply values (the reservation granted, say).
    #[serde(default, skip_serializing_if = "Params::is_empty")]
    pub reply: Params,
}

impl Response {
    pub fn refused(why: impl Into<String>) -> Response {
        Response {
            ok: false,
            text: why.into(),
            reply: Params::new(),
        }
    }
}

/// Who is at the other end of a connection (`SO_PEERCRED`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peer {
    pub pid: i32,
    pub uid: u32,
}

impl Peer {
    fn of(stream: &UnixStream) -> io::Result<Peer> {
        let mut cred = libc::ucred {
            pid: 0,
            uid: 0,
            gid: 0,
        };
        let mut len = size_of::<libc::ucred>() as libc::socklen_t;
        // SAFETY: `cred` and `len` are valid for the sizes given.
        let r = unsafe {
            libc::getsockopt(
                stream.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_PEERCRED,
                (&mut cred as *mut libc::ucred).cast(),
                &mut len,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Peer {
            pid: cred.pid,
            uid: cred.uid,
        })
    }
}

/// On whose behalf a request is made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Speaker {
    /// Root outside the run: may do anything.
    Operator,
    /// A managed thread, by name: may message on its own behalf only.
    Thread(String),
}

/// Decides who `peer` speaks as for `req`. `managed` lists the managed
/// threads as (name, process id). Managed processes speak for their own
/// threads only and do not change the hierarchy; other callers must be
/// root.
pub fn authorize(peer: &Peer, managed: &[(String, i32)], req: &Request) -> Result<Speaker, String> {
    let own: Vec<&str> = managed
        .iter()
        .filter(|(_, pid)| *pid == peer.pid)
        .map(|(n, _)| n.as_str())
        .collect();
    if own.is_empty() {
        if peer.uid != 0 {
            return Err(format!(
                "uid {} may not control this run (only root, or a managed thread for itself)",
                peer.uid
            ));
        }
        return Ok(match req {
            Request::Msg {
                thread: Some(t), ..
            } => Speaker::Thread(t.clone()),
            _ => Speaker::Operator,
        });
    }
    if req.operator_only() {
        return Err("a managed thread may not change the hierarchy (only the operator may)".into());
    }
    match req {
        Request::Msg {
            thread: Some(t), ..
        } if !own.contains(&t.as_str()) => Err(format!(
            "process {} may speak only for its own threads ({}), not `{t}`",
            peer.pid,
            own.join(", ")
        )),
        Request::Msg {
            thread: Some(t), ..
        } => Ok(Speaker::Thread(t.clone())),
        _ => Ok(Speaker::Thread(own[0].to_string())),
    }
}

/// The most clients connected at once, and from one process: one more is
/// told so and closed (so that one process holding many leaves room for
/// the others).
pub const MAX_CONNECTIONS: usize = 256;
pub const MAX_CONNECTIONS_PER_PROCESS: usize = 16;
/// Replies a client has not read, at most: beyond, it is cut off.
const MAX_UNREAD: usize = 1 << 20;
/// Unread replies beyond which a client's further requests wait.
const REPLY_ROOM: usize = 64 * 1024;
/// Requests answered per client in one turn of the agent's loop: the
/// rest wait for the next, so that no client holds the loop.
const PER_TURN: usize = 64;

/// A connected client: what it has sent that is not yet answered and the
/// replies it has not read yet.
struct Connection {
    id: u64,
    stream: UnixStream,
    peer: Peer,
    pending: Vec<u8>,
    out: Vec<u8>,
    /// An answer is deferred ([`ControlSocket::complete`]): its later
    /// requests wait, so that replies stay in order.
    waiting: bool,
}

impl Connection {
    /// Whether it is to be read now: not while its replies are unread or
    /// an answer is deferred (what it sends meanwhile waits in the kernel).
    fn reading(&self) -> bool {
        !self.waiting && self.out.is_empty() && self.pending.len() <= MAX_LINE
    }

    /// Reads what the client has sent; `false` once it has closed or
    /// failed.
    fn fill(&mut self) -> bool {
        let mut buf = [0u8; 4096];
        while self.reading() {
            match self.stream.read(&mut buf) {
                Ok(0) => return false,
                Ok(n) => self.pending.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        true
    }

    fn queue(&mut self, response: &Response) {
        if let Ok(line) = serde_json::to_vec(response) {
            self.out.extend_from_slice(&line);
            self.out.push(b'\n');
        }
    }

    /// Writes what it can of the replies without waiting; `false` if the
    /// connection failed or holds more unread than `MAX_UNREAD`.
    fn flush(&mut self) -> bool {
        while !self.out.is_empty() {
            match self.stream.write(&self.out) {
                Ok(0) => return false,
                Ok(n) => {
                    self.out.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        self.out.len() <= MAX_UNREAD
    }

    /// Whether a whole request waits to be answered.
    fn has_request(&self) -> bool {
        !self.waiting && self.pending.contains(&b'\n')
    }
}

/// The listening socket and its connections; removed when dropped. Never
/// waits on a client: every socket is non-blocking, each client's unread
/// replies are bounded, and so are the clients.
pub struct ControlSocket {
    listener: UnixListener,
    path: PathBuf,
    connections: Vec<Connection>,
    next_id: u64,
    /// Work left from the last turn: replies not written, requests not
    /// answered.
    backlog: bool,
}

impl ControlSocket {
    /// Listens at `path` (its directory made root's only, a stale socket
    /// there replaced), mode 0600.
    pub fn bind(path: &Path) -> io::Result<ControlSocket> {
        let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.exists() {
                std::fs::create_dir_all(dir).map_err(named)?;
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                    .map_err(named)?;
            }
        }
        if path.exists() {
            if UnixStream::connect(path).is_ok() {
                return Err(named(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    "another agent is listening there",
                )));
            }
            std::fs::remove_file(path).map_err(named)?;
        }
        let listener = UnixListener::bind(path).map_err(named)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(named)?;
        listener.set_nonblocking(true)?;
        Ok(ControlSocket {
            listener,
            path: path.to_path_buf(),
            connections: Vec::new(),
            next_id: 0,
            backlog: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The descriptors to wait on: the listener and every connection being
    /// read.
    pub fn fds(&self) -> impl Iterator<Item = RawFd> + '_ {
        std::iter::once(self.listener.as_raw_fd()).chain(
            self.connections
                .iter()
                .filter(|c| c.reading())
                .map(|c| c.stream.as_raw_fd()),
        )
    }

    /// Whether [`ControlSocket::serve`] has work left without any
    /// descriptor becoming ready: replies not yet written (a client slow
    /// to read), requests beyond `PER_TURN`.
    pub fn backlog(&self) -> bool {
        self.backlog
    }

    /// Accepts new connections, answers every whole request line with
    /// `answer(peer, connection, request)` (at most `PER_TURN` per
    /// client), and writes what it can of the replies. `answer` may defer
    /// its reply (`None`): it comes with [`ControlSocket::complete`]. A
    /// malformed line gets an error reply; a connection that closes, errs,
    /// sends an endless line or leaves more than `MAX_UNREAD` of replies
    /// unread is dropped.
    pub fn serve(&mut self, mut answer: impl FnMut(&Peer, u64, Request) -> Option<Response>) {
        while let Ok((mut stream, _)) = self.listener.accept() {
            if stream.set_nonblocking(true).is_err() {
                continue;
            }
            let Ok(peer) = Peer::of(&stream) else {
                continue;
            };
            let same = self
                .connections
                .iter()
                .filter(|c| c.peer.pid == peer.pid)
                .count();
            if self.connections.len() >= MAX_CONNECTIONS || same >= MAX_CONNECTIONS_PER_PROCESS {
                let mut line = serde_json::to_vec(&Response::refused(format!(
                    "too many connections (at most {MAX_CONNECTIONS} at once, {MAX_CONNECTIONS_PER_PROCESS} from one process)"
                )))
                .unwrap_or_default();
                line.push(b'\n');
                let _ = stream.write(&line);
                continue;
            }
            self.next_id += 1;
            self.connections.push(Connection {
                id: self.next_id,
                stream,
                peer,
                pending: Vec::new(),
                out: Vec::new(),
                waiting: false,
            });
        }
        let mut backlog = false;
        self.connections.retain_mut(|c| {
            let open = c.fill();
            let mut answered = 0;
            // Not while its replies wait unread beyond a little: a client
            // that does not read is not answered further.
            while answered < PER_TURN && c.out.len() < REPLY_ROOM && c.has_request() {
                let end = c.pending.iter().position(|&b| b == b'\n').expect("has one");
                let line: Vec<u8> = c.pending.drain(..=end).collect();
                answered += 1;
                match serde_json::from_slice::<Request>(&line) {
                    Ok(req) => match answer(&c.peer, c.id, req) {
                        Some(response) => c.queue(&response),
                        None => c.waiting = true,
                    },
                    Err(e) => c.queue(&Response::refused(format!("malformed request: {e}"))),
                }
            }
            if !c.flush() {
                return false;
            }
            if !c.has_request() && c.pending.len() > MAX_LINE {
                c.queue(&Response::refused(format!(
                    "request longer than {MAX_LINE} bytes"
                )));
                let _ = c.flush();
                return false;
            }
            backlog |= !c.out.is_empty() || c.has_request();
            open || c.waiting
        });
        self.backlog = backlog;
    }

    /// The deferred answer to connection `id`'s request (see
    /// [`ControlSocket::serve`]); the client's later requests are answered
    /// at the next serve. Nothing if the client is gone.
    pub fn complete(&mut self, id: u64, response: &Response) {
        if let Some(c) = self.connections.iter_mut().find(|c| c.id == id) {
            c.waiting = false;
            c.queue(response);
            self.backlog = true;
        }
    }
}

impl Drop for ControlSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The socket of the one agent running, when there is exactly one.
pub fn find_socket() -> Result<PathBuf, String> {
    let found: Vec<PathBuf> = std::fs::read_dir(SOCKET_DIR)
        .map_err(|e| format!("no live run to control ({SOCKET_DIR}: {e})"))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "sock"))
        .filter(|p| UnixStream::connect(p).is_ok())
        .collect();
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(format!(
            "no live run to control (no socket in {SOCKET_DIR})"
        )),
        many => Err(format!(
            "{} live runs; name one with --socket ({})",
            many.len(),
            many.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// A program's connection to the agent that schedules it: ask for a
/// reservation, a time constraint, a warp, a move, for itself.
pub struct Client {
    reader: BufReader<UnixStream>,
}

impl Client {
    /// Connects to the agent listening at `path`.
    pub fn connect(path: &Path) -> io::Result<Client> {
        Ok(Client {
            reader: BufReader::new(UnixStream::connect(path)?),
        })
    }

    /// Sends `req`, waits for its answer.
    pub fn request(&mut self, req: &Request) -> io::Result<Response> {
        let mut line = serde_json::to_vec(req).map_err(io::Error::other)?;
        line.push(b'\n');
        self.reader.get_mut().write_all(&line)?;
        let mut answer = String::new();
        if self.reader.read_line(&mut answer)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the agent closed the connection",
            ));
        }
        serde_json::from_str(&answer).map_err(io::Error::other)
    }

    /// Message `name(args)` to the caller's own scheduler, for itself.
    pub fn message(&mut self, name: &str, args: Params) -> io::Result<Response> {
        self.request(&Request::Msg {
            thread: None,
            to: None,
            name: name.into(),
            args,
        })
    }

    /// Asks the caller's scheduler for `amount` of CPU every `period`.
    pub fn reserve(&mut self, amount: Duration, period: Duration) -> io::Result<Response> {
        self.message(
            "reserve",
            Params::new()
                .with("amount", Value::Duration(amount))
                .with("period", Value::Duration(period)),
        )
    }

    /// Asks for a time constraint: `estimate` of CPU between `start` and
    /// `deadline`, both from now.
    pub fn begin_constraint(
        &mut self,
        start: Duration,
        estimate: Duration,
        deadline: Duration,
    ) -> io::Result<Response> {
        self.message(
            "begin_constraint",
            Params::new()
                .with("start", Value::Duration(start))
                .with("estimate", Value::Duration(estimate))
                .with("deadline", Value::Duration(deadline))
                .with("relative", Value::Bool(true)),
        )
    }

    /// Ends the time constraint in progress.
    pub fn end_constraint(&mut self) -> io::Result<Response> {
        self.message("end_constraint", Params::new())
    }

    /// Turns the caller's BVT warp on or off.
    pub fn warp(&mut self, on: bool) -> io::Result<Response> {
        self.message("warp", Params::new().with("on", Value::Bool(on)))
    }

    /// Moves the caller under scheduler `to` with attachment `params`.
    pub fn join(&mut self, to: &str, params: Params) -> io::Result<Response> {
        self.request(&Request::Msg {
            thread: None,
            to: Some(to.into()),
            name: "join".into(),
            args: params,
        })
    }

    /// Moves the caller back to the default scheduler.
    pub fn leave(&mut self) -> io::Result<Response> {
        self.message("leave", Params::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn managed() -> Vec<(String, i32)> {
        vec![("video".into(), 100), ("audio".into(), 200)]
    }

    fn msg(thread: Option<&str>) -> Request {
        Request::Msg {
            thread: thread.map(str::to_string),
            to: None,
            name: "reserve".into(),
            args: Params::new(),
        }
    }

    #[test]
    fn a_managed_process_speaks_for_itself_only() {
        let video = Peer { pid: 100, uid: 0 };
        assert_eq!(
            authorize(&video, &managed(), &msg(None)),
            Ok(Speaker::Thread("video".into()))
        );
        assert_eq!(
            authorize(&video, &managed(), &msg(Some("video"))),
            Ok(Speaker::Thread("video".into()))
        );
        let err = authorize(&video, &managed(), &msg(Some("audio"))).unwrap_err();
        assert!(err.contains("only for its own threads"), "{err}");
        let unload = Request::Unload {
            scheduler: "res".into(),
        };
        assert!(authorize(&video, &managed(), &unload).is_err());
    }

    #[test]
    fn the_operator_may_do_anything_and_others_nothing() {
        let root = Peer { pid: 7, uid: 0 };
        let unload = Request::Unload {
            scheduler: "res".into(),
        };
        assert_eq!(authorize(&root, &managed(), &unload), Ok(Speaker::Operator));
        assert_eq!(
            authorize(&root, &managed(), &msg(Some("audio"))),
            Ok(Speaker::Thread("audio".into()))
        );
        let user = Peer { pid: 7, uid: 1000 };
        assert!(authorize(&user, &managed(), &Request::Status).is_err());
    }

    #[test]
    fn requests_read_as_documented() {
        let req: Request = serde_json::from_str(
            r#"{"op":"msg","to":"res","name":"reserve","args":[["amount","8ms"],["period","20ms"]]}"#,
        )
        .unwrap();
        let Request::Msg {
            thread, to, args, ..
        } = req
        else {
            panic!("{req:?}")
        };
        assert_eq!((thread, to.as_deref()), (None, Some("res")));
        assert_eq!(args.get("amount"), Some(&Value::Str("8ms".into())));
        assert!(serde_json::from_str::<Request>(r#"{"op":"explode"}"#).is_err());
    }

    #[test]
    fn a_socket_answers_lines_and_refuses_garbage() {
        let dir = std::env::temp_dir().join(format!("hsched-ctl-test-{}", std::process::id()));
        let path = dir.join("a.sock");
        let mut socket = ControlSocket::bind(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let mut raw = UnixStream::connect(&path).unwrap();
        raw.write_all(b"{\"op\":\"status\"}\nnot json\n").unwrap();
        let mut client = Client::connect(&path).unwrap();
        let serve = |socket: &mut ControlSocket| {
            socket.serve(|peer, _, req| {
                Some(Response {
                    ok: true,
                    text: format!("{} {:?}", peer.pid, req),
                    reply: Params::new(),
                })
            })
        };
        let asker = std::thread::spawn(move || client.request(&Request::Status));
        for _ in 0..200 {
            serve(&mut socket);
            if asker.is_finished() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let answer = asker.join().unwrap().unwrap();
        assert!(answer.ok && answer.text.contains("Status"), "{answer:?}");
        assert!(answer.text.starts_with(&std::process::id().to_string()));
        let mut lines = BufReader::new(raw.try_clone().unwrap()).lines();
        assert!(lines.next().unwrap().unwrap().contains("\"ok\":true"));
        let garbage: Response = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        assert!(
            !garbage.ok && garbage.text.contains("malformed"),
            "{garbage:?}"
        );
        drop(socket);
        assert!(!path.exists(), "the socket is removed with the agent");
        let _ = std::fs::remove_dir(&dir);
    }

    #[test]
    fn a_client_that_never_reads_holds_nothing_up() {
        let dir = std::env::temp_dir().join(format!("hsched-ctl-flood-{}", std::process::id()));
        let path = dir.join("a.sock");
        let mut socket = ControlSocket::bind(&path).unwrap();
        let streams: Vec<UnixStream> = (0..MAX_CONNECTIONS_PER_PROCESS + 4)
            .map(|_| UnixStream::connect(&path).unwrap())
            .collect();
        // The first sends thousands of requests and reads nothing.
        let mut flood = &streams[0];
        flood.set_nonblocking(true).unwrap();
        let _ = flood.write(&b"{\"op\":\"status\"}\n".repeat(4096));
        let mut answered = 0;
        for _ in 0..50 {
            let turn = std::time::Instant::now();
            socket.serve(|_, _, _| {
                answered += 1;
                Some(Response::refused("x".repeat(10_000)))
            });
            assert!(
                turn.elapsed() < std::time::Duration::from_millis(200),
                "{:?}",
                turn.elapsed()
            );
        }
        assert!(socket.backlog(), "replies wait for the client");
        // Answered only as far as it reads: what the socket holds, and one
        // turn's share.
        assert!(answered < 4096 / 2, "answered {answered} of 4096 unread");
        assert!(socket.connections.iter().all(|c| c.out.len() <= MAX_UNREAD));
        assert_eq!(socket.connections.len(), MAX_CONNECTIONS_PER_PROCESS);
        let mut refused = String::new();
        BufReader::new(&streams[MAX_CONNECTIONS_PER_PROCESS])
            .read_line(&mut refused)
            .unwrap();
        assert!(refused.contains("too many connections"), "{refused}");
        drop(socket);
        let _ = std::fs::remove_dir(&dir);
    }
}
