//! Tests of the `VersionEdit` codec (`super`): golden bytes of every
//! section and tag, round trips of random edits (proptest), and the
//! decoder's refusals of malformed ones.

use super::*;
use crate::key::ValueType;
use proptest::prelude::*;

fn ik(k: &str, s: u64, vt: ValueType) -> InternalKey {
    InternalKey::new(k.as_bytes(), SequenceNumber(s), vt)
}

fn example() -> VersionEdit {
    VersionEdit {
        format_version: Some(1),
        log_number: Some(5),
        next_file_number: Some(7),
        last_sequence: Some(SequenceNumber(300)),
        deleted_files: vec![(1, 4)],
        new_files: vec![(
            0,
            FileMetaData {
                number: 6,
                file_size: 1000,
                smallest: ik("a", 1, ValueType::Value),
                largest: ik("b", 2, ValueType::Deletion),
                num_entries: 2,
                num_tombstones: 1,
            },
        )],
        user_bytes_flushed: None,
        table_bytes_written: None,
        key_predictions: Vec::new(),
        new_range_tombstones: Vec::new(),
        range_tombstone_files: Vec::new(),
        next_keyspace_id: None,
        keyspaces: BTreeMap::new(),
    }
}

fn prediction() -> KeyPrediction {
    KeyPrediction {
        output_level: 2,
        input_tables: 3,
        input_entries: 300,
        summed_distinct_keys: 250,
        predicted_distinct_keys: 1.5,
        relative_std_error: 0.25,
        distinct_input_keys: 200,
        distinct_output_keys: 190,
        finished_at_unix_secs: 1_000,
    }
}

#[test]
fn key_prediction_golden_bytes() {
    let e = VersionEdit {
        key_predictions: vec![prediction()],
        ..VersionEdit::default()
    };
    #[rustfmt::skip]
    let bytes = [
        0x09, 0x02, 0x03, 0xac, 0x02, 0xfa, 0x01,
        0, 0, 0, 0, 0, 0, 0xf8, 0x3f, // 1.5
        0, 0, 0, 0, 0, 0, 0xd0, 0x3f, // 0.25
        0xc8, 0x01, 0xbe, 0x01, 0xe8, 0x07,
    ];
    assert_eq!(e.encode(), bytes);
    assert_eq!(dec(&bytes).unwrap(), e);
    // Two predictions keep their order.
    let mut two = e.clone();
    two.key_predictions.push(KeyPrediction {
        output_level: 0,
        ..prediction()
    });
    assert_eq!(dec(&two.encode()).unwrap(), two);
}

#[test]
fn key_prediction_must_be_finite_and_non_negative() {
    for bad in [f64::NAN, f64::INFINITY, -1.0] {
        let e = VersionEdit {
            key_predictions: vec![KeyPrediction {
                relative_std_error: bad,
                ..prediction()
            }],
            ..VersionEdit::default()
        };
        assert!(matches!(e.validate(), Err(Error::InvalidArgument(_))));
        let d = detail(dec(&e.encode()).unwrap_err());
        assert!(d.contains("must be finite and non-negative"), "{d}");
    }
    let mut b = VersionEdit {
        key_predictions: vec![prediction()],
        ..VersionEdit::default()
    }
    .encode();
    b[1] = 0x40; // output level 64
    assert!(detail(dec(&b).unwrap_err()).contains("level 64"));
    for cut in 1..b.len() {
        assert!(dec(&b[..cut]).is_err(), "cut {cut}");
    }
}

