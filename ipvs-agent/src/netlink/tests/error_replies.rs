//! Goldens for refusals: an `NLMSG_ERROR` for each errno the IPVS family
//! answers with, read into typed errors. An uncapped error echoes the whole
//! request (so the refused command is known); a capped one (`NLM_F_CAPPED`,
//! a socket with `NETLINK_CAP_ACK`) echoes only its netlink header.

use super::super::{IpvsCmd, IpvsError, Reply};
use super::config_requests::FLUSH;
use super::dest_requests::{DEL_DEST_FWMARK, NEW_DEST_FWMARK};
use super::replies;
use super::service_requests::{DEL_SERVICE_FWMARK, NEW_SERVICE_FWMARK};

/// A hand-written `nlmsghdr` + error code followed by the echoed request.
fn error_reply(header_and_code: [u8; 20], echoed: &[u8]) -> Vec<u8> {
    [&header_and_code[..], echoed].concat()
}

/// The single answer in `buf`, which must be a refusal of request `seq`.
fn refusal(buf: &[u8], seq: u32) -> IpvsError {
    match &replies(buf)[..] {
        [Reply {
            seq: got,
            body: Err(error),
        }] if *got == seq => error.clone(),
        other => panic!("expected one refusal of seq {seq}, got {other:?}"),
    }
}

#[test]
fn eexist_new_service() {
    #[rustfmt::skip]
    let golden = error_reply([
        0x60, 0x00, 0x00, 0x00,  // nlmsghdr len 96 (20 + the 76-byte request)
        0x02, 0x00, 0x00, 0x00,  //   NLMSG_ERROR, no flags: the request is echoed whole
        0x06, 0x00, 0x00, 0x00,  //   seq 6
        0xe1, 0x10, 0x00, 0x00,  //   pid 4321
        0xef, 0xff, 0xff, 0xff,  // error -17 (EEXIST)
    ], &NEW_SERVICE_FWMARK);
    let error = refusal(&golden, 6);
    assert_eq!(
        error,
        IpvsError::AlreadyExists {
            cmd: Some(IpvsCmd::NewService)
        }
    );
    assert_eq!(
        error.to_string(),
        "add virtual server: it already exists (EEXIST); edit it instead of adding it"
    );
}

#[test]
fn esrch_del_service() {
    #[rustfmt::skip]
    let golden = error_reply([
        0x3c, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,  // nlmsghdr len 60, NLMSG_ERROR
        0x11, 0x00, 0x00, 0x00, 0xe1, 0x10, 0x00, 0x00,  //   seq 17, pid 4321
        0xfd, 0xff, 0xff, 0xff,  // error -3 (ESRCH)
    ], &DEL_SERVICE_FWMARK);
    let error = refusal(&golden, 17);
    assert_eq!(
        error,
        IpvsError::NoSuchService {
            cmd: Some(IpvsCmd::DelService)
        }
    );
    assert_eq!(
        error.to_string(),
        "delete virtual server: no such virtual server (ESRCH)"
    );
}

#[test]
fn enoent_del_dest_is_a_missing_real_server() {
    #[rustfmt::skip]
    let golden = error_reply([
        0x64, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,  // nlmsghdr len 100, NLMSG_ERROR
        0x10, 0x00, 0x00, 0x00, 0xe1, 0x10, 0x00, 0x00,  //   seq 16, pid 4321
        0xfe, 0xff, 0xff, 0xff,  // error -2 (ENOENT)
    ], &DEL_DEST_FWMARK);
    assert_eq!(
        refusal(&golden, 16),
        IpvsError::NoSuchDestination {
            cmd: Some(IpvsCmd::DelDest)
        }
    );
}

#[test]
fn enoent_new_service_is_a_missing_scheduler() {
    #[rustfmt::skip]
    let golden = error_reply([
        0x60, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,  // nlmsghdr len 96, NLMSG_ERROR
        0x06, 0x00, 0x00, 0x00, 0xe1, 0x10, 0x00, 0x00,  //   seq 6, pid 4321
        0xfe, 0xff, 0xff, 0xff,  // error -2 (ENOENT)
    ], &NEW_SERVICE_FWMARK);
    let error = refusal(&golden, 6);
    assert_eq!(
        error,
        IpvsError::SchedulerNotFound {
            cmd: Some(IpvsCmd::NewService)
        }
    );
    assert!(error.to_string().contains("load its kernel module"), "{error}");
}

