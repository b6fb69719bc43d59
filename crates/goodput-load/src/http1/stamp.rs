//! Kernel receive timestamps (`SO_TIMESTAMPNS`, Linux): each read comes with
//! the time the kernel queued its last segment on the socket, so the
//! client's own scheduling delay between arrival and read stays out of the
//! measured times. On loopback that is the moment the server's write
//! delivered the bytes.

use std::time::Duration;

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

/// A time on the wall clock (`CLOCK_REALTIME`, the clock of the kernel's
/// stamps), in nanoseconds since the epoch: plain integers, so that taking
/// one from another costs a subtraction, a read.
pub type WallNs = i128;

fn ns(ts: &libc::timespec) -> WallNs {
    ts.tv_sec as WallNs * 1_000_000_000 + ts.tv_nsec as WallNs
}

/// The timestamp among the control messages of a `recvmsg`.
#[cfg(target_os = "linux")]
pub fn of(msg: &libc::msghdr) -> Option<WallNs> {
    let mut stamp = None;
    // SAFETY: the CMSG_* walk stays inside msg_controllen as the kernel set it.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                stamp = Some(ns(&ts));
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    stamp
}

#[cfg(not(target_os = "linux"))]
pub fn of(_: &libc::msghdr) -> Option<WallNs> {
    None
}

/// The wall clock now, on the kernel stamps' clock.
pub fn wall_now() -> WallNs {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a timespec to write into.
    if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) } == 0 {
        return ns(&ts);
    }
    // Not expected; the standard library's reading of the same clock.
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    since.as_nanos() as WallNs
}

/// How long before `wall` (the wall clock's time) the kernel's `stamp` was.
pub fn age(stamp: Option<WallNs>, wall: WallNs) -> Option<Duration> {
    let age = wall - stamp?;
    (0..MAX_AGE.as_nanos() as WallNs).contains(&age).then(|| Duration::from_nanos(age as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_age_is_the_walls_lead_on_the_stamp_and_none_when_the_clock_was_stepped() {
        let t = 1_700_000_000_123_456_789;
        assert_eq!(age(Some(t), t + 2_500_000), Some(Duration::from_micros(2500)));
        assert_eq!(age(Some(t), t), Some(Duration::ZERO));
        // A stamp after the wall clock (stepped back), or a second or more
        // before it (stepped forward): no age.
        assert_eq!(age(Some(t), t - 1), None);
        assert_eq!(age(Some(t), t + MAX_AGE.as_nanos() as WallNs), None);
        assert_eq!(age(None, t), None);
        // The wall clock agrees with the standard library's.
        let std_ns = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as WallNs;
        assert!((wall_now() - std_ns).abs() < 1_000_000_000);
    }
}