#[test]
fn range_tombstone_golden_bytes() {
    let e = VersionEdit {
        new_range_tombstones: vec![
            (
                RangeTombstone {
                    start: b"a".to_vec(),
                    end: Some(b"c".to_vec()),
                    seq: SequenceNumber(300),
                },
                vec![4, 6],
            ),
            (
                RangeTombstone {
                    start: Vec::new(),
                    end: None,
                    seq: SequenceNumber(301),
                },
                vec![],
            ),
        ],
        range_tombstone_files: vec![(SequenceNumber(300), 9)],
        ..VersionEdit::default()
    };
    #[rustfmt::skip]
    let bytes = [
        0x0a, 0xac, 0x02, 0x01, b'a', 0x01, b'c', 0x02, 0x04, 0x06, // [a, c) @300: tables 4, 6
        0x0a, 0xad, 0x02, 0x00, 0x00, 0x00,                          // everything @301: none
        0x0b, 0xac, 0x02, 0x09,                                      // @300 also waits on 9
    ];
    assert_eq!(e.encode(), bytes);
    assert_eq!(dec(&bytes).unwrap(), e);
    for cut in 1..bytes.len() {
        if cut != 10 && cut != 16 {
            assert!(dec(&bytes[..cut]).is_err(), "cut {cut}");
        }
    }
    // An end that does not follow the start, and sequence 0.
    let inverted = [0x0a, 0x01, 0x01, b'c', 0x01, b'a', 0x00];
    assert!(detail(dec(&inverted).unwrap_err()).contains("does not sort after"));
    assert!(detail(dec(&[0x0b, 0x00, 0x01]).unwrap_err()).contains("not in 1.."));
}

/// "logs" with the options text shortened, as in DESIGN.md 12.8.
const LOGS_OPTIONS: &str = "block_size 16384\n";

fn add_logs() -> VersionEdit {
    VersionEdit {
        next_keyspace_id: Some(2),
        keyspaces: BTreeMap::from([(
            1,
            KeyspaceEdit {
                add: Some(KeyspaceAdd {
                    name: "logs".into(),
                    options: LOGS_OPTIONS.into(),
                }),
                log_number: Some(9),
                ..KeyspaceEdit::default()
            },
        )]),
        ..VersionEdit::default()
    }
}

#[test]
fn keyspace_sections_golden_bytes() {
    // Add keyspace 1 "logs" at log 9.
    #[rustfmt::skip]
    let add = [
        0x10, 0x02, // next_keyspace_id 2
        0x0c, 0x01, // section: keyspace 1
        0x0d, 0x04, b'l', b'o', b'g', b's', // add "logs"
        0x11, b'b', b'l', b'o', b'c', b'k', b'_', b's', b'i', b'z', b'e', b' ',
        b'1', b'6', b'3', b'8', b'4', b'\n', // its options text (17 bytes)
        0x02, 0x09, // its log number 9
    ];
    assert_eq!(add_logs().encode(), add);
    assert_eq!(dec(&add).unwrap(), add_logs());

    // Drop keyspace 1.
    let drop = VersionEdit {
        keyspaces: BTreeMap::from([(
            1,
            KeyspaceEdit {
                drop: true,
                ..KeyspaceEdit::default()
            },
        )]),
        ..VersionEdit::default()
    };
    assert_eq!(drop.encode(), [0x0c, 0x01, 0x0e]);
    assert_eq!(dec(&[0x0c, 0x01, 0x0e]).unwrap(), drop);

    // New options for keyspace 1 (`Db::keyspace_with`), the text
    // shortened as above: a section with tag 15 alone.
    let options = VersionEdit {
        keyspaces: BTreeMap::from([(
            1,
            KeyspaceEdit {
                options: Some(LOGS_OPTIONS.into()),
                ..KeyspaceEdit::default()
            },
        )]),
        ..VersionEdit::default()
    };
    #[rustfmt::skip]
    let tag15 = [
        0x0c, 0x01, // section: keyspace 1
        0x0f, 0x11, b'b', b'l', b'o', b'c', b'k', b'_', b's', b'i', b'z', b'e', b' ',
        b'1', b'6', b'3', b'8', b'4', b'\n', // its new options text (17 bytes)
    ];
    assert_eq!(options.encode(), tag15);
    assert_eq!(dec(&tag15).unwrap(), options);

    // A flush of keyspace 1 that also persists the default's bumped log
    // number: the default's fields first, then the section.
    let table = FileMetaData {
        number: 12,
        file_size: 1000,
        smallest: ik("a", 1, ValueType::Value),
        largest: ik("b", 2, ValueType::Deletion),
        num_entries: 2,
        num_tombstones: 1,
    };
    let flush = VersionEdit {
        log_number: Some(11),
        keyspaces: BTreeMap::from([(
            1,
            KeyspaceEdit {
                log_number: Some(11),
                new_files: vec![(0, table)],
                ..KeyspaceEdit::default()
            },
        )]),
        ..VersionEdit::default()
    };
    #[rustfmt::skip]
    let bytes = [
        0x02, 0x0b, // the default's log number 11
        0x0c, 0x01, 0x02, 0x0b, // keyspace 1: log number 11
        0x06, 0x00, 0x0c, 0xe8, 0x07, // new file: level 0, number 12, 1000 bytes
        0x09, b'a', 0x01, 0x01, 0, 0, 0, 0, 0, 0,
        0x09, b'b', 0x00, 0x02, 0, 0, 0, 0, 0, 0,
        0x02, 0x01,
    ];
    assert_eq!(flush.encode(), bytes);
    assert_eq!(dec(&bytes).unwrap(), flush);
}

