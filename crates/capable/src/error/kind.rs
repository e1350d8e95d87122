//! What kind of failure an [`Error`] is.

use std::fmt;

use capable_core::NegotiationError;

use super::Error;

/// What kind of failure an [`Error`] is ([`Error::kind`]), decided from its type alone
/// (never from its words): one place that a command line turns into an exit code and a
/// web page into a `kind` string, so the two always agree.
///
/// ```
/// use capable::{Error, ErrorKind};
///
/// let e = Error::InvalidOptions("a roots handler without roots".into());
/// assert_eq!(e.kind(), ErrorKind::Usage);
/// assert_eq!((e.kind().as_str(), e.kind().exit_code()), ("usage", 2));
/// ```
///
/// | kind | [`as_str`](ErrorKind::as_str) | [`exit_code`](ErrorKind::exit_code) |
/// |---|---|---|
/// | [`Unexpected`](ErrorKind::Unexpected) | `unexpected` | 1 |
/// | [`Usage`](ErrorKind::Usage) | `usage` | 2 |
/// | [`Transport`](ErrorKind::Transport) | `transport` | 3 |
/// | [`Timeout`](ErrorKind::Timeout) | `timeout` | 3 |
/// | [`ServerExited`](ErrorKind::ServerExited) | `server_exited` | 3 |
/// | [`VersionRefused`](ErrorKind::VersionRefused) | `protocol_version_refused` | 4 |
/// | [`NotOffered`](ErrorKind::NotOffered) | `capability_not_offered` | 5 |
/// | [`Violation`](ErrorKind::Violation) | `contract_violation` | 6 |
/// | [`Rpc`](ErrorKind::Rpc) | `rpc_error` | 7 |
/// | [`AuthRequired`](ErrorKind::AuthRequired) | `authorization_required` | 8 |
/// | [`AuthFailed`](ErrorKind::AuthFailed) | `authorization_failed` | 8 |
/// | [`ToolError`](ErrorKind::ToolError) | `tool_error` | 9 |
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Nothing more specific applies (a list past its bounds, a failure of capable
    /// itself).
    Unexpected,
    /// The host asked for something impossible (contradictory options, a bad
    /// argument); nothing was sent.
    Usage,
    /// The connection failed: an HTTP error, a broken pipe, a server that could not be
    /// started, a listen stream the server ended.
    Transport,
    /// No answer in time (a request, the handshake, a task's deadline).
    Timeout,
    /// The server process ended.
    ServerExited,
    /// The protocol version was refused, by either side.
    VersionRefused,
    /// Refused locally: the server did not declare what the method needs (nothing
    /// was sent).
    NotOffered,
    /// The server broke its own declaration or the protocol (the evidence is kept).
    Violation,
    /// The server answered with a JSON-RPC error (a task that failed with one
    /// included).
    Rpc,
    /// Authorization is needed, and there is no usable token and no way to log in.
    AuthRequired,
    /// Authorization failed.
    AuthFailed,
    /// The tool ran and reported its own failure: a `tools/call` result with
    /// `isError: true` ("Tool nope not found", a missing argument). The call itself
    /// succeeded, so no [`Error`] has this kind; it is the kind a host gives that
    /// outcome, so that a command line and a page name it alike.
    ToolError,
}

