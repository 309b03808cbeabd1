//! The kernel's answers: ACKs and refusals by sequence number, the
//! extended ACK's message, and what becomes of a batch.

use crate::nftables::{outcome, parse_answers, Answer, NftWireError, Operation, SentRequest};

/// An `NLMSG_ERROR` for `seq` with `errno` (negative on the wire), capped
/// (only the request's header echoed), with an extended-ACK message when
/// given.
fn error(seq: u32, errno: i32, message: Option<&str>) -> Vec<u8> {
    let mut tlvs = Vec::new();
    if let Some(text) = message {
        let len = 4 + text.len() + 1;
        tlvs.extend((len as u16).to_ne_bytes());
        tlvs.extend(1u16.to_ne_bytes());
        tlvs.extend(text.as_bytes());
        tlvs.push(0);
        tlvs.resize(tlvs.len().next_multiple_of(4), 0);
    }
    let echoed = [0u8; 16];
    let len = 16 + 4 + echoed.len() + tlvs.len();
    let mut flags = 0x100u16; // NLM_F_CAPPED
    if message.is_some() {
        flags |= 0x200; // NLM_F_ACK_TLVS
    }
    let mut out = Vec::new();
    out.extend((len as u32).to_ne_bytes());
    out.extend(2u16.to_ne_bytes()); // NLMSG_ERROR
    out.extend(flags.to_ne_bytes());
    out.extend(seq.to_ne_bytes());
    out.extend(0u32.to_ne_bytes());
    out.extend((-errno).to_ne_bytes());
    out.extend(echoed);
    out.extend(tlvs);
    out
}

/// The sequence number of the batch-begin message before [`requests`].
const BEGIN: u32 = 6;

fn requests() -> Vec<SentRequest> {
    vec![
        SentRequest {
            seq: 7,
            operation: Operation::AddTable,
        },
        SentRequest {
            seq: 8,
            operation: Operation::AddSet("cluster-ips-v4".into()),
        },
    ]
}

#[test]
fn acks_and_refusals_are_matched_by_sequence_number() {
    let mut buf = error(7, 0, None);
    buf.extend(error(8, 2, Some("Could not find set")));
    let answers = parse_answers(&buf).unwrap();
    assert_eq!(
        answers,
        [
            Answer {
                seq: 7,
                errno: 0,
                message: None
            },
            Answer {
                seq: 8,
                errno: 2,
                message: Some("Could not find set".into())
            },
        ]
    );
    let refusal = outcome(BEGIN, &requests(), &answers).unwrap_err().unwrap();
    assert_eq!(refusal.operation, Operation::AddSet("cluster-ips-v4".into()));
    assert!(refusal
        .to_string()
        .starts_with("nftables: add set cluster-ips-v4: not found (ENOENT)"));
    assert!(refusal.to_string().ends_with("(kernel: Could not find set)"));
}

#[test]
fn every_request_acknowledged_is_success_and_a_missing_answer_is_not() {
    let mut buf = error(7, 0, None);
    buf.extend(error(8, 0, None));
    assert_eq!(outcome(BEGIN, &requests(), &parse_answers(&buf).unwrap()), Ok(()));
    assert_eq!(
        outcome(BEGIN, &requests(), &parse_answers(&error(7, 0, None)).unwrap()),
        Err(None)
    );
}

/// How Linux refuses a whole batch: one answer, to the begin message,
/// and none to the requests (as a 6.18 kernel answered a batch for a
/// netfilter netlink subsystem it does not have, and one sent without
/// CAP_NET_ADMIN).
#[test]
fn a_refused_batch_is_answered_on_its_begin_message() {
    for (errno, text) in [
        (
            95,
            "nftables: the transaction (its batch-begin message): not supported by this kernel (EOPNOTSUPP)",
        ),
        (
            1,
            "nftables: the transaction (its batch-begin message): permission denied (EPERM)",
        ),
    ] {
        let answers = parse_answers(&error(BEGIN, errno, None)).unwrap();
        let refusal = outcome(BEGIN, &requests(), &answers).unwrap_err().unwrap();
        assert_eq!((refusal.operation.clone(), refusal.errno), (Operation::Batch, errno));
        assert!(refusal.to_string().starts_with(text), "{refusal}");
    }
    // An ACK for the begin message would be no refusal (the kernel sends none).
    let mut buf = error(BEGIN, 0, None);
    buf.extend(error(7, 0, None));
    buf.extend(error(8, 0, None));
    assert_eq!(outcome(BEGIN, &requests(), &parse_answers(&buf).unwrap()), Ok(()));
}

#[test]
fn malformed_answers_are_errors_not_panics() {
    assert!(matches!(parse_answers(&[1, 2, 3]), Err(NftWireError::Malformed(_))));
    let mut short = error(7, 0, None);
    short.truncate(18);
    short[..4].copy_from_slice(&18u32.to_ne_bytes());
    assert!(parse_answers(&short).is_err());
    for len in 0..40 {
        let _ = parse_answers(&error(9, 1, Some("x"))[..len]);
    }
}