#[test]
fn sections_encode_in_id_order_and_fields_in_canonical_order() {
    // Section fields come out 13, 15, 2, 5, 6, ..., whatever order
    // they were decoded in; sections in ascending id.
    let e = dec(&[
        0x0c, 0x02, 0x02, 0x07, 0x05, 0x00, 0x03, 0x0f, 0x01, b'x', 0x0c, 0x05, 0x0e,
    ])
    .unwrap();
    assert_eq!(
        e.encode(),
        [0x0c, 0x02, 0x0f, 0x01, b'x', 0x02, 0x07, 0x05, 0x00, 0x03, 0x0c, 0x05, 0x0e]
    );
    // Global fields after a section are still global.
    let e = dec(&[0x0c, 0x01, 0x02, 0x03, 0x03, 0x09]).unwrap();
    assert_eq!((e.next_file_number, e.log_number), (Some(9), None));
    assert_eq!(e.keyspaces[&1].log_number, Some(3));
}

#[test]
fn a_default_only_edit_encodes_as_at_version_3() {
    // Every default field set; no tag 12 or 16 comes out.
    let e = example();
    assert_eq!(e.encode(), EXAMPLE_BYTES);
    assert!(e.encode().iter().all(|&b| b != 0x0c && b != 0x10));
}

#[test]
fn a_keyspace_section_0_is_refused() {
    let d = detail(dec(&[0x0c, 0x00, 0x02, 0x05]).unwrap_err());
    assert_eq!(
        d,
        "version edit, byte 0: keyspace section 0: the default keyspace has no section"
    );
    let mut e = add_logs();
    let ks = e.keyspaces.remove(&1).unwrap();
    e.keyspaces.insert(0, ks);
    assert!(matches!(e.validate(), Err(Error::InvalidArgument(_))));
}

#[test]
fn a_repeated_or_out_of_order_section_is_refused() {
    let d = detail(dec(&[0x0c, 0x02, 0x0c, 0x02]).unwrap_err());
    assert_eq!(
        d,
        "version edit, byte 2: keyspace section 2 repeated or out of order (after section 2; \
         sections are in ascending id)"
    );
    let d = detail(dec(&[0x0c, 0x03, 0x02, 0x01, 0x0c, 0x02]).unwrap_err());
    assert!(
        d.starts_with("version edit, byte 4: keyspace section 2 repeated"),
        "{d}"
    );
    assert!(dec(&[0x0c, 0x02, 0x0c, 0x03]).is_ok());
    // An id above u32::MAX.
    assert!(dec(&[0x0c, 0x80, 0x80, 0x80, 0x80, 0x10]).is_err());
}

#[test]
fn keyspace_tags_outside_a_section_are_refused() {
    for (bytes, name) in [
        (&[0x0d, 0x01, b'a', 0x00][..], "add keyspace (tag 13)"),
        (&[0x0e][..], "drop keyspace (tag 14)"),
        (&[0x0f, 0x00][..], "keyspace options (tag 15)"),
    ] {
        let d = detail(dec(bytes).unwrap_err());
        assert_eq!(
            d,
            format!("version edit, byte 0: {name} outside a keyspace section")
        );
    }
}

