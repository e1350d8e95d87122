//! Secrets stay out of words: a URL is shown without its userinfo and query values
//! (`https://user:pw@host/mcp?api_key=…` reads `https://***@host/mcp?api_key=***`), and a
//! header is checked before anything is sent, its value never repeated in an error.

use url::Url;

/// `url` as it may appear in messages, errors and notices: the scheme, host, port and
/// path as they are; any userinfo as `***`; each query value as `***` (names kept, so a
/// person can still tell which parameter it was); no fragment.
pub fn redact(url: &Url) -> String {
    let mut shown = format!("{}://", url.scheme());
    if !url.username().is_empty() || url.password().is_some() {
        shown.push_str("***@");
    }
    if let Some(host) = url.host_str() {
        shown.push_str(host);
    }
    if let Some(port) = url.port() {
        shown.push_str(&format!(":{port}"));
    }
    shown.push_str(url.path());
    if let Some(query) = url.query() {
        let names: Vec<String> = query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|pair| match pair.split_once('=') {
                Some((name, _)) => format!("{name}=***"),
                None => pair.to_owned(),
            })
            .collect();
        shown.push('?');
        shown.push_str(&names.join("&"));
    }
    shown
}

/// [`redact`] for a URL held as text; text that is no URL is shown as
/// [`redact_unparsed`] has it.
pub fn redact_text(url: &str) -> String {
    match Url::parse(url) {
        Ok(u) => redact(&u),
        Err(_) => redact_unparsed(url),
    }
}

/// Text meant as a URL that is none (a typo in a port, a missing scheme), shown so a
/// person can find the typo without seeing what may be a credential: anything before
/// an `@` after the scheme and anything after a `?` is `***`.
///
/// ```
/// use capable_core::internal::http::redact::redact_unparsed;
/// assert_eq!(redact_unparsed("http://u:pw@host:99999/mcp?k=v"), "http://***@host:99999/mcp?***");
/// assert_eq!(redact_unparsed("localhost:8080/mcp"), "localhost:8080/mcp");
/// ```
pub fn redact_unparsed(text: &str) -> String {
    let (scheme, rest) = match text.split_once("://") {
        Some((s, r)) => (format!("{s}://"), r),
        None => (String::new(), text),
    };
    let (rest, query) = match rest.split_once('?') {
        Some((r, _)) => (r, "?***"),
        None => (rest, ""),
    };
    let rest = match rest.rsplit_once('@') {
        Some((_, host)) => format!("***@{host}"),
        None => rest.to_owned(),
    };
    format!("{scheme}{rest}{query}")
}

/// Why a header the host configured cannot be sent. The value is never part of the
/// message: it is usually a credential.
pub fn check_header(name: &str, value: &str) -> Result<(), String> {
    let token = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if !token {
        return Err(format!("{name:?} is not a header name"));
    }
    if value.bytes().any(|b| b == b'\r' || b == b'\n') {
        return Err(format!(
            "the value of header {name} contains a line break; it was not sent"
        ));
    }
    if value.bytes().any(|b| b < 0x20 && b != b'\t' || b == 0x7f) {
        return Err(format!(
            "the value of header {name} contains a control character; it was not sent"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_and_query_values_never_show() {
        let url: Url = "https://alice:s3cret@mcp.test:8443/mcp?api_key=k3y&mode&x=1#frag"
            .parse()
            .unwrap();
        let shown = redact(&url);
        assert_eq!(
            shown,
            "https://***@mcp.test:8443/mcp?api_key=***&mode&x=***"
        );
        for secret in ["alice", "s3cret", "k3y", "frag"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        let plain: Url = "http://127.0.0.1:3000/mcp".parse().unwrap();
        assert_eq!(redact(&plain), "http://127.0.0.1:3000/mcp");
    }

    #[test]
    fn a_header_with_a_line_break_is_refused_without_repeating_its_value() {
        assert!(check_header("Authorization", "Bearer abc").is_ok());
        for bad in ["Bearer abc\r\nX-Evil: 1", "tok\nen", "a\u{7}b"] {
            let why = check_header("Authorization", bad).unwrap_err();
            assert!(!why.contains("abc") && !why.contains("tok"), "{why}");
        }
        assert!(check_header("Bad Name", "x").is_err());
    }
}
