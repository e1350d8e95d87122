//! An upstream server with an identity of its own, for the tests of whose credentials
//! go upstream (`bridge_credentials.rs`, `bridge_user_login.rs`): a TypeScript SDK
//! server behind its own oidc-provider (`tests/peers/oidc_upstream.mjs`), whose `whoami`
//! tool says whose token arrived.

use super::super::common::oauth::{free_port, node, Peer};
use super::super::common::TempFile;

/// The server behind, with its own authorization server trusting ID-JAGs of the
/// identity provider on `idp_port`; `seen` gets every `Authorization` sent to it.
pub struct Upstream {
    pub peer: Peer,
    seen: TempFile,
}

impl Upstream {
    /// The server, its authorization server answering client credentials and token
    /// exchanges only.
    pub fn start(idp_port: u16) -> Upstream {
        Upstream::launch(idp_port, &[])
    }

    /// The same, whose client `gateway-upstream` may also log people in by the code
    /// flow, redirecting to `redirect_uri`, its access tokens living `ttl` seconds.
    pub fn with_login(idp_port: u16, redirect_uri: &str, ttl: u64) -> Upstream {
        Upstream::launch(idp_port, &[redirect_uri.to_owned(), ttl.to_string()])
    }

    fn launch(idp_port: u16, login: &[String]) -> Upstream {
        let seen = TempFile::new("upstream-seen.txt", "");
        let (as_port, mcp_port) = (free_port(), free_port());
        let mcp = format!("http://127.0.0.1:{mcp_port}/mcp");
        let mut args = vec![
            node(),
            "tests/peers/oidc_upstream.mjs".into(),
            as_port.to_string(),
            mcp_port.to_string(),
            seen.path().to_owned(),
            format!("http://127.0.0.1:{idp_port}"),
        ];
        args.extend_from_slice(login);
        let peer = Peer::start(
            args,
            vec![as_port, mcp_port],
            mcp,
            format!("http://127.0.0.1:{as_port}"),
        );
        Upstream { peer, seen }
    }

    /// The bearer tokens it was sent.
    pub fn seen(&self) -> Vec<String> {
        std::fs::read_to_string(&self.seen.0)
            .unwrap()
            .lines()
            .map(|l| l.trim_start_matches("Bearer ").to_owned())
            .collect()
    }
}