#[test]
fn log_number_add_or_options_twice_in_a_section_is_refused() {
    let d = detail(dec(&[0x0c, 0x01, 0x02, 0x05, 0x02, 0x06]).unwrap_err());
    assert_eq!(
        d,
        "version edit, byte 4: keyspace 1: log_number appears twice"
    );
    let add = [0x0d, 0x01, b'a', 0x00];
    let twice = [&[0x0c, 0x01][..], &add, &add].concat();
    let d = detail(dec(&twice).unwrap_err());
    assert_eq!(
        d,
        "version edit, byte 6: keyspace 1: add keyspace appears twice"
    );
    let d = detail(dec(&[0x0c, 0x01, 0x0f, 0x00, 0x0f, 0x00]).unwrap_err());
    assert_eq!(
        d,
        "version edit, byte 4: keyspace 1: keyspace options appears twice"
    );
    // The default's log number and a section's are two fields.
    assert!(dec(&[0x02, 0x05, 0x0c, 0x01, 0x02, 0x05]).is_ok());
}

#[test]
fn a_drop_with_other_fields_is_refused() {
    // Drop after a field, a field after a drop, and a drop twice.
    for (bytes, at) in [
        (&[0x0c, 0x01, 0x02, 0x05, 0x0e][..], 4),
        (&[0x0c, 0x01, 0x0e, 0x05, 0x00, 0x01][..], 3),
        (&[0x0c, 0x01, 0x0e, 0x0f, 0x00][..], 3),
        (&[0x0c, 0x01, 0x0e, 0x0e][..], 3),
    ] {
        let d = detail(dec(bytes).unwrap_err());
        assert_eq!(
            d,
            format!(
                "version edit, byte {at}: keyspace 1: a drop (tag 14) with other fields in \
                 its section"
            )
        );
    }
    let mut e = add_logs();
    e.keyspaces.get_mut(&1).unwrap().drop = true;
    assert!(matches!(e.validate(), Err(Error::InvalidArgument(_))));
    // A drop followed by a global field, or another section, is fine.
    assert!(dec(&[0x0c, 0x01, 0x0e, 0x03, 0x05, 0x0c, 0x02, 0x0e]).is_ok());
}

#[test]
fn an_invalid_keyspace_name_is_refused() {
    let long = "n".repeat(MAX_KEYSPACE_NAME_LEN + 1);
    for (name, why) in [
        ("", "is empty"),
        (long.as_str(), "is longer than 64 bytes"),
        (
            "a b",
            "holds a byte other than ASCII letters, digits, `_`, `-` and `.`",
        ),
        (
            "caf\u{e9}",
            "holds a byte other than ASCII letters, digits, `_`, `-` and `.`",
        ),
        (".hidden", "starts with `.` or `-`"),
        ("-x", "starts with `.` or `-`"),
        ("default", "is the default keyspace's"),
    ] {
        let mut bytes = vec![0x0c, 0x01, 0x0d];
        put_length_prefixed(&mut bytes, name.as_bytes());
        bytes.push(0x00);
        let d = detail(dec(&bytes).unwrap_err());
        assert!(
            d.starts_with("version edit, byte 2: keyspace 1: keyspace name \"") && d.ends_with(why),
            "{name:?}: {d}"
        );
        let mut e = add_logs();
        e.keyspaces.get_mut(&1).unwrap().add.as_mut().unwrap().name = name.into();
        assert!(e.validate().is_err(), "{name:?}");
    }
    for good in [
        "a",
        "Logs_2026.v1",
        "0-9",
        &"n".repeat(MAX_KEYSPACE_NAME_LEN),
    ] {
        assert!(check_keyspace_name(good).is_ok(), "{good}");
    }
    // A name or options text that is not UTF-8.
    let d = detail(dec(&[0x0c, 0x01, 0x0d, 0x01, 0xff, 0x00]).unwrap_err());
    assert_eq!(d, "version edit, byte 3: keyspace name is not UTF-8");
    let d = detail(dec(&[0x0c, 0x01, 0x0f, 0x01, 0xff]).unwrap_err());
    assert_eq!(d, "version edit, byte 3: keyspace options is not UTF-8");
}

