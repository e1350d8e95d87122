//! Which requests are recorded: OpenTelemetry's standard samplers, named by
//! `OTEL_TRACES_SAMPLER` (and `OTEL_TRACES_SAMPLER_ARG`).
//!
//! | `OTEL_TRACES_SAMPLER` | a request is recorded |
//! |---|---|
//! | `parentbased_always_on` (the default) | when its caller's `traceparent` is sampled, or it has none |
//! | `parentbased_always_off` | when its caller's `traceparent` is sampled |
//! | `parentbased_traceidratio` | as its caller's `traceparent` says; without one, as `traceidratio` |
//! | `always_on` | always |
//! | `always_off` | never |
//! | `traceidratio` | for the share `OTEL_TRACES_SAMPLER_ARG` (0 to 1, 1 unless set) of trace ids |
//!
//! A request not recorded costs no span, and still hands its trace on upstream (the
//! `traceparent` says it was not sampled), so the server behind can decide alike.

use super::context::SpanContext;

/// What decides a trace without a parent.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Root {
    On,
    Off,
    /// Sampled when the trace id's last 63 bits fall under this bound.
    Ratio(u64),
}

/// The sampler the environment names.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Sampler {
    /// A caller's sampled flag decides, when there is a caller's context.
    parent_based: bool,
    root: Root,
}

impl Sampler {
    /// The sampler `OTEL_TRACES_SAMPLER` names (`parentbased_always_on` when unset); an
    /// error names a value capable does not know.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Sampler, String> {
        let named = var("OTEL_TRACES_SAMPLER");
        let ratio = || -> Result<Root, String> {
            let arg = var("OTEL_TRACES_SAMPLER_ARG");
            let ratio = match arg.as_deref().map(str::trim) {
                None | Some("") => 1.0,
                Some(text) => text
                    .parse::<f64>()
                    .ok()
                    .filter(|r| (0.0..=1.0).contains(r))
                    .ok_or_else(|| {
                        format!("OTEL_TRACES_SAMPLER_ARG={text:?} is not a ratio from 0 to 1")
                    })?,
            };
            Ok(Root::Ratio((ratio * (1u64 << 63) as f64) as u64))
        };
        let (parent_based, root) = match named.as_deref().map(str::trim) {
            None | Some("" | "parentbased_always_on") => (true, Root::On),
            Some("parentbased_always_off") => (true, Root::Off),
            Some("parentbased_traceidratio") => (true, ratio()?),
            Some("always_on") => (false, Root::On),
            Some("always_off") => (false, Root::Off),
            Some("traceidratio") => (false, ratio()?),
            Some(other) => {
                return Err(format!(
                    "OTEL_TRACES_SAMPLER={other:?} is not a sampler capable knows: give \
                     always_on, always_off, traceidratio or parentbased_ one of them"
                ))
            }
        };
        Ok(Sampler { parent_based, root })
    }

    /// Whether the trace `trace_id` (its caller's context `parent`) is recorded.
    pub fn sampled(&self, trace_id: &[u8; 16], parent: Option<&SpanContext>) -> bool {
        if let (true, Some(parent)) = (self.parent_based, parent) {
            return parent.sampled;
        }
        match self.root {
            Root::On => true,
            Root::Off => false,
            Root::Ratio(bound) => {
                let mut low = [0u8; 8];
                low.copy_from_slice(&trace_id[8..]);
                (u64::from_be_bytes(low) >> 1) < bound
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sampler(name: &str, arg: Option<&str>) -> Result<Sampler, String> {
        let (name, arg) = (name.to_owned(), arg.map(str::to_owned));
        Sampler::from_env(move |v| match v {
            "OTEL_TRACES_SAMPLER" => Some(name.clone()),
            "OTEL_TRACES_SAMPLER_ARG" => arg.clone(),
            _ => None,
        })
    }

    fn caller(sampled: bool) -> SpanContext {
        SpanContext {
            trace_id: [1; 16],
            span_id: [2; 8],
            sampled,
            state: None,
        }
    }

    #[test]
    fn a_callers_flag_decides_unless_the_sampler_is_not_parent_based() {
        let default = Sampler::from_env(|_| None).unwrap();
        let id = [5; 16];
        assert!(default.sampled(&id, None));
        assert!(default.sampled(&id, Some(&caller(true))));
        assert!(!default.sampled(&id, Some(&caller(false))));
        let off = sampler("parentbased_always_off", None).unwrap();
        assert!(!off.sampled(&id, None));
        assert!(off.sampled(&id, Some(&caller(true))));
        let on = sampler("always_on", None).unwrap();
        assert!(on.sampled(&id, Some(&caller(false))));
        let never = sampler("always_off", None).unwrap();
        assert!(!never.sampled(&id, Some(&caller(true))));
    }

    #[test]
    fn a_ratio_samples_its_share_of_trace_ids() {
        let quarter = sampler("traceidratio", Some("0.25")).unwrap();
        let sampled = (0u64..4000)
            .filter(|i| {
                let mut id = [0u8; 16];
                id[8..].copy_from_slice(&i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes());
                quarter.sampled(&id, None)
            })
            .count();
        assert!((900..1100).contains(&sampled), "{sampled} of 4000");
        let none = sampler("parentbased_traceidratio", Some("0")).unwrap();
        assert!(!none.sampled(&[0xff; 16], None));
        assert!(none.sampled(&[0xff; 16], Some(&caller(true))));
    }

    #[test]
    fn a_sampler_or_ratio_unknown_is_said() {
        assert!(sampler("jaeger_remote", None)
            .unwrap_err()
            .contains("OTEL_TRACES_SAMPLER"));
        assert!(sampler("traceidratio", Some("2"))
            .unwrap_err()
            .contains("OTEL_TRACES_SAMPLER_ARG"));
    }
}
