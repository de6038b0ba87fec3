//! A draws line's text, written and read in parallel pieces: at a million points a line
//! holds a million labels, and formatting or parsing them through the JSON serializer on the
//! chain's or the summary's one thread left the other cores idle (about 10 ms a draw written,
//! and the summary parses every draw three times).
//!
//! A line is `{"sweep":S,"log_joint":L,"hyper":{…},"labels":[l₀,l₁,…]}`, the text
//! `serde_json` gives a [`super::Draw`]. [`write_draw`] writes exactly that text: the head
//! through `serde_json`, the labels by hand, in pieces of [`PIECE`] labels formatted in
//! parallel and written in order. [`read_draw`] reads a line of that shape, the head through
//! `serde_json` and the labels by hand in pieces cut at commas and parsed in parallel; any
//! other text (spaces, another field, a malformed number) gets `None`, and the caller parses
//! the line with `serde_json`, whose result and error messages stand. So the fast path gives
//! what `serde_json` gives wherever it applies. Cost: O(n) for `n` labels, in parallel; the
//! pieces' text is held once before it is written.

use super::HyperState;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::io::Write;

/// Labels formatted, or bytes of labels parsed, by one task: small enough that a million
/// labels make pieces for every core, large enough that a task's overhead is negligible.
const PIECE: usize = 1 << 16;

/// What comes before the labels in the text of a draw, written in its order.
#[derive(Serialize)]
struct HeadOut<'a> {
    sweep: u64,
    log_joint: f64,
    hyper: &'a HyperState,
}

/// What comes before the labels, read back: no other field, so that a line of another shape
/// goes to the JSON parser whole.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HeadIn {
    sweep: u64,
    log_joint: f64,
    hyper: HyperState,
}

/// The field that ends a draws line, with its opening bracket.
const LABELS: &str = ",\"labels\":[";

/// Writes the line's text (without its newline) of the draw `sweep`, `log_joint`, `hyper`,
/// `labels`: the text `serde_json` gives the draw, its labels formatted in parallel pieces.
pub(super) fn write_draw<L: Copy + Into<u32> + Sync>(
    out: &mut impl Write,
    sweep: u64,
    log_joint: f64,
    hyper: &HyperState,
    labels: &[L],
) -> std::io::Result<()> {
    let mut head = serde_json::to_vec(&HeadOut {
        sweep,
        log_joint,
        hyper,
    })
    .map_err(std::io::Error::other)?;
    head.pop(); // the head's closing brace: the labels follow inside the same object
    out.write_all(&head)?;
    out.write_all(LABELS.as_bytes())?;
    if labels.len() <= PIECE {
        let mut text = Vec::with_capacity(labels.len() * 2);
        format_piece(labels, true, &mut text);
        out.write_all(&text)?;
    } else {
        let pieces: Vec<Vec<u8>> = labels
            .par_chunks(PIECE)
            .enumerate()
            .map(|(c, piece)| {
                let mut text = Vec::with_capacity(piece.len() * 2);
                format_piece(piece, c == 0, &mut text);
                text
            })
            .collect();
        for text in pieces {
            out.write_all(&text)?;
        }
    }
    out.write_all(b"]}")
}