#[test]
fn section_fields_obey_the_default_fields_rules() {
    // A level of 64 and an inverted tombstone, inside a section.
    let d = detail(dec(&[0x0c, 0x01, 0x05, 0x40, 0x01]).unwrap_err());
    assert_eq!(
        d,
        "version edit, byte 2: keyspace 1: level 64 is not below 64"
    );
    let d = detail(dec(&[0x0c, 0x01, 0x0a, 0x01, 0x01, b'c', 0x01, b'a', 0x00]).unwrap_err());
    assert!(
        d.contains("keyspace 1: range tombstone 1: its end does not sort"),
        "{d}"
    );
    // Every cut inside the golden section fails, or is a shorter edit.
    let bytes = add_logs().encode();
    for cut in 0..bytes.len() {
        if let Ok(e) = dec(&bytes[..cut]) {
            assert!([0, 2, 4, 28].contains(&cut), "cut {cut}: {e:?}");
        }
    }
}

#[test]
fn byte_totals_golden_bytes() {
    let e = VersionEdit {
        user_bytes_flushed: Some(300),
        table_bytes_written: Some(1),
        ..VersionEdit::default()
    };
    assert_eq!(e.encode(), [0x07, 0xac, 0x02, 0x08, 0x01]);
    assert_eq!(dec(&e.encode()).unwrap(), e);
    assert!(dec(&[0x07, 0x01, 0x07, 0x02]).is_err(), "tag 7 twice");
}

#[rustfmt::skip]
const EXAMPLE_BYTES: &[u8] = &[
    0x01, 0x01,
    0x02, 0x05,
    0x03, 0x07,
    0x04, 0xac, 0x02,
    0x05, 0x01, 0x04,
    0x06, 0x00, 0x06, 0xe8, 0x07,
    0x09, b'a', 0x01, 0x01, 0, 0, 0, 0, 0, 0,
    0x09, b'b', 0x00, 0x02, 0, 0, 0, 0, 0, 0,
    0x02, 0x01,
];

fn dec(bytes: &[u8]) -> Result<VersionEdit> {
    VersionEdit::decode(bytes, Path::new("MANIFEST-000001"), 42)
}

