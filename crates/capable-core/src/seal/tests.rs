use super::*;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

fn key(byte: u8) -> SealKey {
    SealKey::from_bytes(&[byte; KEY_LEN])
}

fn ring() -> KeyRing {
    KeyRing::new(key(1), vec![])
}

#[test]
fn a_seal_opens_to_what_was_sealed() {
    let ring = ring();
    for kind in [SealKind::Session, SealKind::Task, SealKind::RequestState] {
        for plaintext in [&b""[..], b"x", &[0xa5; 1000]] {
            let sealed = seal(&ring, kind, plaintext).unwrap();
            assert!(sealed
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
            assert_eq!(open(&ring, kind, &sealed).unwrap(), plaintext);
        }
    }
}

#[test]
fn every_flipped_bit_is_refused_and_in_the_body_it_reads_as_tampered() {
    let ring = ring();
    let sealed = seal(&ring, SealKind::Session, b"{\"sub\":\"alice\"}").unwrap();
    let raw = URL_SAFE_NO_PAD.decode(&sealed).unwrap();
    for byte in 0..raw.len() {
        for bit in 0..8 {
            let mut changed = raw.clone();
            changed[byte] ^= 1 << bit;
            let result = open(&ring, SealKind::Session, &URL_SAFE_NO_PAD.encode(&changed));
            assert!(result.is_err(), "byte {byte} bit {bit} opened");
            if byte >= 6 {
                assert_eq!(result, Err(SealError::Tampered), "byte {byte} bit {bit}");
            }
        }
    }
}

#[test]
fn a_seal_of_one_kind_is_refused_as_another() {
    let ring = ring();
    let task = seal(&ring, SealKind::Task, b"t-1").unwrap();
    assert_eq!(
        open(&ring, SealKind::Session, &task),
        Err(SealError::WrongKind)
    );
    assert_eq!(
        open(&ring, SealKind::RequestState, &task),
        Err(SealError::WrongKind)
    );
    // Rewriting the kind byte does not help: the header is authenticated.
    let mut raw = URL_SAFE_NO_PAD.decode(&task).unwrap();
    raw[1] = 1;
    let forged = URL_SAFE_NO_PAD.encode(&raw);
    assert_eq!(
        open(&ring, SealKind::Session, &forged),
        Err(SealError::Tampered)
    );
}

#[test]
fn a_previous_key_opens_until_it_is_removed() {
    let old = KeyRing::new(key(1), vec![]);
    let sealed = seal(&old, SealKind::Session, b"state").unwrap();
    let rotated = KeyRing::new(key(2), vec![key(1)]);
    assert_eq!(
        open(&rotated, SealKind::Session, &sealed).unwrap(),
        b"state"
    );
    // New seals are made under the new key, which the old ring does not know.
    let fresh = seal(&rotated, SealKind::Session, b"state").unwrap();
    assert_eq!(
        open(&old, SealKind::Session, &fresh),
        Err(SealError::UnknownKey(key(2).id()))
    );
    let retired = KeyRing::new(key(2), vec![]);
    assert_eq!(
        open(&retired, SealKind::Session, &sealed),
        Err(SealError::UnknownKey(key(1).id()))
    );
}

#[test]
fn two_seals_of_the_same_state_differ_and_show_nothing_of_it() {
    let ring = ring();
    let plaintext = b"sub=alice-the-secret-user;upstream=0123456789abcdef";
    let a = seal(&ring, SealKind::Session, plaintext).unwrap();
    let b = seal(&ring, SealKind::Session, plaintext).unwrap();
    assert_ne!(a, b);
    for sealed in [&a, &b] {
        let raw = URL_SAFE_NO_PAD.decode(sealed).unwrap();
        for window in plaintext.windows(4) {
            assert!(!raw.windows(4).any(|w| w == window), "{window:?} visible");
            let text = std::str::from_utf8(window).unwrap();
            assert!(!sealed.contains(text), "{text} visible");
        }
    }
}

#[test]
fn sizes_are_bounded_both_ways() {
    let ring = ring();
    let largest = seal(&ring, SealKind::Task, &vec![0; MAX_PLAINTEXT_LEN]).unwrap();
    assert!(largest.len() <= MAX_SEALED_LEN);
    assert_eq!(
        open(&ring, SealKind::Task, &largest).unwrap().len(),
        MAX_PLAINTEXT_LEN
    );
    assert_eq!(
        seal(&ring, SealKind::Task, &vec![0; MAX_PLAINTEXT_LEN + 1]),
        Err(SealError::TooLarge(MAX_PLAINTEXT_LEN + 1))
    );
    let long = "A".repeat(MAX_SEALED_LEN + 1);
    assert_eq!(
        open(&ring, SealKind::Task, &long),
        Err(SealError::Malformed)
    );
}

#[test]
fn random_and_truncated_inputs_never_panic_and_never_open() {
    let ring = ring();
    let sealed = seal(&ring, SealKind::RequestState, b"round 2 of 3").unwrap();
    for end in 0..sealed.len() {
        assert!(open(&ring, SealKind::RequestState, &sealed[..end]).is_err());
    }
    // A small xorshift generator: deterministic, so a failure replays.
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=+/. \xc3\xa9";
    for _ in 0..5_000 {
        let len = (next() % 200) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
            .collect();
        let text = String::from_utf8_lossy(&bytes);
        assert!(open(&ring, SealKind::RequestState, &text).is_err());
        // Valid base64 of random bytes, with a valid version and kind: reaches the cipher.
        let mut raw: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        if raw.len() > 6 {
            raw[0] = VERSION;
            raw[1] = 3;
            raw[2..6].copy_from_slice(&ring.current().id().0);
        }
        assert!(open(&ring, SealKind::RequestState, &URL_SAFE_NO_PAD.encode(&raw)).is_err());
    }
}

#[test]
fn keys_parse_from_hex_or_base64_and_refuse_a_wrong_length() {
    let bytes = [0x5a_u8; KEY_LEN];
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let from_hex = SealKey::parse(&format!("  {}\n", hex.to_uppercase())).unwrap();
    for engine in [base64::engine::general_purpose::STANDARD, URL_SAFE_NO_PAD] {
        let text = engine.encode(bytes);
        assert_eq!(SealKey::parse(&text).unwrap().id(), from_hex.id());
    }
    assert_eq!(from_hex.id(), SealKey::from_bytes(&bytes).id());
    assert_eq!(SealKey::parse(" \n").unwrap_err(), KeyError::Empty);
    assert_eq!(
        SealKey::parse(&hex[..62]).unwrap_err(),
        KeyError::Length(31)
    );
    assert_eq!(
        SealKey::parse(&URL_SAFE_NO_PAD.encode([1; 16])).unwrap_err(),
        KeyError::Length(16)
    );
    assert_eq!(
        SealKey::parse("not a key!").unwrap_err(),
        KeyError::Encoding
    );
    // 32 hex digits are also valid base64 (of 24 bytes): said as the 16 bytes they mean.
    assert_eq!(
        SealKey::parse(&"ab".repeat(16)).unwrap_err(),
        KeyError::Length(16)
    );
    // The key is never shown, whether accepted or refused.
    assert!(!format!("{from_hex:?}").to_lowercase().contains("5a5a"));
    let refused = SealKey::parse(&format!("{hex}zz")).unwrap_err();
    assert!(!refused.to_string().contains("5a5a"));
    assert_eq!(
        KeyRing::try_new(key(1), (2..=2 + MAX_PREVIOUS as u8).map(key).collect()).unwrap_err(),
        KeyError::TooManyPrevious(MAX_PREVIOUS + 1)
    );
}

mod any_plaintext {
    use super::*;
    use crate::seal::session::FORMAT;
    use crate::seal::{Caller, SessionSeal, TaskSeal};
    use proptest::prelude::*;

    proptest! {
        /// A seal that opens (made under the key, so past the AEAD) but holds anything at
        /// all after the format byte is decoded or refused, never a panic, never a read
        /// past it.
        #[test]
        fn whatever_a_seal_holds_opens_or_is_refused(
            body in proptest::collection::vec(any::<u8>(), 0..600),
        ) {
            let ring = ring();
            let mut plaintext = vec![FORMAT];
            plaintext.extend_from_slice(&body);
            let mut buffer = Vec::new();
            let id = seal(&ring, SealKind::Session, &plaintext).unwrap();
            let _ = SessionSeal::open(&ring, &id, 0, &mut buffer);
            let id = seal(&ring, SealKind::Task, &plaintext).unwrap();
            let _ = TaskSeal::open(&ring, &id, &Caller::default(), 0, &mut buffer);
        }
    }
}