/// Appends `labels` in decimal, comma-separated, with a comma before the first unless it is
/// the line's `first` piece.
fn format_piece<L: Copy + Into<u32>>(labels: &[L], first: bool, out: &mut Vec<u8>) {
    for (i, &label) in labels.iter().enumerate() {
        if i > 0 || !first {
            out.push(b',');
        }
        let mut digits = [0u8; 10];
        let mut at = digits.len();
        let mut v: u32 = label.into();
        loop {
            at -= 1;
            digits[at] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        out.extend_from_slice(&digits[at..]);
    }
}

/// A draws line of the shape [`write_draw`] writes, as `(sweep, log_joint, hyper, labels)`;
/// `None` for any other text, which the caller then parses with `serde_json`.
pub(super) fn read_draw(line: &str) -> Option<(u64, f64, HyperState, Vec<usize>)> {
    // A quote inside a JSON string is escaped, so this text outside the labels can only be
    // a field named `labels`; the first is found near the line's start.
    let at = line.find(LABELS)?;
    let body = line[at + LABELS.len()..].strip_suffix("]}")?;
    let mut head = String::with_capacity(at + 1);
    head.push_str(&line[..at]);
    head.push('}');
    let head: HeadIn = serde_json::from_str(&head).ok()?;
    Some((
        head.sweep,
        head.log_joint,
        head.hyper,
        read_labels(body.as_bytes())?,
    ))
}

/// Comma-separated unsigned decimals as JSON writes them (no sign, no leading zero, no
/// space), parsed in pieces cut at commas; `None` on any other text or a number beyond
/// `usize`.
fn read_labels(body: &[u8]) -> Option<Vec<usize>> {
    if body.is_empty() {
        return Some(Vec::new());
    }
    if body.len() <= PIECE {
        let mut labels = Vec::with_capacity(body.len() / 2 + 1);
        parse_piece(body, &mut labels)?;
        return Some(labels);
    }
    // Piece boundaries just after a comma, about PIECE bytes apart.
    let mut starts = vec![0];
    let mut from = PIECE;
    while from < body.len() {
        match body[from..].iter().position(|&b| b == b',') {
            Some(p) => {
                starts.push(from + p + 1);
                from += p + 1 + PIECE;
            }
            None => break,
        }
    }
    let ends: Vec<usize> = starts[1..]
        .iter()
        .map(|&s| s - 1)
        .chain([body.len()])
        .collect();
    let pieces: Option<Vec<Vec<usize>>> = starts
        .par_iter()
        .zip(&ends)
        .map(|(&s, &e)| {
            let mut labels = Vec::with_capacity((e - s) / 2 + 1);
            parse_piece(&body[s..e], &mut labels).map(|()| labels)
        })
        .collect();
    Some(pieces?.concat())
}

/// Appends the comma-separated numbers of `text` (at least one) to `out`.
fn parse_piece(text: &[u8], out: &mut Vec<usize>) -> Option<()> {
    let (mut value, mut digits) = (0usize, 0u32);
    for &b in text {
        if b == b',' {
            if digits == 0 {
                return None;
            }
            out.push(value);
            (value, digits) = (0, 0);
        } else {
            let d = b.wrapping_sub(b'0');
            // A digit, and not one after a leading zero.
            if d > 9 || (digits == 1 && value == 0) {
                return None;
            }
            value = value.checked_mul(10)?.checked_add(usize::from(d))?;
            digits += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    out.push(value);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prior::PriorHyper;

    fn hyper() -> HyperState {
        HyperState {
            prior: PriorHyper::Dp { alpha: 0.37 },
            kernel: None,
        }
    }

    #[derive(Serialize)]
    struct Whole<'a> {
        sweep: u64,
        log_joint: f64,
        hyper: &'a HyperState,
        labels: &'a [u32],
    }

    fn line_of(labels: &[u32]) -> String {
        line_of_at(12, -1_234.567_891_2, labels)
    }

    fn line_of_at<L: Copy + Into<u32> + Sync>(sweep: u64, log_joint: f64, labels: &[L]) -> String {
        let mut out = Vec::new();
        write_draw(&mut out, sweep, log_joint, &hyper(), labels).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_text_is_serde_jsons_at_every_size() {
        for n in [0usize, 1, 7, PIECE - 1, PIECE, PIECE + 1, 3 * PIECE + 17] {
            let labels: Vec<u32> = (0..n as u32).map(|i| (i * 7919) % 1031).collect();
            let whole = Whole {
                sweep: 12,
                log_joint: -1_234.567_891_2,
                hyper: &hyper(),
                labels: &labels,
            };
            let line = line_of(&labels);
            assert_eq!(line, serde_json::to_string(&whole).unwrap(), "n = {n}");
            let (sweep, log_joint, h, read) = read_draw(&line).unwrap();
            assert_eq!((sweep, log_joint, h), (12, -1_234.567_891_2, hyper()));
            let wide: Vec<usize> = labels.iter().map(|&l| l as usize).collect();
            assert_eq!(read, wide, "n = {n}");
        }
    }

    #[test]
    fn narrow_labels_give_the_same_text() {
        let wide: Vec<u32> = (0..PIECE as u32 * 2 + 5).map(|i| i % 251).collect();
        let narrow: Vec<u8> = wide.iter().map(|&l| l as u8).collect();
        assert_eq!(line_of_at(3, 0.5, &narrow), line_of_at(3, 0.5, &wide));
    }

    #[test]
    fn other_text_is_left_to_the_json_parser() {
        let good = line_of(&[0, 1, 10, 2]);
        assert!(read_draw(&good).is_some());
        for bad in [
            good.replace("[0,1,10,2]", "[0, 1,10,2]"),
            good.replace("[0,1,10,2]", "[0,01,10,2]"),
            good.replace("[0,1,10,2]", "[0,1,,2]"),
            good.replace("[0,1,10,2]", "[0,1,10,2,]"),
            good.replace("[0,1,10,2]", "[0,-1,10,2]"),
            good.replace("[0,1,10,2]", "[0,1.0,10,2]"),
            good.replace("[0,1,10,2]", "[0,99999999999999999999999,2]"),
            good.replace("\"sweep\"", "\"extra\":1,\"sweep\""),
            good.replace("]}", "] }"),
            good.replace("-1234.5678912", "null"),
        ] {
            assert!(read_draw(&bad).is_none(), "{bad}");
        }
        // Cut across pieces: a bad number far into a long line is found too.
        let mut long: Vec<u32> = vec![3; 4 * PIECE];
        long[3 * PIECE] = 12;
        let line = line_of(&long).replace(",12,", ",012,");
        assert!(read_draw(&line).is_none());
    }
}