fn detail(e: Error) -> String {
    match e {
        Error::Corruption {
            file,
            offset,
            detail,
        } => {
            assert_eq!(file, Path::new("MANIFEST-000001"));
            assert_eq!(offset, 42);
            detail
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}

#[test]
fn golden_bytes() {
    assert_eq!(example().encode(), EXAMPLE_BYTES);
    assert_eq!(dec(EXAMPLE_BYTES).unwrap(), example());
}

#[test]
fn empty_edit_is_zero_bytes() {
    assert_eq!(VersionEdit::new().encode(), Vec::<u8>::new());
    assert_eq!(dec(&[]).unwrap(), VersionEdit::new());
}

#[test]
fn fields_in_any_order_decode() {
    // deleted file, then log_number, then format_version.
    let e = dec(&[0x05, 0x02, 0x09, 0x02, 0x0a, 0x01, 0x01]).unwrap();
    assert_eq!(
        e,
        VersionEdit {
            format_version: Some(1),
            log_number: Some(10),
            deleted_files: vec![(2, 9)],
            ..VersionEdit::default()
        }
    );
}

#[test]
fn round_trips_extremes() {
    let e = VersionEdit {
        format_version: Some(u32::MAX),
        log_number: Some(u64::MAX),
        next_file_number: Some(0),
        last_sequence: Some(SequenceNumber::MAX),
        user_bytes_flushed: Some(u64::MAX),
        table_bytes_written: Some(u64::MAX),
        deleted_files: vec![(63, u64::MAX), (0, 0)],
        new_files: vec![
            (
                63,
                FileMetaData {
                    number: u64::MAX,
                    file_size: u64::MAX,
                    smallest: ik("", 0, ValueType::Deletion),
                    largest: ik("", 0, ValueType::Deletion),
                    num_entries: u64::MAX,
                    num_tombstones: u64::MAX,
                },
            ),
            (
                1,
                FileMetaData {
                    number: 3,
                    file_size: 0,
                    smallest: ik("k", 9, ValueType::Value),
                    largest: InternalKey::new(&[0xff; 300], SequenceNumber(1), ValueType::Value),
                    num_entries: 0,
                    num_tombstones: 0,
                },
            ),
        ],
        key_predictions: vec![KeyPrediction {
            output_level: 63,
            input_tables: usize::MAX,
            input_entries: u64::MAX,
            summed_distinct_keys: u64::MAX,
            predicted_distinct_keys: f64::MAX,
            relative_std_error: 0.0,
            distinct_input_keys: u64::MAX,
            distinct_output_keys: 0,
            finished_at_unix_secs: u64::MAX,
        }],
        new_range_tombstones: vec![(
            RangeTombstone {
                start: vec![0xff; MAX_KEY_LEN + 1],
                end: None,
                seq: SequenceNumber::MAX,
            },
            vec![u64::MAX, 0],
        )],
        range_tombstone_files: vec![(SequenceNumber::MAX, u64::MAX)],
        next_keyspace_id: Some(u32::MAX),
        keyspaces: BTreeMap::from([
            (
                1,
                KeyspaceEdit {
                    add: Some(KeyspaceAdd {
                        name: "a".repeat(MAX_KEYSPACE_NAME_LEN),
                        options: String::new(),
                    }),
                    log_number: Some(u64::MAX),
                    ..KeyspaceEdit::default()
                },
            ),
            (
                u32::MAX,
                KeyspaceEdit {
                    drop: true,
                    ..KeyspaceEdit::default()
                },
            ),
        ]),
    };
    e.validate().unwrap();
    assert_eq!(dec(&e.encode()).unwrap(), e);
}

#[test]
fn unknown_and_reserved_tags_are_rejected() {
    let d = detail(dec(&[0x02, 0x05, 0x11, 0x01]).unwrap_err());
    assert_eq!(d, "version edit, byte 2: unknown tag 17");
    // Inside a keyspace section too.
    let d = detail(dec(&[0x0c, 0x01, 0x11]).unwrap_err());
    assert_eq!(d, "version edit, byte 2: keyspace 1: unknown tag 17");
    let d = detail(dec(&[0x00]).unwrap_err());
    assert_eq!(d, "version edit, byte 0: unknown tag 0");
}

#[test]
fn repeated_singleton_is_rejected() {
    let d = detail(dec(&[0x02, 0x05, 0x02, 0x06]).unwrap_err());
    assert_eq!(d, "version edit, byte 2: log_number appears twice");
}

#[test]
fn truncated_fields_are_rejected() {
    // Every cut strictly inside the new-file field (which starts at 12)
    // fails; cuts between fields yield a shorter, valid edit.
    for cut in 13..EXAMPLE_BYTES.len() {
        assert!(dec(&EXAMPLE_BYTES[..cut]).is_err(), "cut {cut}");
    }
    for cut in [0, 2, 4, 6, 9, 12] {
        assert!(dec(&EXAMPLE_BYTES[..cut]).is_ok(), "cut {cut}");
    }
    assert!(detail(dec(&[0x02]).unwrap_err()).contains("truncated varint"));
}

#[test]
fn level_limit() {
    assert!(dec(&[0x05, 0x3f, 0x01]).is_ok());
    let d = detail(dec(&[0x05, 0x40, 0x01]).unwrap_err());
    assert_eq!(d, "version edit, byte 0: level 64 is not below 64");
    // A level that does not even fit u32.
    assert!(dec(&[0x05, 0x80, 0x80, 0x80, 0x80, 0x10, 0x01]).is_err());
    let mut e = example();
    e.deleted_files.push((64, 1));
    assert!(matches!(e.validate(), Err(Error::InvalidArgument(_))));
}

#[test]
fn sequence_limit() {
    let mut e = VersionEdit {
        last_sequence: Some(SequenceNumber::MAX),
        ..VersionEdit::default()
    };
    assert!(dec(&e.encode()).is_ok());
    e.last_sequence = Some(SequenceNumber(SequenceNumber::MAX.0 + 1));
    assert!(e.validate().is_err());
    assert!(detail(dec(&e.encode()).unwrap_err()).contains("exceeds"));
}

#[test]
fn bad_keys_are_rejected() {
    // Smallest key of 7 bytes: too short for a trailer.
    let mut b = EXAMPLE_BYTES[..17].to_vec();
    b.extend_from_slice(&[0x07, 0, 0, 0, 0, 0, 0, 0]);
    let d = detail(dec(&b).unwrap_err());
    assert!(
        d.starts_with("version edit, byte 17: smallest key is not"),
        "{d}"
    );

    // Unknown value type 5 in the largest key's trailer.
    let mut b = EXAMPLE_BYTES.to_vec();
    b[29] = 0x05;
    let d = detail(dec(&b).unwrap_err());
    assert!(
        d.starts_with("version edit, byte 27: largest key is not"),
        "{d}"
    );

    // A key length pointing past the end.
    let mut b = EXAMPLE_BYTES[..17].to_vec();
    b.push(0x7f);
    assert!(dec(&b).is_err());
}

#[test]
fn inverted_range_and_excess_tombstones_are_rejected() {
    let mut e = example();
    let f = &mut e.new_files[0].1;
    std::mem::swap(&mut f.smallest, &mut f.largest);
    assert!(e.validate().is_err());
    let d = detail(dec(&e.encode()).unwrap_err());
    assert!(d.contains("sorts after largest"), "{d}");

    let mut e = example();
    e.new_files[0].1.num_tombstones = 3;
    assert!(e.validate().is_err());
    let d = detail(dec(&e.encode()).unwrap_err());
    assert_eq!(
        d,
        "version edit, byte 12: file 6: 3 tombstones exceed 2 entries"
    );
}

#[test]
fn peek_format_version_reads_only_a_leading_tag_1() {
    assert_eq!(VersionEdit::peek_format_version(EXAMPLE_BYTES), Some(1));
    assert_eq!(
        VersionEdit::peek_format_version(&[0x01, 0x02, 0x63]),
        Some(2)
    );
    assert_eq!(
        VersionEdit::peek_format_version(&[0x02, 0x05, 0x01, 0x01]),
        None
    );
    assert_eq!(VersionEdit::peek_format_version(&[0x01]), None);
    assert_eq!(VersionEdit::peek_format_version(&[]), None);
}

fn arb_key() -> impl Strategy<Value = InternalKey> {
    (
        proptest::collection::vec(any::<u8>(), 0..12),
        0..=SequenceNumber::MAX.0,
        any::<bool>(),
    )
        .prop_map(|(k, s, v)| {
            let vt = if v {
                ValueType::Value
            } else {
                ValueType::Deletion
            };
            InternalKey::new(&k, SequenceNumber(s), vt)
        })
}

fn arb_file() -> impl Strategy<Value = FileMetaData> {
    (
        any::<u64>(),
        any::<u64>(),
        arb_key(),
        arb_key(),
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(|(number, file_size, a, b, x, y)| FileMetaData {
            number,
            file_size,
            smallest: a.clone().min(b.clone()),
            largest: a.max(b),
            num_entries: x.max(y),
            num_tombstones: x.min(y),
        })
}

fn arb_keyspace_name() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,12}".prop_filter("not the default's", |n| n != "default")
}

fn arb_keyspace_edit() -> impl Strategy<Value = KeyspaceEdit> {
    let options = || "[ -~\n]{0,24}";
    let fields = (
        proptest::option::of((arb_keyspace_name(), options())),
        proptest::option::of(options()),
        proptest::option::of(any::<u64>()),
        proptest::collection::vec((0..MAX_LEVELS, any::<u64>()), 0..3),
        proptest::collection::vec((0..MAX_LEVELS, arb_file()), 0..3),
        proptest::collection::vec(arb_prediction(), 0..2),
        proptest::collection::vec(arb_range_tombstone(), 0..2),
        proptest::collection::vec(
            (
                (1..=SequenceNumber::MAX.0).prop_map(SequenceNumber),
                any::<u64>(),
            ),
            0..2,
        ),
    )
        .prop_map(
            |(add, opts, log, del, new, predictions, tombs, waits)| KeyspaceEdit {
                add: add.map(|(name, options)| KeyspaceAdd { name, options }),
                options: opts,
                log_number: log,
                deleted_files: del,
                new_files: new,
                key_predictions: predictions,
                new_range_tombstones: tombs,
                range_tombstone_files: waits,
                drop: false,
            },
        );
    prop_oneof![
        1 => Just(KeyspaceEdit {
            drop: true,
            ..KeyspaceEdit::default()
        }),
        4 => fields,
    ]
}

fn arb_edit() -> impl Strategy<Value = VersionEdit> {
    (
        arb_default_edit(),
        proptest::option::of(any::<u32>()),
        proptest::collection::btree_map(1..=u32::MAX, arb_keyspace_edit(), 0..3),
    )
        .prop_map(|(e, next_keyspace_id, keyspaces)| VersionEdit {
            next_keyspace_id,
            keyspaces,
            ..e
        })
}

fn arb_default_edit() -> impl Strategy<Value = VersionEdit> {
    (
        proptest::option::of(any::<u32>()),
        proptest::option::of(any::<u64>()),
        proptest::option::of(any::<u64>()),
        proptest::option::of((0..=SequenceNumber::MAX.0).prop_map(SequenceNumber)),
        proptest::collection::vec((0..MAX_LEVELS, any::<u64>()), 0..4),
        proptest::collection::vec((0..MAX_LEVELS, arb_file()), 0..4),
        proptest::option::of(any::<u64>()),
        proptest::option::of(any::<u64>()),
        proptest::collection::vec(arb_prediction(), 0..3),
        proptest::collection::vec(arb_range_tombstone(), 0..3),
        proptest::collection::vec(
            (
                (1..=SequenceNumber::MAX.0).prop_map(SequenceNumber),
                any::<u64>(),
            ),
            0..3,
        ),
    )
        .prop_map(
            |(fv, log, next, seq, del, new, flushed, written, predictions, tombs, waits)| {
                VersionEdit {
                    format_version: fv,
                    log_number: log,
                    next_file_number: next,
                    last_sequence: seq,
                    deleted_files: del,
                    new_files: new,
                    user_bytes_flushed: flushed,
                    table_bytes_written: written,
                    key_predictions: predictions,
                    new_range_tombstones: tombs,
                    range_tombstone_files: waits,
                    ..VersionEdit::default()
                }
            },
        )
}

fn arb_range_tombstone() -> impl Strategy<Value = (RangeTombstone, Vec<u64>)> {
    (
        proptest::collection::vec(any::<u8>(), 0..8),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 1..8)),
        1..=SequenceNumber::MAX.0,
        proptest::collection::vec(any::<u64>(), 0..4),
    )
        .prop_map(|(start, end, seq, files)| {
            // An end must follow the start: append to the start if not.
            let end = end.map(|e| {
                if e > start {
                    e
                } else {
                    [start.clone(), e].concat()
                }
            });
            (
                RangeTombstone {
                    start,
                    end,
                    seq: SequenceNumber(seq),
                },
                files,
            )
        })
}

