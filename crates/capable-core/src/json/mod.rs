//! Every piece of JSON the crate reads by hand instead of through serde_json, in one
//! place, under one contract.
//!
//! **The contract.** Each reader here accepts a subset of what serde_json accepts, and
//! on that subset yields exactly the value serde_json yields. On anything else it gives
//! up (`None`) and its caller decodes with serde_json, which then judges the text: a
//! reader never refuses what serde would take, never takes what serde would refuse, and
//! never makes a different value of it. The tests of `agreement.rs` hold every reader
//! to that: mutated and generated inputs by the tens of thousands, each read both ways.
//!
//! **Why any.** A reader stays here only while `.ci/bench-guard`'s workloads (1 KiB
//! `resources/read` over stdio and over Streamable HTTP) show a regression without it;
//! `BENCHMARKS.md` gives the counts. Decoders of other results (`tools/call`, a result's
//! caching hints, `resultType`), the member loops of reads in other layouts and the
//! HTTP policy's reading of outgoing lines showed none there and were removed: serde
//! decodes those.
//!
//! | file | what it reads | where | without it |
//! |---|---|---|---|
//! | `envelope.rs` | a success response in the usual layout: its id, and where its result starts (its verification is the result's decode) | every answer the reader routes | a full parse of every line before routing it |
//! | `read.rs` | a `resources/read` result in the usual layout: `{"contents":[{"uri":…,"mimeType":…,"text":…}]}` | [`ReadResourceResult::from_payload`](crate::model::ReadResourceResult::from_payload) | serde's derived decoder, several times the cost of a read's own bytes |
//! | `string_end.rs` | where a string ends, with no raw control byte before it (AVX2 64 bytes a step where the CPU has it) | `read.rs` | a byte-at-a-time search (about 1,200 more instructions per sequential read) |
//! | `scan.rs` | whether a text holds a raw control byte; the quotes of eight bytes | the above, and [`Payload::decode`](crate::Payload::decode)'s check of a result read off its shape | — |

mod envelope;
mod read;
mod scan;
mod string_end;

#[cfg(test)]
pub(crate) mod agreement;

pub(crate) use envelope::{leading_id, result_by_shape};
pub(crate) use read::read_contents;
pub(crate) use scan::has_control_byte;
