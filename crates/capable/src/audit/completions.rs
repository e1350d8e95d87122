//! `completions`: one `completion/complete`, for the first argument of the first
//! listed prompt that has one, else for the first variable of the first listed
//! resource template.

use capable_core::model::{CompleteArgument, CompleteParams};
use capable_core::{Capability, Method};
use serde_json::{json, Value};

use super::probe::{plural, Auditor};
use super::report::Outcome;

const CHECK: &str = "one completion request";

impl Auditor<'_> {
    /// Probes a server that declared `completions`, with what `prompts/list` and
    /// `resources/templates/list` listed.
    pub(super) async fn completions(&mut self, prompts: &[Value], templates: &[Value]) {
        if !self.session.capabilities().has(Capability::Completions) {
            return;
        }
        let from_prompt = prompts.iter().find_map(|p| {
            let arg = p["arguments"].as_array()?.first()?["name"].as_str()?;
            Some((
                json!({"type": "ref/prompt", "name": p["name"]}),
                arg.to_owned(),
            ))
        });
        let from_template = || {
            templates.iter().find_map(|t| {
                let template = t["uriTemplate"].as_str()?;
                let var = template_variable(template)?;
                Some((json!({"type": "ref/resource", "uri": template}), var))
            })
        };
        let Some((reference, argument)) = from_prompt.or_else(from_template) else {
            self.check(
                "completions",
                CHECK,
                None,
                Outcome::Skipped,
                "no prompt argument or template variable to complete",
            );
            return;
        };
        let params = CompleteParams {
            reference: &reference,
            argument: CompleteArgument {
                name: &argument,
                value: "",
            },
            context: None,
        };
        if let Ok(result) = self
            .probe(
                "completions",
                CHECK,
                Method::Complete,
                &params,
                "CompleteResult",
            )
            .await
        {
            let n = result["completion"]["values"]
                .as_array()
                .map_or(0, Vec::len);
            self.check(
                "completions",
                CHECK,
                Some("completion/complete"),
                Outcome::Ok,
                format!("{reference} argument {argument:?}: {n} value{}", plural(n)),
            );
        }
    }
}

/// The first variable of an RFC 6570 template (`docs://chapters/{number}` → `number`).
fn template_variable(template: &str) -> Option<String> {
    let start = template.find('{')?;
    let end = start + template[start..].find('}')?;
    let expr = template[start + 1..end].trim_start_matches(['+', '#', '.', '/', ';', '?', '&']);
    let name = expr.split([',', ':', '*']).next()?.trim();
    (!name.is_empty()).then(|| name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_variables() {
        assert_eq!(
            template_variable("docs://chapters/{number}").as_deref(),
            Some("number")
        );
        assert_eq!(template_variable("x://{+path}/y").as_deref(), Some("path"));
        assert_eq!(template_variable("x://{a,b}").as_deref(), Some("a"));
        assert_eq!(template_variable("x://plain"), None);
    }
}
