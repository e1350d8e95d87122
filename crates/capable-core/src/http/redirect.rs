//! Redirects, followed by hand so that no secret crosses an origin.
//!
//! The shell follows at most [`MAX_REDIRECTS`] redirects (301, 302, 307, 308) of a
//! request; each hop is made by [`redirected`]. Within one origin the request goes on
//! as it was. To another origin it goes without anything that belongs to the first:
//! none of the host's own headers (`Authorization`, cookies, API keys — whatever the
//! host configured) and no `Mcp-Session-Id`.

use url::Url;

use super::Request;

/// The most redirects one request follows.
pub const MAX_REDIRECTS: usize = 5;

/// Whether an HTTP status is a redirect to follow.
pub fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 307 | 308)
}

/// The request to send after `request` was redirected to `location` (absolute or
/// relative to the request's URL); `None` when `location` is not a URL.
pub fn redirected(request: &Request, location: &str) -> Option<Request> {
    let next = request.url.join(location).ok()?;
    if !matches!(next.scheme(), "http" | "https") {
        return None;
    }
    let mut hop = request.clone();
    hop.delay = std::time::Duration::ZERO;
    if !same_origin(&next, &request.url) {
        hop.user_headers = false;
        hop.headers.retain(|(name, _)| name != "mcp-session-id");
    }
    hop.url = next;
    Some(hop)
}

/// Whether two URLs share scheme, host and port.
pub fn same_origin(a: &Url, b: &Url) -> bool {
    a.origin() == b.origin()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::HttpMethod;

    fn request(url: &str) -> Request {
        Request {
            method: HttpMethod::Post,
            url: url.parse().unwrap(),
            headers: vec![
                ("mcp-session-id".into(), "s1".into()),
                ("mcp-protocol-version".into(), "2025-11-25".into()),
            ],
            body: Some(b"{}".to_vec()),
            user_headers: true,
            delay: std::time::Duration::ZERO,
        }
    }

    #[test]
    fn a_redirect_within_the_origin_keeps_everything() {
        let hop = redirected(&request("http://a.test/mcp"), "/v2/mcp").unwrap();
        assert_eq!(hop.url.as_str(), "http://a.test/v2/mcp");
        assert!(hop.user_headers);
        assert_eq!(hop.headers.len(), 2);
        assert_eq!(hop.body.as_deref(), Some(&b"{}"[..]));
    }

    #[test]
    fn a_redirect_to_another_origin_carries_none_of_the_hosts_secrets() {
        for location in [
            "http://b.test/mcp",
            "https://a.test/mcp",
            "http://a.test:8080/mcp",
        ] {
            let hop = redirected(&request("http://a.test/mcp"), location).unwrap();
            assert!(!hop.user_headers, "{location}");
            assert!(
                hop.headers.iter().all(|(n, _)| n != "mcp-session-id"),
                "{location}"
            );
        }
        assert!(redirected(&request("http://a.test/mcp"), "file:///etc/passwd").is_none());
        assert!(is_redirect(307) && !is_redirect(304) && !is_redirect(200));
    }
}