fn arb_prediction() -> impl Strategy<Value = KeyPrediction> {
    (
        (
            0..MAX_LEVELS as usize,
            any::<usize>(),
            any::<u64>(),
            any::<u64>(),
        ),
        (0.0..f64::MAX, 0.0..1.0f64),
        (any::<u64>(), any::<u64>(), any::<u64>()),
    )
        .prop_map(
            |((level, tables, entries, summed), (p, e), (i, o, t))| KeyPrediction {
                output_level: level,
                input_tables: tables,
                input_entries: entries,
                summed_distinct_keys: summed,
                predicted_distinct_keys: p,
                relative_std_error: e,
                distinct_input_keys: i,
                distinct_output_keys: o,
                finished_at_unix_secs: t,
            },
        )
}

proptest! {
    #[test]
    fn arbitrary_edits_round_trip(e in arb_edit()) {
        prop_assert!(e.validate().is_ok());
        prop_assert_eq!(dec(&e.encode()).unwrap(), e);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..128)) {
        if let Ok(e) = dec(&bytes) {
            // Whatever decodes is a valid edit that round-trips.
            prop_assert!(e.validate().is_ok());
            prop_assert_eq!(dec(&e.encode()).unwrap(), e);
        }
    }

    #[test]
    fn mutated_golden_bytes_never_panic(i in 0..EXAMPLE_BYTES.len(), x in any::<u8>()) {
        let mut b = EXAMPLE_BYTES.to_vec();
        b[i] = x;
        let _ = dec(&b);
    }
}
