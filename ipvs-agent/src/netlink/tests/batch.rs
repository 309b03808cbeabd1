//! Many requests in one buffer and their answers matched by sequence number,
//! plus the reply parser's handling of foreign, no-op and overrun messages.

use super::super::{
    parse_replies, Batch, DestSpec, IpvsCmd, IpvsError, IpvsMessage, ReplyBody, SentRequest, WireError,
};
use super::dest_requests::{DEL_DEST_FWMARK, NEW_DEST_FWMARK};
use super::service_requests::{fwmark_key, DEL_SERVICE_FWMARK};
use super::{replies, FAMILY};

#[test]
fn batch_is_the_requests_back_to_back_with_consecutive_sequence_numbers() {
    let dest: std::net::IpAddr = "10.244.1.11".parse().unwrap();
    let mut batch = Batch::new(FAMILY, 15);
    assert!(batch.is_empty());
    assert_eq!(
        batch.push(IpvsMessage::new_dest(
            &fwmark_key(),
            &DestSpec::masquerade(dest, 8443, 1)
        )),
        15
    );
    assert_eq!(batch.push(IpvsMessage::del_dest(&fwmark_key(), dest, 8443)), 16);
    assert_eq!(batch.push(IpvsMessage::del_service(&fwmark_key())), 17);
    assert_eq!((batch.len(), batch.next_seq()), (3, 18));
    assert_eq!(
        batch.requests(),
        &[
            SentRequest {
                seq: 15,
                cmd: IpvsCmd::NewDest,
                dump: false
            },
            SentRequest {
                seq: 16,
                cmd: IpvsCmd::DelDest,
                dump: false
            },
            SentRequest {
                seq: 17,
                cmd: IpvsCmd::DelService,
                dump: false
            },
        ]
    );
    let (bytes, requests) = batch.into_parts();
    assert_eq!(
        bytes,
        [&NEW_DEST_FWMARK[..], &DEL_DEST_FWMARK, &DEL_SERVICE_FWMARK].concat()
    );
    assert_eq!(requests.len(), 3);
}

#[test]
fn sequence_numbers_wrap() {
    let mut batch = Batch::new(FAMILY, u32::MAX);
    assert_eq!(batch.push(IpvsMessage::flush()), u32::MAX);
    assert_eq!(batch.push(IpvsMessage::get_services_dump()), 0);
    assert!(batch.requests()[1].dump);
}

/// The kernel's answers to the batch above: ACK, ENOENT (echoing the whole
/// DEL_DEST), ACK.
#[rustfmt::skip]
fn batch_answers() -> Vec<u8> {
    [
        &[
            0x24, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x01,  // nlmsghdr len 36, NLMSG_ERROR, CAPPED
            0x0f, 0x00, 0x00, 0x00, 0xe1, 0x10, 0x00, 0x00,  //   seq 15, pid 4321
            0x00, 0x00, 0x00, 0x00,  // 0: ACK
            0x70, 0x00, 0x00, 0x00, 0x25, 0x00, 0x05, 0x00,  // echoed header of the NEW_DEST
            0x0f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x64, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,  // nlmsghdr len 100, NLMSG_ERROR
            0x10, 0x00, 0x00, 0x00, 0xe1, 0x10, 0x00, 0x00,  //   seq 16, pid 4321
            0xfe, 0xff, 0xff, 0xff,  // -2 (ENOENT), then the whole DEL_DEST
        ][..],
        &DEL_DEST_FWMARK,
        &[
            0x24, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x01,  // nlmsghdr len 36, NLMSG_ERROR, CAPPED
            0x11, 0x00, 0x00, 0x00, 0xe1, 0x10, 0x00, 0x00,  //   seq 17, pid 4321
            0x00, 0x00, 0x00, 0x00,  // 0: ACK
            0x28, 0x00, 0x00, 0x00, 0x25, 0x00, 0x05, 0x00,  // echoed header of the DEL_SERVICE
            0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        ],
    ]
    .concat()
}

#[test]
fn answers_match_requests_by_sequence_number() {
    let answers = replies(&batch_answers());
    let by_seq: Vec<_> = answers
        .iter()
        .map(|answer| (answer.seq, answer.body.clone(), answer.is_final()))
        .collect();
    assert_eq!(
        by_seq,
        vec![
            (15, Ok(ReplyBody::Ack), true),
            (
                16,
                Err(IpvsError::NoSuchDestination {
                    cmd: Some(IpvsCmd::DelDest)
                }),
                true
            ),
            (17, Ok(ReplyBody::Ack), true),
        ]
    );
}

#[test]
fn noop_is_skipped_and_foreign_and_overrun_messages_are_errors() {
    #[rustfmt::skip]
    let buf: [u8; 56] = [
        0x10, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,  // nlmsghdr len 16, NLMSG_NOOP
        0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x14, 0x00, 0x00, 0x00, 0x26, 0x00, 0x00, 0x00,  // nlmsghdr len 20, type 0x26: not IPVS
        0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //   seq 2
        0x01, 0x01, 0x00, 0x00,
        0x14, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00,  // nlmsghdr len 20, NLMSG_OVERRUN
        0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //   seq 3
        0x00, 0x00, 0x00, 0x00,
    ];
    let answers: Vec<_> = parse_replies(&buf, FAMILY).collect();
    assert_eq!(
        answers,
        vec![
            Err(WireError::UnexpectedMessageType {
                seq: 2,
                message_type: 0x26,
                family_id: FAMILY
            }),
            Err(WireError::Overrun { seq: 3 }),
        ]
    );
}

#[test]
fn a_bad_body_is_reported_and_parsing_goes_on() {
    #[rustfmt::skip]
    let buf: [u8; 44] = [
        0x18, 0x00, 0x00, 0x00, 0x25, 0x00, 0x00, 0x00,  // nlmsghdr len 24, IPVS
        0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //   seq 5
        0x63, 0x01, 0x00, 0x00,  // genlmsghdr cmd 99: no such IPVS command
        0x04, 0x00, 0x01, 0x00,  // an empty attribute
        0x14, 0x00, 0x00, 0x00, 0x03, 0x00, 0x02, 0x00,  // nlmsghdr len 20, NLMSG_DONE
        0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //   seq 5
        0x00, 0x00, 0x00, 0x00,
    ];
    let answers: Vec<_> = parse_replies(&buf, FAMILY).collect();
    assert!(matches!(&answers[0], Err(WireError::Malformed(text)) if text.contains("unknown IPVS command 99")));
    assert_eq!(
        answers[1].as_ref().map(|answer| answer.body.clone()),
        Ok(Ok(ReplyBody::Done))
    );
}
