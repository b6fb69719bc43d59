//! Kernel receive timestamps (`SO_TIMESTAMPNS`, Linux): each read comes with
//! the time the kernel queued its last segment on the socket, so the
//! client's own scheduling delay between arrival and read stays out of the
//! measured times. On loopback that is the moment the server's write
//! delivered the bytes.

use std::time::{Duration, SystemTime};

/// An age beyond this means the wall clock was stepped: no lag is taken
/// from it, and the read time is kept.
const MAX_AGE: Duration = Duration::from_secs(1);

#[cfg(target_os = "linux")]
pub fn enable(sock: &tokio::net::TcpStream) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: a valid socket descriptor and an int option of the right size.
    let r = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The timestamp among the control messages of a `recvmsg`.
#[cfg(target_os = "linux")]
pub fn of(msg: &libc::msghdr) -> Option<SystemTime> {
    let mut stamp = None;
    // SAFETY: the CMSG_* walk stays inside msg_controllen as the kernel set it.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                stamp = Some(SystemTime::UNIX_EPOCH + Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32));
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    stamp
}

#[cfg(not(target_os = "linux"))]
pub fn of(_: &libc::msghdr) -> Option<SystemTime> {
    None
}

/// How long before `wall` (the wall clock's time) the kernel's `stamp` was.
pub fn age(stamp: Option<SystemTime>, wall: SystemTime) -> Option<Duration> {
    stamp.and_then(|k| wall.duration_since(k).ok()).filter(|a| *a < MAX_AGE)
}
