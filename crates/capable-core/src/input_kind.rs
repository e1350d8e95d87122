//! What a server asks of the host — a legacy server's request (`elicitation/create`,
//! `sampling/createMessage`, `roots/list`) or a question of a modern `input_required`
//! result, which names the same methods — read once into an [`InputKind`], and the
//! rule for whether the host may be asked at all, from what the client declared.
//!
//! | asked | the client must have declared | else the answer is |
//! |---|---|---|
//! | `elicitation/create`, form mode (no `mode`, or `"form"`) | form-mode elicitation | `-32602` if it declared URL mode only, else `-32601` |
//! | `elicitation/create`, `mode: "url"` | URL-mode elicitation | `-32602` if it declared form mode only (the request names a mode the client did not declare), else `-32601` |
//! | `sampling/createMessage` | sampling | `-32601` |
//! | `roots/list` | roots | `-32601` |
//! | anything else | — | `-32601` |
//!
//! ```
//! use capable_core::internal::input_kind::InputKind;
//! use capable_core::ClientCapabilities;
//! use serde_json::json;
//!
//! let asked = InputKind::of("elicitation/create", &json!({"mode": "url", "url": "https://x"}));
//! assert_eq!(asked, InputKind::Elicitation { url: true });
//! let form_only = ClientCapabilities { elicitation_form: true, ..Default::default() };
//! assert_eq!(asked.check("elicitation/create", &form_only).unwrap_err().code, -32602);
//! ```

use serde_json::Value;

use crate::capabilities::ClientCapabilities;
use crate::jsonrpc::{codes, RpcError};

/// What a server asks of the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum InputKind {
    /// `elicitation/create`: a form to fill in, or (`url`) a page to visit.
    Elicitation {
        /// URL mode (`"mode": "url"`).
        url: bool,
    },
    /// `sampling/createMessage`.
    Sampling,
    /// `roots/list`.
    Roots,
    /// A method the client never handles.
    Other,
}

impl InputKind {
    /// The kind of a request for `method` with `params`.
    pub fn of(method: &str, params: &Value) -> InputKind {
        match method {
            "elicitation/create" => InputKind::Elicitation {
                url: params.get("mode").and_then(Value::as_str) == Some("url"),
            },
            "sampling/createMessage" => InputKind::Sampling,
            "roots/list" => InputKind::Roots,
            _ => InputKind::Other,
        }
    }

    /// Whether a client that declared `declared` may be asked this; else the error to
    /// answer `method` with.
    pub fn check(self, method: &str, declared: &ClientCapabilities) -> Result<(), RpcError> {
        let handled = match self {
            InputKind::Elicitation { url: true } => declared.elicitation_url,
            InputKind::Elicitation { url: false } => declared.elicitation_form,
            InputKind::Sampling => declared.sampling,
            InputKind::Roots => declared.roots,
            InputKind::Other => false,
        };
        if handled {
            return Ok(());
        }
        let elicits = declared.elicitation_form || declared.elicitation_url;
        Err(match self {
            // A client that elicits, asked in a mode it did not declare: the request is
            // at fault, not the method.
            InputKind::Elicitation { .. } if elicits => RpcError {
                code: codes::INVALID_PARAMS,
                message: format!(
                    "the client did not declare {}-mode elicitation",
                    if declared.elicitation_url {
                        "form"
                    } else {
                        "URL"
                    }
                ),
                data: None,
            },
            _ => RpcError {
                code: codes::METHOD_NOT_FOUND,
                message: format!("the client has no handler for {method}"),
                data: None,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn declared(f: impl FnOnce(&mut ClientCapabilities)) -> ClientCapabilities {
        let mut caps = ClientCapabilities::default();
        f(&mut caps);
        caps
    }

    #[test]
    fn each_method_is_read_once_into_its_kind() {
        let none = Value::Null;
        assert_eq!(
            InputKind::of("elicitation/create", &json!({"message": "?"})),
            InputKind::Elicitation { url: false }
        );
        assert_eq!(
            InputKind::of("elicitation/create", &json!({"mode": "form"})),
            InputKind::Elicitation { url: false }
        );
        assert_eq!(
            InputKind::of("elicitation/create", &json!({"mode": "url"})),
            InputKind::Elicitation { url: true }
        );
        assert_eq!(
            InputKind::of("sampling/createMessage", &none),
            InputKind::Sampling
        );
        assert_eq!(InputKind::of("roots/list", &none), InputKind::Roots);
        assert_eq!(InputKind::of("tools/call", &none), InputKind::Other);
        assert_eq!(InputKind::of("", &none), InputKind::Other);
    }

    #[test]
    fn only_what_the_client_declared_may_be_asked() {
        let nothing = ClientCapabilities::default();
        for kind in [
            InputKind::Elicitation { url: false },
            InputKind::Sampling,
            InputKind::Roots,
            InputKind::Other,
        ] {
            let e = kind.check("m", &nothing).unwrap_err();
            assert_eq!(e.code, codes::METHOD_NOT_FOUND, "{kind:?}");
            assert!(e.message.contains("no handler for m"), "{e:?}");
        }
        let all = declared(|c| {
            c.elicitation_form = true;
            c.elicitation_url = true;
            c.sampling = true;
            c.roots = true;
        });
        for kind in [
            InputKind::Elicitation { url: false },
            InputKind::Elicitation { url: true },
            InputKind::Sampling,
            InputKind::Roots,
        ] {
            assert_eq!(kind.check("m", &all), Ok(()), "{kind:?}");
        }
        assert!(InputKind::Other.check("m", &all).is_err());
    }

    #[test]
    fn a_url_mode_request_to_a_form_only_client_is_invalid_params() {
        let form = declared(|c| c.elicitation_form = true);
        let url = InputKind::Elicitation { url: true };
        assert_eq!(
            url.check("elicitation/create", &form).unwrap_err().code,
            codes::INVALID_PARAMS
        );
        assert_eq!(
            InputKind::Elicitation { url: false }.check("elicitation/create", &form),
            Ok(())
        );
    }
}