#[test]
fn erange_new_dest() {
    #[rustfmt::skip]
    let golden = error_reply([
        0x84, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,  // nlmsghdr len 132, NLMSG_ERROR
        0x0f, 0x00, 0x00, 0x00, 0xe1, 0x10, 0x00, 0x00,  //   seq 15, pid 4321
        0xde, 0xff, 0xff, 0xff,  // error -34 (ERANGE)
    ], &NEW_DEST_FWMARK);
    assert_eq!(
        refusal(&golden, 15),
        IpvsError::OutOfRange {
            cmd: Some(IpvsCmd::NewDest)
        }
    );
}

#[test]
fn einval_new_dest() {
    #[rustfmt::skip]
    let golden = error_reply([
        0x84, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,  // nlmsghdr len 132, NLMSG_ERROR
        0x0f, 0x00, 0x00, 0x00, 0xe1, 0x10, 0x00, 0x00,  //   seq 15, pid 4321
        0xea, 0xff, 0xff, 0xff,  // error -22 (EINVAL)
    ], &NEW_DEST_FWMARK);
    let error = refusal(&golden, 15);
    assert_eq!(
        error,
        IpvsError::InvalidArgument {
            cmd: Some(IpvsCmd::NewDest)
        }
    );
    assert!(error.to_string().contains("not routable"), "{error}");
}

#[test]
fn eafnosupport_capped() {
    #[rustfmt::skip]
    let golden: [u8; 36] = [
        0x24, 0x00, 0x00, 0x00,  // nlmsghdr len 36
        0x02, 0x00,              //   NLMSG_ERROR
        0x00, 0x01,              //   flags CAPPED: only the request's header is echoed
        0x0c, 0x00, 0x00, 0x00,  //   seq 12
        0xe1, 0x10, 0x00, 0x00,  //   pid 4321
        0x9f, 0xff, 0xff, 0xff,  // error -97 (EAFNOSUPPORT)
        0x8c, 0x00, 0x00, 0x00, 0x25, 0x00, 0x05, 0x00,  // echoed nlmsghdr of the SET_DEST
        0x0c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];
    assert_eq!(refusal(&golden, 12), IpvsError::AddressFamilyNotSupported { cmd: None });
}

#[test]
fn eperm_capped() {
    #[rustfmt::skip]
    let golden: [u8; 36] = [
        0x24, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x01,  // nlmsghdr len 36, NLMSG_ERROR, CAPPED
        0x15, 0x00, 0x00, 0x00, 0xe1, 0x10, 0x00, 0x00,  //   seq 21, pid 4321
        0xff, 0xff, 0xff, 0xff,  // error -1 (EPERM)
        0x14, 0x00, 0x00, 0x00, 0x25, 0x00, 0x05, 0x00,  // echoed nlmsghdr of the FLUSH
        0x15, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];
    let error = refusal(&golden, 21);
    assert_eq!(error, IpvsError::PermissionDenied { cmd: None });
    assert_eq!(
        error.to_string(),
        "IPVS request: permission denied (EPERM): programming IPVS needs CAP_NET_ADMIN; run as root"
    );
}

#[test]
fn other_errno() {
    #[rustfmt::skip]
    let golden = error_reply([
        0x28, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,  // nlmsghdr len 40, NLMSG_ERROR
        0x15, 0x00, 0x00, 0x00, 0xe1, 0x10, 0x00, 0x00,  //   seq 21, pid 4321
        0xf0, 0xff, 0xff, 0xff,  // error -16 (EBUSY)
    ], &FLUSH);
    let error = refusal(&golden, 21);
    assert_eq!(
        error,
        IpvsError::Other {
            cmd: Some(IpvsCmd::Flush),
            errno: 16
        }
    );
    assert_eq!(error.errno(), 16);
}

#[test]
fn failed_dump_ends_with_an_error_status() {
    #[rustfmt::skip]
    let golden: [u8; 20] = [
        0x14, 0x00, 0x00, 0x00, 0x03, 0x00, 0x02, 0x00,  // nlmsghdr len 20, NLMSG_DONE, MULTI
        0x0e, 0x00, 0x00, 0x00, 0xe1, 0x10, 0x00, 0x00,  //   seq 14, pid 4321
        0xfd, 0xff, 0xff, 0xff,  // status -3 (ESRCH)
    ];
    assert_eq!(refusal(&golden, 14), IpvsError::NoSuchService { cmd: None });
}