impl ErrorKind {
    /// A stable machine-readable name (`capability_not_offered`, …), for JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Unexpected => "unexpected",
            ErrorKind::Usage => "usage",
            ErrorKind::Transport => "transport",
            ErrorKind::Timeout => "timeout",
            ErrorKind::ServerExited => "server_exited",
            ErrorKind::VersionRefused => "protocol_version_refused",
            ErrorKind::NotOffered => "capability_not_offered",
            ErrorKind::Violation => "contract_violation",
            ErrorKind::Rpc => "rpc_error",
            ErrorKind::AuthRequired => "authorization_required",
            ErrorKind::AuthFailed => "authorization_failed",
            ErrorKind::ToolError => "tool_error",
        }
    }

    /// The exit code a command line gives this kind (see the table above).
    pub fn exit_code(self) -> i32 {
        match self {
            ErrorKind::Unexpected => 1,
            ErrorKind::Usage => 2,
            ErrorKind::Transport | ErrorKind::Timeout | ErrorKind::ServerExited => 3,
            ErrorKind::VersionRefused => 4,
            ErrorKind::NotOffered => 5,
            ErrorKind::Violation => 6,
            ErrorKind::Rpc => 7,
            ErrorKind::AuthRequired | ErrorKind::AuthFailed => 8,
            ErrorKind::ToolError => 9,
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Error {
    /// What kind of failure this is (see [`ErrorKind`]).
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Refused(_) => ErrorKind::NotOffered,
            Error::Negotiation(n) => match n {
                NegotiationError::UnsupportedVersion { .. }
                | NegotiationError::NoCommonVersion { .. }
                | NegotiationError::VersionRefused { .. }
                | NegotiationError::EraUnavailable { .. } => ErrorKind::VersionRefused,
                NegotiationError::MalformedAnswer { .. } => ErrorKind::Violation,
                NegotiationError::Timeout { .. } => ErrorKind::Timeout,
                NegotiationError::InitializeRefused(_)
                | NegotiationError::MissingClientCapability { .. } => ErrorKind::Rpc,
                _ => ErrorKind::Unexpected,
            },
            Error::Rpc { .. } => ErrorKind::Rpc,
            Error::Violation(_)
            | Error::Skill(_)
            | Error::MalformedResult { .. }
            | Error::TooManyInputRounds { .. }
            | Error::InputUnanswered { .. } => ErrorKind::Violation,
            Error::Timeout { .. } | Error::TaskTimedOut { .. } => ErrorKind::Timeout,
            Error::TaskFailed { .. } | Error::TaskCancelled { .. } => ErrorKind::Rpc,
            Error::ServerExited { .. } => ErrorKind::ServerExited,
            // A token store capable will not read is the user's to mend, like a flag.
            Error::Auth(crate::auth::AuthError::StoreRefused(_)) => ErrorKind::Usage,
            Error::Auth(a) if a.is_authorization_required() => ErrorKind::AuthRequired,
            Error::Auth(_) => ErrorKind::AuthFailed,
            Error::InvalidOptions(_) => ErrorKind::Usage,
            Error::ListTooLong { .. } => ErrorKind::Unexpected,
            Error::Http { .. }
            | Error::ListenEnded { .. }
            | Error::Transport(_)
            | Error::Spawn(_)
            | Error::Closed => ErrorKind::Transport,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use capable_core::{Method, Refusal, RpcError};

    use super::*;
    use crate::ProtocolVersion;

    fn rpc(code: i64, message: &str) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    fn both(e: Error) -> (i32, &'static str) {
        (e.kind().exit_code(), e.kind().as_str())
    }

    #[test]
    fn an_http_failure_is_a_transport_failure_never_a_json_rpc_error() {
        for status in [401, 403, 500, 502] {
            let e = Error::Http {
                url: "https://mcp.test/mcp".into(),
                status,
                body: "no".into(),
            };
            assert_eq!(both(e), (3, "transport"), "HTTP {status}");
        }
        let rpc_error = Error::Rpc {
            method: Method::ListTools,
            error: rpc(-32603, "boom"),
        };
        assert_eq!(both(rpc_error), (7, "rpc_error"));
    }

    #[test]
    fn a_version_refusal_is_told_by_its_type_not_its_words() {
        let typed = Error::Negotiation(NegotiationError::VersionRefused {
            proposed: ProtocolVersion::V2025_11_25,
            server: vec!["2024-11-05".into()],
            error: Box::new(rpc(-32602, "no")),
        });
        assert_eq!(both(typed), (4, "protocol_version_refused"));
        // A refusal that only talks about versions is a plain refusal.
        let words = Error::Negotiation(NegotiationError::InitializeRefused(rpc(
            -32602,
            "unsupported protocol version",
        )));
        assert_eq!(both(words), (7, "rpc_error"));
    }

    #[test]
    fn authorization_required_has_its_own_kind() {
        let required = Error::Auth(crate::auth::AuthError::AuthorizationRequired {
            server: "https://mcp.test/mcp".into(),
            why: crate::auth::Required::NoToken,
        });
        assert_eq!(both(required), (8, "authorization_required"));
        let failed = Error::Auth(crate::auth::AuthError::Refused("no".into()));
        assert_eq!(both(failed), (8, "authorization_failed"));
        let scope = Error::Auth(crate::auth::AuthError::InsufficientScope(
            crate::auth::ScopeRefusal {
                challenged: vec![],
                held: vec!["mcp:read".into()],
                description: Some("Required scope: mcp:write".into()),
                step_ups: 0,
            },
        ));
        assert_eq!(both(scope), (8, "authorization_failed"));
        // A token store refused for what it is is the user's to mend: a usage error.
        let store = Error::Auth(crate::auth::AuthError::StoreRefused(crate::file::Refused {
            path: "credentials.json".into(),
            kind: crate::file::FileKind::Credentials,
            reason: crate::file::Reason::OpenToOthers { mode: 0o644 },
        }));
        assert_eq!(both(store), (2, "usage"));
    }

    #[test]
    fn timeouts_crashes_and_local_refusals_have_their_own_kinds() {
        let handshake = Error::Negotiation(NegotiationError::Timeout {
            method: Method::Initialize,
            after: Duration::from_secs(1),
        });
        assert_eq!(both(handshake), (3, "timeout"));
        let request = Error::Timeout {
            method: Method::ReadResource,
            after: Duration::from_secs(1),
        };
        assert_eq!(both(request), (3, "timeout"));
        let exited = Error::ServerExited {
            status: None,
            stderr: String::new(),
        };
        assert_eq!(both(exited), (3, "server_exited"));
        let refused = Error::Refused(Refusal::MarkedBroken {
            method: Method::Subscribe,
        });
        assert_eq!(both(refused), (5, "capability_not_offered"));
        assert_eq!(both(Error::InvalidOptions("x".into())), (2, "usage"));
    }

    #[test]
    fn a_tool_error_has_a_code_of_its_own() {
        let tool = ErrorKind::ToolError;
        assert_eq!((tool.exit_code(), tool.as_str()), (9, "tool_error"));
        // No other kind shares it: a script tells a tool's failure from the rest.
        let others = [
            ErrorKind::Unexpected,
            ErrorKind::Usage,
            ErrorKind::Transport,
            ErrorKind::Timeout,
            ErrorKind::ServerExited,
            ErrorKind::VersionRefused,
            ErrorKind::NotOffered,
            ErrorKind::Violation,
            ErrorKind::Rpc,
            ErrorKind::AuthRequired,
            ErrorKind::AuthFailed,
        ];
        assert!(others.iter().all(|k| k.exit_code() != 9));
    }
}
